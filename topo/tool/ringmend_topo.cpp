// ringmend-topo: prints where this process runs (its Location and the
// machine's summary), or builds the Plan of ranks simulated on a synthetic or
// XML topology and prints it. See usage below.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "topo/hwloc_handle.hpp"
#include "topo/location.hpp"
#include "topo/nearest_device.hpp"
#include "topo/plan.hpp"
#include "topo/tool/simulate.hpp"

namespace {

using namespace ringmend::topo;

constexpr const char* kUsage =
    R"(usage: ringmend-topo [--synthetic DESC | --xml FILE] [--ranks N] [--nodes K] [--bind C0,C1,...]

Without --ranks: prints the machine's summary (packages, NUMA nodes, L3s,
cores, GPUs and NICs); for this machine also the Location of this process.
With --ranks: simulates N ranks, each bound to one core, builds their
communication plan (nodes in local order, leaders, rails, ring) and prints it.

  --synthetic DESC   an hwloc synthetic machine, e.g. "pack:2 numa:2 l3:2 core:4 pu:1"
  --xml FILE         an hwloc XML topology (e.g. written by `lstopo FILE.xml`)
                     (without either: this machine)
  --ranks N          simulate N ranks (1 to 1048576)
  --nodes K          on K copies of the machine, ranks filling them in blocks
                     (default 1)
  --bind C0,C1,...   bind rank r to core C_r (hwloc logical index) of its node;
                     one core per rank, --ranks may then be left out
                     (default: local rank i of each node on core i, round-robin)
  --help             print this text

Exit status: 0 on success; 2 on bad arguments or a topology that cannot be
read; 1 when this machine's topology cannot be loaded.
)";

constexpr int kMaxRanks = 1 << 20;

struct Options {
  TopologySource source = TopologySource::ThisMachine;
  std::string what;  // XML file or synthetic description
  std::optional<int> ranks, nodes;
  std::vector<int> bind;
  bool help = false;
};

int parse_int(std::string_view option, std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(std::string(option) + " expects an integer, not '" + std::string(text) + "'");
  return value;
}

std::vector<int> parse_list(std::string_view option, std::string_view text) {
  std::vector<int> values;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    values.push_back(parse_int(option, text.substr(start, comma - start)));
    if (comma == std::string_view::npos) return values;
    start = comma + 1;
  }
}

Options parse(int argc, char** argv) {
  Options o;
  bool source_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    bool has_value = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    const auto next = [&]() -> std::string_view {
      if (has_value) return value;
      if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--synthetic" || arg == "--xml") {
      if (source_given) throw std::invalid_argument("give at most one of --synthetic and --xml");
      source_given = true;
      o.source = arg == "--xml" ? TopologySource::Xml : TopologySource::Synthetic;
      o.what = next();
      if (o.what.empty()) throw std::invalid_argument(std::string(arg) + " needs a non-empty value");
    } else if (arg == "--ranks") {
      o.ranks = parse_int(arg, next());
    } else if (arg == "--nodes") {
      o.nodes = parse_int(arg, next());
    } else if (arg == "--bind") {
      o.bind = parse_list(arg, next());
    } else {
      throw std::invalid_argument("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  if (!o.ranks && !o.bind.empty()) o.ranks = static_cast<int>(o.bind.size());
  if (o.nodes && !o.ranks) throw std::invalid_argument("--nodes needs --ranks");
  if (o.ranks && *o.ranks <= 0)
    throw std::invalid_argument("--ranks must be a positive integer, not " + std::to_string(*o.ranks));
  // Each rank costs a topology lookup and a line of output: past this, the
  // request is a typo rather than a machine.
  if (o.ranks && *o.ranks > kMaxRanks)
    throw std::invalid_argument("--ranks is at most " + std::to_string(kMaxRanks));
  return o;
}

std::string where_attached(hwloc_topology_t topo, hwloc_obj_t dev) {
  const hwloc_obj_t at = hwloc_get_non_io_ancestor_obj(topo, dev);
  if (!at) return "?";
  return std::string(hwloc_obj_type_string(at->type)) + " " + std::to_string(at->logical_index);
}

std::string cpu_list(hwloc_const_bitmap_t set) {
  const int n = hwloc_bitmap_list_snprintf(nullptr, 0, set);
  if (n < 0) return "?";
  std::string s(static_cast<std::size_t>(n) + 1, '\0');
  hwloc_bitmap_list_snprintf(s.data(), s.size(), set);
  s.resize(static_cast<std::size_t>(n));
  return s;
}

void print_summary(hwloc_topology_t topo) {
  const auto count = [&](hwloc_obj_type_t t) {
    return std::to_string(std::max(0, hwloc_get_nbobjs_by_type(topo, t)));
  };
  std::printf("machine: %s package(s), %s NUMA node(s), %s L3(s), %s core(s), %s PU(s)\n",
              count(HWLOC_OBJ_PACKAGE).c_str(), count(HWLOC_OBJ_NUMANODE).c_str(),
              count(HWLOC_OBJ_L3CACHE).c_str(), count(HWLOC_OBJ_CORE).c_str(), count(HWLOC_OBJ_PU).c_str());
  std::string gpus, nics;
  for (hwloc_obj_t dev = hwloc_get_next_osdev(topo, nullptr); dev; dev = hwloc_get_next_osdev(topo, dev)) {
    std::string* list = is_device(dev, DeviceKind::Gpu)   ? &gpus
                        : is_device(dev, DeviceKind::Nic) ? &nics
                                                          : nullptr;
    if (!list || !dev->name) continue;
    *list += (list->empty() ? "" : ", ") + std::string(dev->name) + " (" + where_attached(topo, dev) + ")";
  }
  std::printf("GPUs: %s\nNICs: %s\n", gpus.empty() ? "none" : gpus.c_str(),
              nics.empty() ? "none" : nics.c_str());
}

void print_self(hwloc_topology_t topo) {
  std::printf("this process: %s\n", describe(locate_self()).c_str());
  const Bitmap binding(hwloc_bitmap_alloc());
  if (!binding || hwloc_get_cpubind(topo, binding.get(), 0) != 0) {
    std::printf("binding: unknown\n");
    return;
  }
  const bool whole = hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), binding.get());
  std::printf("binding: PU %s%s\n", cpu_list(binding.get()).c_str(),
              whole ? " (unbound: located by the CPU it last ran on)" : "");
}

int run(const Options& o) {
  std::string error;
  const Topology topo =
      load_topology(o.source, o.what, HWLOC_TYPE_FILTER_KEEP_IMPORTANT, error, GpuRuntimes::Ask);
  if (!topo) {
    std::fprintf(stderr, "ringmend-topo: %s\n", error.c_str());
    return o.source == TopologySource::ThisMachine ? 1 : 2;
  }
  if (!o.ranks) {
    if (o.source == TopologySource::ThisMachine) print_self(topo.get());
    print_summary(topo.get());
    return 0;
  }
  const int nodes = o.nodes.value_or(1);
  const Simulation sim = simulate(topo.get(), *o.ranks, nodes, o.bind);
  std::vector<int> world(sim.node_key.size());
  std::iota(world.begin(), world.end(), 0);
  const Plan plan = make_plan(sim.node_key, sim.where, -1);
  std::printf("%d rank(s) simulated on %d node(s) of this kind:\n", *o.ranks, nodes);
  print_summary(topo.get());
  std::printf("%s", describe(plan, sim.where, world).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (o.help) {
      std::printf("%s", kUsage);
      return 0;
    }
    return run(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ringmend-topo: %s\n(ringmend-topo --help for usage)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringmend-topo: %s\n", e.what());
    return 1;
  }
}
