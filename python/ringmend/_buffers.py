"""What ringmend needs to know of an array: its address, element count and type.

NumPy arrays and torch tensors on the CPU, C-contiguous, of one of
ringmend's types. Neither library is imported here unless the caller already
has it: a tensor is recognised by its class, without importing torch.
"""

import sys

from ringmend._core import DataType

_NUMPY_TYPES = {
    "float32": DataType.FLOAT32,
    "float64": DataType.FLOAT64,
    "int32": DataType.INT32,
    "int64": DataType.INT64,
    "float16": DataType.FLOAT16,
}

_TORCH_TYPES = {
    "torch.float32": DataType.FLOAT32,
    "torch.float64": DataType.FLOAT64,
    "torch.int32": DataType.INT32,
    "torch.int64": DataType.INT64,
    "torch.float16": DataType.FLOAT16,
    "torch.bfloat16": DataType.BFLOAT16,
}

ACCEPTED = ("a NumPy array or a torch tensor on the CPU, C-contiguous, of float32, "
            "float64, int32, int64, float16 or bfloat16 (torch only)")


def _is_tensor(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def describe(obj, writable):
    """(address, count, DataType, bytes, problem): problem is "" when usable."""
    if _is_tensor(obj):
        if obj.device.type != "cpu":
            return 0, 0, DataType.FLOAT32, 0, f"a tensor on {obj.device} (ringmend reduces host memory)"
        dtype = _TORCH_TYPES.get(str(obj.dtype))
        if dtype is None:
            return 0, 0, DataType.FLOAT32, 0, f"a tensor of {obj.dtype}; ringmend takes {ACCEPTED}"
        if not obj.is_contiguous():
            return 0, 0, dtype, 0, "a tensor that is not contiguous (call .contiguous() first)"
        return obj.data_ptr(), obj.numel(), dtype, obj.numel() * obj.element_size(), ""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.ndarray):
        dtype = _NUMPY_TYPES.get(obj.dtype.name) if obj.dtype.isnative else None
        if dtype is None:
            return 0, 0, DataType.FLOAT32, 0, f"an array of {obj.dtype}; ringmend takes {ACCEPTED}"
        if not obj.flags["C_CONTIGUOUS"]:
            return 0, 0, dtype, 0, "an array that is not C-contiguous (numpy.ascontiguousarray)"
        if writable and not obj.flags["WRITEABLE"]:
            return 0, 0, dtype, 0, "a read-only array where the result is written"
        return obj.ctypes.data, obj.size, dtype, obj.nbytes, ""
    return 0, 0, DataType.FLOAT32, 0, f"a {type(obj).__name__}; ringmend takes {ACCEPTED}"
