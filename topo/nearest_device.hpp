// Choosing the GPU and the NIC nearest to a CPU binding among hwloc's OS
// devices.
#pragma once

#include <hwloc.h>

namespace ringmend::topo {

enum class DeviceKind { Gpu, Nic };

// Whether an hwloc object is an OS device of `kind`: GPU and coprocessor
// devices are GPUs; network and OpenFabrics devices, except the loopback
// interface, are NICs.
bool is_device(hwloc_obj_t obj, DeviceKind kind) noexcept;

// The OS device of `kind` nearest to `binding`, or null when the topology
// has none (or the binding is empty). The rule is documented in the .cpp.
hwloc_obj_t nearest_device(hwloc_topology_t topo, hwloc_const_cpuset_t binding, DeviceKind kind) noexcept;

}  // namespace ringmend::topo
