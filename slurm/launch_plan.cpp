#include "slurm/launch_plan.hpp"

#include <algorithm>

#include "slurm/hostlist.hpp"

namespace ringmend::slurm {
namespace {

std::string plural(long long n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "n[1-2] with 2(x2) task slots per node; SLURM_TASKS_PER_NODE=2(x2)"
std::string describe(const std::vector<NodeSlots>& nodes, const std::string& source) {
  std::vector<std::string> names;
  std::vector<int> slots;
  for (const auto& n : nodes) {
    names.push_back(n.name);
    slots.push_back(n.count);
  }
  std::string s = compress_hostlist(names) + " with " + compress_counts(slots) + " task slots per node";
  if (!source.empty()) s += "; " + source;
  return s;
}

std::string excluded_note(const std::vector<std::string>& excluded) {
  if (excluded.empty()) return {};
  return "; left out: " + compress_hostlist(excluded) + " (--exclude, a lost node, or the network check)";
}

const char* kMoreSlots =
    "Ask Slurm for more tasks (sbatch/salloc -n or --ntasks-per-node), or pass --oversubscribe to place more "
    "ranks than slots (each rank then gets less than a CPU)";

}  // namespace

namespace {

// --ranks-per-node R: R ranks on each node used (the last may get fewer).
std::vector<int> per_node(const std::vector<NodeSlots>& nodes, const PlacementRequest& req,
                          const std::string& slots_source, const std::vector<std::string>& excluded) {
  std::vector<int> put(nodes.size(), 0);
  const int per = req.ranks_per_node;
  std::size_t used = nodes.size();
  if (req.ranks > 0) {
    used = static_cast<std::size_t>((req.ranks + per - 1) / per);
    if (used > nodes.size())
      throw LaunchError(std::to_string(req.ranks) + " ranks at " + std::to_string(per) + " per node need " +
                        plural(static_cast<long long>(used), "node", "nodes") + "; the allocation has " +
                        plural(static_cast<long long>(nodes.size()), "node", "nodes") + " (" +
                        describe(nodes, slots_source) + ")" + excluded_note(excluded));
    if (req.nodes > 0 && used < static_cast<std::size_t>(req.nodes))
      throw LaunchError("-n " + std::to_string(req.ranks) + " at " + std::to_string(per) +
                        " per node fills " + plural(static_cast<long long>(used), "node", "nodes") +
                        ", but --nodes " + std::to_string(req.nodes) + " was asked");
  }
  int left = req.ranks > 0 ? req.ranks : per * static_cast<int>(used);
  for (std::size_t i = 0; i < used; ++i) {
    put[i] = std::min(per, left);
    left -= put[i];
    if (put[i] > nodes[i].count && !req.oversubscribe)
      throw LaunchError("--ranks-per-node " + std::to_string(per) + ": node " + nodes[i].name + " has " +
                        plural(nodes[i].count, "task slot", "task slots") + " in this allocation (" +
                        slots_source + "). " + kMoreSlots);
  }
  return put;
}

// Otherwise: every slot, -n ranks filling the nodes in order, or spread
// evenly over the nodes --nodes names.
std::vector<int> by_slots(const std::vector<NodeSlots>& nodes, const PlacementRequest& req,
                          const std::string& slots_source, const std::vector<std::string>& excluded) {
  std::vector<int> put(nodes.size(), 0);
  long long total = 0;
  for (const auto& n : nodes) total += n.count;
  const long long ranks = req.ranks > 0 ? req.ranks : total;
  if (ranks == 0)
    throw LaunchError("the allocation has no task slots (" + describe(nodes, slots_source) + ")");
  if (ranks > total && !req.oversubscribe)
    throw LaunchError("more ranks than slots: " + std::to_string(ranks) +
                      " ranks asked, the allocation has " + plural(total, "task slot", "task slots") + " (" +
                      describe(nodes, slots_source) + ")" + excluded_note(excluded) + ". " + kMoreSlots);
  long long left = ranks;
  if (req.nodes > 0) {
    // Nodes named explicitly: every one of them gets ranks, evenly.
    const long long n = static_cast<long long>(nodes.size());
    if (ranks < n)
      throw LaunchError("-n " + std::to_string(ranks) + " is fewer ranks than --nodes " +
                        std::to_string(req.nodes));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      put[i] = static_cast<int>(ranks / n + (static_cast<long long>(i) < ranks % n ? 1 : 0));
      if (put[i] > nodes[i].count && !req.oversubscribe)
        throw LaunchError(std::to_string(ranks) + " ranks spread over --nodes " + std::to_string(req.nodes) +
                          " put " + std::to_string(put[i]) + " on " + nodes[i].name + ", which has " +
                          plural(nodes[i].count, "task slot", "task slots") + " (" + slots_source + "). " +
                          kMoreSlots);
    }
    left = 0;
  }
  // Otherwise fill nodes in order up to their slots, as Slurm's block
  // distribution does; with --oversubscribe spread the rest round-robin.
  for (std::size_t i = 0; i < nodes.size() && left > 0; ++i) {
    put[i] = static_cast<int>(std::min<long long>(nodes[i].count, left));
    left -= put[i];
  }
  for (std::size_t i = 0; left > 0; i = (i + 1) % nodes.size()) {
    ++put[i];
    --left;
  }
  return put;
}

}  // namespace

Placement place_in_allocation(const std::vector<NodeSlots>& all, const PlacementRequest& req,
                              const std::string& slots_source, const std::vector<std::string>& excluded) {
  if (all.empty()) throw LaunchError("no node is left to run on" + excluded_note(excluded));
  std::vector<NodeSlots> nodes = all;
  if (req.nodes > 0) {
    if (static_cast<std::size_t>(req.nodes) > nodes.size())
      throw LaunchError("--nodes " + std::to_string(req.nodes) + ": the allocation has " +
                        plural(static_cast<long long>(nodes.size()), "usable node", "usable nodes") + " (" +
                        describe(all, slots_source) + ")" + excluded_note(excluded));
    nodes.resize(static_cast<std::size_t>(req.nodes));
  }
  const std::vector<int> put = req.ranks_per_node > 0 ? per_node(nodes, req, slots_source, excluded)
                                                      : by_slots(nodes, req, slots_source, excluded);
  Placement p;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (put[i] > 0) {
      p.hosts.push_back({nodes[i].name, put[i]});
      p.ranks += put[i];
    }
  return p;
}

Placement place_locally(int cpus, const PlacementRequest& req) {
  if (req.nodes > 1)
    throw LaunchError(
        "--nodes " + std::to_string(req.nodes) +
        " needs a Slurm allocation: run ringmend-run inside salloc or an sbatch script. Outside "
        "Slurm it starts the ranks on this machine only");
  if (req.ranks_per_node > 0 && req.ranks > req.ranks_per_node)
    throw LaunchError("-n " + std::to_string(req.ranks) + " at --ranks-per-node " +
                      std::to_string(req.ranks_per_node) +
                      " needs several nodes, and outside a Slurm allocation there is only this machine");
  Placement p;
  p.ranks = req.ranks > 0 ? req.ranks : (req.ranks_per_node > 0 ? req.ranks_per_node : cpus);
  if (p.ranks > cpus && !req.oversubscribe)
    throw LaunchError(
        "more ranks than slots: " + std::to_string(p.ranks) + " ranks asked, this machine has " +
        plural(cpus, "CPU", "CPUs") +
        " for this process. Pass --oversubscribe to run more ranks than CPUs (each rank then gets "
        "less than a CPU)");
  return p;
}

std::string host_argument(const Placement& placement) {
  std::string s;
  for (const auto& h : placement.hosts) {
    if (!s.empty()) s += ',';
    s += h.name + ":" + std::to_string(h.count);
  }
  return s;
}

std::vector<std::string> mpirun_command(const Placement& placement, const CommandOptions& o) {
  std::vector<std::string> cmd{o.mpirun};
  if (o.as_root) cmd.push_back("--allow-run-as-root");
  cmd.insert(cmd.end(), o.ft_args.begin(), o.ft_args.end());
  if (!placement.hosts.empty()) {
    // Explicit slots per host with slot mapping put exactly that many ranks
    // on each node, in order; PE=c gives each rank its Slurm CPUs per task.
    cmd.insert(cmd.end(), {"--host", host_argument(placement), "--map-by",
                           o.cpus_per_task > 1 ? "slot:PE=" + std::to_string(o.cpus_per_task) : "slot"});
    // PRRTE starts its daemons with an srun of its own. --overlap lets that
    // step share CPUs with steps still counted in the allocation: after a
    // node loss the last launch's daemon step stays until Slurm declares
    // the node down, and a relaunch on the remaining nodes would wait for
    // it.
    cmd.insert(cmd.end(), {"--prtemca", "plm_slurm_args", "--overlap"});
  }
  cmd.insert(cmd.end(), {"-np", std::to_string(placement.ranks)});
  if (o.oversubscribe) cmd.push_back("--oversubscribe");
  for (const auto& v : o.forward_env) cmd.insert(cmd.end(), {"-x", v});
  cmd.insert(cmd.end(), o.extra.begin(), o.extra.end());
  cmd.insert(cmd.end(), o.program.begin(), o.program.end());
  return cmd;
}

std::vector<std::string> srun_command(const Placement& placement, const CommandOptions& o) {
  std::vector<std::string> cmd{
      o.mpirun, "--mpi=pmix", "--no-kill", "--kill-on-bad-exit=0", "-n", std::to_string(placement.ranks)};
  if (!placement.hosts.empty()) {
    std::string nodes;
    for (const auto& h : placement.hosts)
      for (int i = 0; i < h.count; ++i) nodes += (nodes.empty() ? "" : ",") + h.name;
    cmd.insert(cmd.end(), {"-w", nodes, "-m", "arbitrary"});
  }
  if (o.cpus_per_task > 1) cmd.insert(cmd.end(), {"-c", std::to_string(o.cpus_per_task)});
  if (o.oversubscribe) cmd.push_back("--overcommit");
  cmd.insert(cmd.end(), o.program.begin(), o.program.end());
  return cmd;
}

int ranks_in_mpirun_args(const std::vector<std::string>& args,
                         const std::function<bool(const std::string&)>& is_program) {
  int total = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == ":") continue;
    if ((a == "-n" || a == "-np" || a == "--np" || a == "--n" || a == "-c") && i + 1 < args.size()) {
      total += std::max(0, std::atoi(args[i + 1].c_str()));
      ++i;
    } else if (a.rfind("--np=", 0) == 0 || a.rfind("--n=", 0) == 0) {
      total += std::max(0, std::atoi(a.c_str() + a.find('=') + 1));
    } else if (!a.empty() && a[0] != '-' && is_program(a)) {
      while (i + 1 < args.size() && args[i + 1] != ":") ++i;  // the program's own arguments
    }
  }
  return total;
}

std::string shell_quote(std::string_view arg) {
  if (arg.empty()) return "''";
  const bool plain = std::all_of(arg.begin(), arg.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ' ';
    s += shell_quote(a);
  }
  return s;
}

}  // namespace ringmend::slurm
