#include "topo/location.hpp"

#include <algorithm>
#include <string_view>

#include "topo/hwloc_handle.hpp"
#include "topo/nearest_device.hpp"

namespace ringmend::topo {
namespace {

// Logical index of the object of `type` whose cpuset includes the binding.
// Packages, L3s and cores nest, so at most one qualifies; NUMA nodes may
// overlap (DRAM and HBM/CXL memory near the same cores), and then the most
// local one (smallest cpuset, then lowest index) is taken.
std::int32_t containing(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_cpuset_t binding) {
  hwloc_obj_t found = nullptr;
  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, type, nullptr); o;
       o = hwloc_get_next_obj_by_type(topo, type, o)) {
    if (!o->cpuset || !hwloc_bitmap_isincluded(binding, o->cpuset)) continue;
    if (!found || hwloc_bitmap_weight(o->cpuset) < hwloc_bitmap_weight(found->cpuset)) found = o;
  }
  return found ? static_cast<std::int32_t>(found->logical_index) : -1;
}

template <std::size_t N>
void copy_name(char (&to)[N], hwloc_obj_t dev) {
  if (!dev || !dev->name) return;
  const std::string_view name(dev->name);
  const std::size_t n = std::min(name.size(), N - 1);  // longer names are cut; the last byte stays NUL
  std::copy_n(name.begin(), n, to);
}

template <std::size_t N>
std::string_view name_of(const char (&name)[N]) {
  return {name, static_cast<std::size_t>(std::find(name, name + N, '\0') - name)};
}

std::string index_text(std::int32_t i) { return i < 0 ? "?" : std::to_string(i); }

}  // namespace

Location locate(hwloc_topology_t topo, hwloc_const_cpuset_t binding) noexcept {
  Location where;
  // An empty set is included in every object: it would "locate" anywhere.
  if (!topo || !binding || hwloc_bitmap_iszero(binding)) return where;
  where.package = containing(topo, HWLOC_OBJ_PACKAGE, binding);
  where.numa = containing(topo, HWLOC_OBJ_NUMANODE, binding);
  where.l3 = containing(topo, HWLOC_OBJ_L3CACHE, binding);
  where.core = containing(topo, HWLOC_OBJ_CORE, binding);
  copy_name(where.gpu, nearest_device(topo, binding, DeviceKind::Gpu));
  copy_name(where.nic, nearest_device(topo, binding, DeviceKind::Nic));
  return where;
}

Self inspect_self(const std::string& gpu_pci_bus_id) noexcept {
  try {
    std::string error;
    const Topology topo =
        load_topology(TopologySource::ThisMachine, {}, HWLOC_TYPE_FILTER_KEEP_IMPORTANT, error);
    const Bitmap binding(hwloc_bitmap_alloc());
    if (!topo || !binding) return {};
    const bool bound = hwloc_get_cpubind(topo.get(), binding.get(), 0) == 0 &&
                       !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo.get()), binding.get());
    // Unbound (or binding unreadable): the CPU last run on is where the
    // process is now, and where the scheduler tends to keep it.
    if (!bound && hwloc_get_last_cpu_location(topo.get(), binding.get(), 0) != 0) return {};
    Self self;
    self.where = locate(topo.get(), binding.get());
    // A GPU's data leaves through the NIC nearest the GPU (rails follow
    // GPU-NIC locality); without one, nearest the CPUs.
    if (!gpu_pci_bus_id.empty()) self.ucx_net_device = ucx_net_device_near_pci(topo.get(), gpu_pci_bus_id);
    if (self.ucx_net_device.empty()) self.ucx_net_device = ucx_net_device(topo.get(), binding.get());
    return self;
  } catch (...) {
    return {};
  }
}

Location locate_self() noexcept { return inspect_self().where; }

std::string ucx_net_device(hwloc_topology_t topo, hwloc_const_cpuset_t binding) noexcept {
  try {
    int nics = 0;
    for (hwloc_obj_t o = nullptr; topo && (o = hwloc_get_next_osdev(topo, o)) != nullptr;)
      if (is_device(o, DeviceKind::Nic)) ++nics;
    if (nics < 2) return {};
    hwloc_obj_t nic = nearest_device(topo, binding, DeviceKind::Nic);
    if (!nic || !nic->name) return {};
    // UCX names RDMA devices by port; ports are numbered from 1.
    std::string name = nic->name;
    if (nic->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) name += ":1";
    return name;
  } catch (...) {
    return {};
  }
}

std::string ucx_net_device_near_pci(hwloc_topology_t topo, const std::string& pci_bus_id) noexcept {
  if (!topo || pci_bus_id.empty()) return {};
  hwloc_obj_t device = hwloc_get_pcidev_by_busidstring(topo, pci_bus_id.c_str());
  if (!device) return {};
  hwloc_obj_t attached = hwloc_get_non_io_ancestor_obj(topo, device);
  return attached ? ucx_net_device(topo, attached->cpuset) : std::string();
}

std::string rail_device(std::span<const std::string> devices, int local_rank, int local_size) {
  if (devices.empty()) return {};
  const auto n = devices.size();
  const auto local = static_cast<std::size_t>(std::max(local_rank, 0));
  if (local_size < 1 || static_cast<std::size_t>(local_size) >= n) return devices[local % n];
  const auto size = static_cast<std::size_t>(local_size);
  std::string list;
  for (std::size_t j = local % size; j < n; j += size)
    list.append(list.empty() ? "" : ",").append(devices[j]);
  return list;
}

void set_nic(Location& where, std::string_view device) noexcept {
  std::fill(std::begin(where.nic), std::end(where.nic), '\0');
  std::copy_n(device.begin(), std::min(device.size(), sizeof(where.nic) - 1), where.nic);
}

std::string_view nic_name(const Location& where) noexcept { return name_of(where.nic); }

std::string describe(const Location& where) {
  std::string s = "pkg " + index_text(where.package) + " numa " + index_text(where.numa) + " l3 " +
                  index_text(where.l3) + " core " + index_text(where.core);
  if (const auto gpu = name_of(where.gpu); !gpu.empty()) s.append(" gpu ").append(gpu);
  if (const auto nic = name_of(where.nic); !nic.empty()) s.append(" nic ").append(nic);
  return s;
}

}  // namespace ringmend::topo
