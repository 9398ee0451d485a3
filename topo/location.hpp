// Where a rank runs: the package, NUMA node, L3 cache and core holding its
// CPU binding, and its nearest GPU and NIC, as hwloc sees them.
#pragma once

#include <hwloc.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace ringmend::topo {

// Fixed size and trivially copyable: ranks exchange it as raw bytes
// (MPI_Allgather of MPI_BYTE), so it holds no pointers and no std::string.
struct Location {
  // hwloc logical indexes of the objects containing the binding; -1 when
  // unknown, unbound, or when the binding spans several such objects.
  std::int32_t package = -1, numa = -1, l3 = -1, core = -1;
  // OS device names ("cuda0", "mlx5_0"), NUL-padded; empty when none. A name
  // received from another rank is read up to its size, never past it.
  // nic is UCX's device list for the rank: one NIC, or several it stripes
  // over ("eth1,eth2"), cut to the field.
  char gpu[24] = {};
  char nic[56] = {};

  bool operator==(const Location&) const = default;
};
static_assert(std::is_trivially_copyable_v<Location> && std::is_standard_layout_v<Location>);
static_assert(sizeof(Location) == 4 * sizeof(std::int32_t) + 80, "Location travels as raw bytes: no padding");

// The location of a binding in a loaded topology (with I/O objects, for the
// GPU and NIC). A null topology or an empty binding gives an all-unknown
// Location. Never throws.
Location locate(hwloc_topology_t topo, hwloc_const_cpuset_t binding) noexcept;

// The location of the calling process: loads this machine's topology with
// its important I/O devices and reads the process binding. An unbound process
// (binding = the whole machine) is located by the CPU it last ran on, so that
// package/NUMA/L3/core still say where it is. Loading a topology with I/O
// discovery takes milliseconds: call it once per process, not per epoch.
// Never throws; on any hwloc error returns an all-unknown Location.
Location locate_self() noexcept;

// This process as hwloc sees it (one topology load for both answers).
struct Self {
  Location where;
  // The UCX network device of the nearest NIC ("mlx5_0:1", "eth1") when the
  // machine has more than one NIC; empty when there is nothing to choose
  // (UCX's own choice stands). Nearest to the process's GPU when it names
  // one, else to its CPU binding.
  std::string ucx_net_device;
};
// `gpu_pci_bus_id`: the PCI bus id of the GPU this process works on
// ("0000:65:00.0"), or empty.
Self inspect_self(const std::string& gpu_pci_bus_id = {}) noexcept;

// The UCX device name of the NIC nearest to `binding` when `topo` has more
// than one NIC, else empty. Never throws.
std::string ucx_net_device(hwloc_topology_t topo, hwloc_const_cpuset_t binding) noexcept;
// The same for the NIC nearest to the PCI device `pci_bus_id` (a GPU): the
// one attached nearest to where the device is attached (its first non-I/O
// ancestor). Empty also when the bus id is unknown to `topo`.
std::string ucx_net_device_near_pci(hwloc_topology_t topo, const std::string& pci_bus_id) noexcept;

// The NICs named for the rails (RINGMEND_RAIL_DEVICES): the process of
// The UCX device list (UCX_NET_DEVICES) of the process whose launcher local
// rank is `local_rank` among `local_size` on its node, given the node's NICs
// in `devices` (RINGMEND_RAIL_DEVICES). With at least as many processes as
// NICs, local rank L uses devices[L mod n] alone; the plan puts members of
// the same NIC at the same position on every node, so rail i leaves every
// node through one NIC. With fewer processes than NICs (one rank per node,
// two NICs), local rank L takes every NIC j with j mod local_size == L,
// comma-separated, and UCX stripes its messages over them. Empty when
// `devices` is; a negative local rank counts as 0, a local size below 1 as
// unknown (one NIC each).
std::string rail_device(std::span<const std::string> devices, int local_rank, int local_size = 0);
// Names the NIC this process uses in its Location, which every rank sees in
// the plan (cut to the field's size).
void set_nic(Location& where, std::string_view device) noexcept;
// The NIC's name (or NIC list), empty when none is known.
std::string_view nic_name(const Location& where) noexcept;

// One line: "pkg 0 numa 1 l3 1 core 5 gpu cuda0 nic mlx5_0"; unknown indexes
// print as "?", missing devices are left out.
std::string describe(const Location& where);

}  // namespace ringmend::topo
