#include "topo/nearest_device.hpp"

#include <cstring>
#include <tuple>

namespace ringmend::topo {
namespace {

// Lower is preferred among devices equally near. GPUs: the compute name
// (CUDA, OpenCL, ... coprocessor devices such as "cuda0") before the
// management/display name of the same card ("nvml0", "card0"). NICs: the
// RDMA device ("mlx5_0") before the kernel network interface ("ib0", "eth0"),
// which on an InfiniBand/RoCE card are two names for one port.
int kind_rank(hwloc_obj_osdev_type_t type, DeviceKind kind) {
  if (kind == DeviceKind::Gpu) {
    if (type == HWLOC_OBJ_OSDEV_COPROC) return 0;
    if (type == HWLOC_OBJ_OSDEV_GPU) return 1;
  } else {
    if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) return 0;
    if (type == HWLOC_OBJ_OSDEV_NETWORK) return 1;
  }
  return -1;
}

int placement_of(hwloc_const_cpuset_t binding, hwloc_const_cpuset_t attached_to) {
  if (hwloc_bitmap_isincluded(binding, attached_to)) return 0;
  return hwloc_bitmap_intersects(binding, attached_to) ? 1 : 2;
}

}  // namespace

bool is_device(hwloc_obj_t obj, DeviceKind kind) noexcept {
  if (!obj || obj->type != HWLOC_OBJ_OS_DEVICE || kind_rank(obj->attr->osdev.type, kind) < 0) return false;
  return kind == DeviceKind::Gpu || !obj->name || std::strcmp(obj->name, "lo") != 0;
}

// The rule. A device is attached where its first non-I/O ancestor is (the
// package, NUMA group or machine its PCI host bridge hangs off). Candidates
// are compared on, in order:
//   1. placement: the ancestor's cpuset includes the binding, then merely
//      intersects it, then is disjoint from it (a device on another package
//      is still the nearest when it is the only one);
//   2. for disjoint ones, the deeper the common ancestor of the device and
//      the binding, the nearer (same board/group before the far side);
//   3. the smallest ancestor cpuset: the most local attachment wins over a
//      device shared by the whole machine;
//   4. kind_rank() above, so that of two names for one card (same PCI
//      parent) the useful one is chosen;
//   5. hwloc's logical index, so that every rank decides alike.
hwloc_obj_t nearest_device(hwloc_topology_t topo, hwloc_const_cpuset_t binding, DeviceKind kind) noexcept {
  if (!topo || !binding || hwloc_bitmap_iszero(binding)) return nullptr;
  const hwloc_obj_t cover = hwloc_get_obj_covering_cpuset(topo, binding);
  using Key = std::tuple<int, int, int, int, unsigned>;
  hwloc_obj_t best = nullptr;
  Key best_key{};
  for (hwloc_obj_t dev = hwloc_get_next_osdev(topo, nullptr); dev; dev = hwloc_get_next_osdev(topo, dev)) {
    if (!is_device(dev, kind)) continue;
    const hwloc_obj_t at = hwloc_get_non_io_ancestor_obj(topo, dev);
    if (!at || !at->cpuset) continue;
    const int placement = placement_of(binding, at->cpuset);
    const hwloc_obj_t common = cover ? hwloc_get_common_ancestor_obj(topo, at, cover) : nullptr;
    const int common_depth = placement == 2 && common ? common->depth : 0;
    const Key key{placement, -common_depth, hwloc_bitmap_weight(at->cpuset),
                  kind_rank(dev->attr->osdev.type, kind), dev->logical_index};
    if (!best || key < best_key) {
      best = dev;
      best_key = key;
    }
  }
  return best;
}

}  // namespace ringmend::topo
