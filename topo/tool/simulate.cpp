#include "topo/tool/simulate.hpp"

#include <stdexcept>
#include <string>

namespace ringmend::topo {

Simulation simulate(hwloc_topology_t topo, int ranks, int nodes, std::span<const int> bind) {
  if (ranks <= 0)
    throw std::invalid_argument("the number of ranks must be positive, not " + std::to_string(ranks));
  if (nodes < 1 || nodes > ranks)
    throw std::invalid_argument("the number of nodes must be between 1 and the number of ranks (" +
                                std::to_string(ranks) + "), not " + std::to_string(nodes));
  if (!bind.empty() && bind.size() != static_cast<std::size_t>(ranks))
    throw std::invalid_argument("the bind list has " + std::to_string(bind.size()) + " core(s) for " +
                                std::to_string(ranks) + " rank(s)");
  const hwloc_obj_type_t unit =
      hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  const int cores = hwloc_get_nbobjs_by_type(topo, unit);
  if (cores <= 0) throw std::invalid_argument("the topology has no cores");

  Simulation sim;
  const auto n = static_cast<std::size_t>(ranks);
  sim.node_key.resize(n);
  sim.core.resize(n);
  sim.where.resize(n);
  const int base = ranks / nodes, extra = ranks % nodes;
  int r = 0;
  for (int node = 0; node < nodes; ++node) {
    const int first = r, size = base + (node < extra ? 1 : 0);
    for (int local = 0; local < size; ++local, ++r) {
      const auto i = static_cast<std::size_t>(r);
      const int core = bind.empty() ? local % cores : bind[i];
      if (core < 0 || core >= cores)
        throw std::invalid_argument("core " + std::to_string(core) + " does not exist (the topology has " +
                                    std::to_string(cores) + " core(s), 0 to " + std::to_string(cores - 1) +
                                    ")");
      const hwloc_obj_t obj = hwloc_get_obj_by_type(topo, unit, static_cast<unsigned>(core));
      sim.node_key[i] = first;
      sim.core[i] = core;
      sim.where[i] = locate(topo, obj->cpuset);
    }
  }
  return sim;
}

}  // namespace ringmend::topo
