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

// Whether discovery on this machine asks the GPU runtimes (CUDA, NVML,
// OpenCL, ROCm SMI, Level Zero, GL) about their devices. hwloc loads its
// plugins for them anyway; their discovery is what starts those runtimes,
// and through them the GPU driver, which opens the GPUs' device files and
// stays loaded: a Runtime does without (a GPU
// is still a PCI device, which is what placement needs; only the names
// "cuda0" and the like are missing), ringmend-topo asks them, to name every
// device.
enum class GpuRuntimes { Skip, Ask };

// `what` is the XML file name or the synthetic description (ignored for this
// machine). `io` says which I/O objects (PCI devices, GPUs, NICs) to keep.
// Returns null on failure, with the reason in `error`.
Topology load_topology(TopologySource source, const std::string& what, hwloc_type_filter_e io,
                       std::string& error, GpuRuntimes gpu_runtimes = GpuRuntimes::Skip);

}  // namespace ringmend::topo
