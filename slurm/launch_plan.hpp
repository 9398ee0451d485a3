// Where the ranks go and the mpirun command that puts them there: the pure
// part of ringmend-run (no processes are started here), so that every rule
// is unit-tested.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringmend::slurm {

// A request that cannot be met (more ranks than slots, nodes outside an
// allocation, ...). what() says why and what to do instead.
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NodeSlots {
  std::string name;
  int count = 0;  // slots (input) or ranks placed (output)
};

// What the user asked for; 0 means "not given".
struct PlacementRequest {
  int ranks = 0;
  int nodes = 0;
  int ranks_per_node = 0;
  bool oversubscribe = false;  // allow more ranks than slots
};

struct Placement {
  std::vector<NodeSlots> hosts;  // nodes used, in order, with their ranks (empty: this machine)
  int ranks = 0;
};

// Inside an allocation. `nodes` are the allocation's nodes that may be used
// (after a network check, without the excluded ones), with their slots;
// `slots_source` names where the slots came from, for messages.
//   ranks_per_node R: R ranks on each node used (default: as many nodes as the
//     ranks need, else all); more than a node's slots only with oversubscribe
//   otherwise: nodes are filled in order up to their slots (Slurm's block
//     distribution); the default rank count is every slot of the nodes used.
// `excluded` is only for messages (nodes that a network check dropped).
Placement place_in_allocation(const std::vector<NodeSlots>& nodes, const PlacementRequest& request,
                              const std::string& slots_source, const std::vector<std::string>& excluded = {});

// Outside Slurm: this machine only, `cpus` slots.
Placement place_locally(int cpus, const PlacementRequest& request);

struct CommandOptions {
  std::string mpirun;                    // path of Open MPI's mpirun
  bool as_root = false;                  // add --allow-run-as-root
  std::vector<std::string> ft_args;      // empty: launch without fault tolerance
  int cpus_per_task = 1;                 // >1: bind each rank to that many cpus
  bool oversubscribe = false;            // pass --oversubscribe
  std::vector<std::string> forward_env;  // variable names to forward with -x
  std::vector<std::string> extra;        // the user's own mpirun arguments
  std::vector<std::string> program;      // program and its arguments
};

// mpirun [--allow-run-as-root] [FT args] [--host h1:n1,... --map-by slot[:PE=c]]
//        -np N [--oversubscribe] [-x VAR...] [extra...] program args...
std::vector<std::string> mpirun_command(const Placement& placement, const CommandOptions& options);

// The native membership's launch (ringmend-run --launcher srun): every rank
// a task of one srun step, placed as mpirun_command places them (`-m
// arbitrary` with one node name per task, in order), with the options that
// keep a step alive through a lost task or node (docs/slurm.md says why):
// srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n N [-w n1,n1,n2,...
//      -m arbitrary] [-c C] [--overcommit] program args...
// `options.mpirun` is srun's path here; `ft_args`, `forward_env` and
// `extra` do not apply (srun passes the whole environment on).
std::vector<std::string> srun_command(const Placement& placement, const CommandOptions& options);

// The rank count of an mpirun command line given as is (ringmend-run
// --mpirun-args): the sum of its -n/-np/--np/-c values, one per application
// context (contexts are separated by ':'), read up to each context's
// program (the first argument for which `is_program` holds; what follows is
// the program's own); 0 when it names none (mpirun then fills the slots).
int ranks_in_mpirun_args(const std::vector<std::string>& args,
                         const std::function<bool(const std::string&)>& is_program);

// "n1:2,n2:2"
std::string host_argument(const Placement& placement);

// The argument as a POSIX shell would need it written (single quotes when
// it holds anything but [A-Za-z0-9_@%+=:,./-]).
std::string shell_quote(std::string_view arg);
std::string shell_join(const std::vector<std::string>& args);

}  // namespace ringmend::slurm
