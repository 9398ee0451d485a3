// ringmend-topo: prints where this process runs (its Location and the
// machine's summary), or builds the Plan of ranks simulated on a synthetic or
// XML topology and prints it. ringmend-topo --help: the options.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringmend/core/error.hpp"
#include "ringmend/core/options.hpp"
#include "topo/hwloc_handle.hpp"
#include "topo/location.hpp"
#include "topo/nearest_device.hpp"
#include "topo/plan.hpp"
#include "topo/tool/simulate.hpp"

namespace {

using namespace ringmend::topo;

constexpr const char* kAbout =
    R"(Without --ranks: prints the machine's summary (packages, NUMA nodes, L3s,
cores, GPUs and NICs); for this machine also the Location of this process.
With --ranks: simulates N ranks, each bound to one core, builds their
communication plan (nodes in local order, leaders, rails, ring) and prints it.)";

constexpr const char* kExitStatus =
    R"(Exit status: 0 on success; 2 on bad arguments or a topology that cannot be
read; 1 when this machine's topology cannot be loaded.)";

// Each rank costs a topology lookup and a line of output: past this, the
// request is a typo rather than a machine.
constexpr int kMaxRanks = 1 << 20;

struct Options {
  TopologySource source = TopologySource::ThisMachine;
  std::string what;  // XML file or synthetic description
  std::optional<int> ranks, nodes;
  std::vector<int> bind;
  std::vector<std::string> rail_devices;
};

// Reads argv. --help prints the usage and exits 0; a bad flag or value
// throws std::invalid_argument saying which (exit status 2).
Options parse(int argc, char** argv) {
  Options o;
  CLI::App app(kAbout, "ringmend-topo");
  app.footer(kExitStatus);
  app.get_formatter()->column_width(24);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const CLI::Validator not_empty(
      [](std::string& text) -> std::string { return text.empty() ? "needs a non-empty value" : ""; }, "");
  std::string synthetic_text, xml_file;
  auto* synthetic = app.add_option("--synthetic", synthetic_text,
                                   "an hwloc synthetic machine, e.g. \"pack:2 numa:2 l3:2 core:4 pu:1\"")
                        ->type_name("DESC")
                        ->check(not_empty);
  auto* xml =
      app.add_option("--xml", xml_file,
                     "an hwloc XML topology (e.g. written by `lstopo FILE.xml`); without either: this "
                     "machine")
          ->type_name("FILE")
          ->check(not_empty);
  synthetic->excludes(xml);
  app.add_option("--ranks", o.ranks, "simulate N ranks")->type_name("N")->check(CLI::Range(1, kMaxRanks));
  app.add_option("--nodes", o.nodes, "on K copies of the machine, ranks filling them in blocks (default 1)")
      ->type_name("K");
  // Core numbers, no empty item (CLI11's own list splitting would drop one).
  const CLI::Validator core_list(
      [](std::string& text) -> std::string {
        if (std::regex_match(text, std::regex("[0-9]{1,9}(,[0-9]{1,9})*"))) return {};
        return "'" + text + "' is not a list of core numbers C0,C1,...";
      },
      "");
  std::string bind_list;
  app.add_option("--bind", bind_list,
                 "bind rank r to core C_r (hwloc logical index) of its node; one core per rank, --ranks may "
                 "then be left out (default: local rank i of each node on core i, round-robin)")
      ->type_name("C0,C1,...")
      ->check(core_list);
  app.add_option("--rail-devices", o.rail_devices,
                 "the NICs named for the rails, as RINGMEND_RAIL_DEVICES says them (default: that variable): "
                 "local rank i of each node uses NIC i mod n; with fewer ranks than NICs on a node, "
                 "each rank stripes over its share of them")
      ->type_name("DEV0,DEV1,...")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(not_empty);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    std::exit(0);
  } catch (const CLI::ExtrasError&) {
    throw std::invalid_argument("unknown option '" + app.remaining().front() + "'");
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  if (*synthetic) {
    o.source = TopologySource::Synthetic;
    o.what = synthetic_text;
  } else if (*xml) {
    o.source = TopologySource::Xml;
    o.what = xml_file;
  }
  std::istringstream cores(bind_list);
  for (std::string core; std::getline(cores, core, ',');) o.bind.push_back(std::stoi(core));
  if (!o.ranks && !o.bind.empty()) o.ranks = static_cast<int>(o.bind.size());
  if (o.nodes && !o.ranks) throw std::invalid_argument("--nodes needs --ranks (or --bind)");
  // The same rule as a job's (core/options.cpp): what the tool accepts, a
  // job accepts.
  try {
    if (!o.rail_devices.empty()) {
      std::string named;
      for (const std::string& d : o.rail_devices) named += (named.empty() ? "" : ",") + d;
      (void)ringmend::parse_device_list("--rail-devices", named);
    } else if (const char* env = std::getenv("RINGMEND_RAIL_DEVICES"); env && *env) {
      o.rail_devices = ringmend::parse_device_list("RINGMEND_RAIL_DEVICES", env);
    }
  } catch (const ringmend::Error& e) {
    throw std::invalid_argument(e.what());
  }
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

void print_rail_devices(const std::vector<std::string>& devices) {
  if (devices.empty()) {
    std::printf("rail devices: none named (RINGMEND_RAIL_DEVICES): each process uses %s\n",
                "the NIC nearest to it when there are several, else UCX's choice");
    return;
  }
  std::printf("rail devices: local rank i of a node uses NIC i mod %zu:", devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) std::printf(" %zu -> %s", i, devices[i].c_str());
  std::printf(
      "\n  (fewer ranks on a node than NICs: local rank i takes every NIC j with j mod ranks == i, "
      "and UCX stripes over them)\n");
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
    print_rail_devices(o.rail_devices);
    return 0;
  }
  const int nodes = o.nodes.value_or(1);
  Simulation sim = simulate(topo.get(), *o.ranks, nodes, o.bind);
  // Named rail devices replace the nearest NIC, as in the runtime: by local rank.
  // A node with fewer ranks than NICs gives each rank its share of them.
  for (std::size_t r = 0; r < sim.where.size() && !o.rail_devices.empty(); ++r) {
    const auto local_size = std::count(sim.node_key.begin(), sim.node_key.end(), sim.node_key[r]);
    set_nic(sim.where[r],
            rail_device(o.rail_devices, static_cast<int>(r) - sim.node_key[r], static_cast<int>(local_size)));
  }
  std::vector<int> world(sim.node_key.size());
  std::iota(world.begin(), world.end(), 0);
  const Plan plan = make_plan(sim.node_key, sim.where, -1);
  std::printf("%d rank(s) simulated on %d node(s) of this kind:\n", *o.ranks, nodes);
  print_summary(topo.get());
  print_rail_devices(o.rail_devices);
  std::printf("%s", describe(plan, sim.where, world).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ringmend-topo: %s (--help for usage)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringmend-topo: %s\n", e.what());
    return 1;
  }
}
