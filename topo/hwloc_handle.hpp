// Owning handles for hwloc topologies and bitmaps, and loading a topology
// from this machine, an hwloc XML file or a synthetic description.
#pragma once

#include <hwloc.h>

#include <memory>
#include <string>

namespace ringmend::topo {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const noexcept { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_t b) const noexcept { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

enum class TopologySource { ThisMachine, Xml, Synthetic };

// `what` is the XML file name or the synthetic description (ignored for this
// machine). `io` says which I/O objects (PCI devices, GPUs, NICs) to keep.
// Returns null on failure, with the reason in `error`.
Topology load_topology(TopologySource source, const std::string& what, hwloc_type_filter_e io,
                       std::string& error);

}  // namespace ringmend::topo
