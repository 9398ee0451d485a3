#include "topo/hwloc_handle.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ringmend::topo {

Topology load_topology(TopologySource source, const std::string& what, hwloc_type_filter_e io,
                       std::string& error, GpuRuntimes gpu_runtimes) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    error = std::string("hwloc_topology_init failed: ") + std::strerror(errno);
    return nullptr;
  }
  Topology topo(raw);
  switch (source) {
    case TopologySource::ThisMachine:
      if (gpu_runtimes == GpuRuntimes::Skip)
        for (const char* component : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"})
          (void)hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
      break;
    case TopologySource::Xml:
      // hwloc only says "invalid argument" for a file it cannot open; say
      // which file and why before handing it over.
      if (what.empty() || !std::ifstream(what).good()) {
        error = "cannot read the XML file '" + what + "'";
        return nullptr;
      }
      if (hwloc_topology_set_xml(raw, what.c_str()) != 0) {
        error = "'" + what + "' is not an hwloc XML topology";
        return nullptr;
      }
      break;
    case TopologySource::Synthetic:
      if (hwloc_topology_set_synthetic(raw, what.c_str()) != 0) {
        error = "'" + what + "' is not a valid synthetic topology (e.g. \"pack:2 numa:2 l3:2 core:4 pu:1\")";
        return nullptr;
      }
      break;
  }
  if (hwloc_topology_set_io_types_filter(raw, io) != 0) {
    error = std::string("hwloc_topology_set_io_types_filter failed: ") + std::strerror(errno);
    return nullptr;
  }
  if (hwloc_topology_load(raw) != 0) {
    error = source == TopologySource::Xml
                ? "'" + what + "' is not a valid hwloc XML topology"
                : std::string("hwloc_topology_load failed: ") + std::strerror(errno);
    return nullptr;
  }
  return topo;
}

}  // namespace ringmend::topo
