// ringmend-run's command line: what the user asked for, read with CLI11 and
// checked against itself (which options go together). Nothing here looks at
// the machine, the allocation or the programs: launch.hpp does that.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "slurm/launch_plan.hpp"
#include "slurm/netcheck.hpp"

namespace ringmend::slurm::run {

// An error that stops the launch before anything runs: exit status 2.
struct Fatal {
  std::string text;
};

struct Options {
  PlacementRequest placement;
  bool fault_tolerance = true;  // --no-ft turns it off
  bool dry_run = false;
  bool network_check = false;
  bool network_check_only = false;
  NetcheckRule rule;
  double check_seconds = 0.15;
  double check_timeout = 120;
  std::vector<std::string> extra;  // pass-through mpirun arguments, in the order given
  std::string mpirun;              // --mpirun
  bool fail_on_loss = false;
  int spares = 0;                    // processes beyond -n that wait to replace lost ones
  std::vector<std::string> exclude;  // nodes to leave out (--exclude; --exclude-file adds to it)
  std::string exclude_file;          // read at start; a lost node is added to it
  bool mpirun_args = false;          // --mpirun-args: `program` is mpirun's own command line
  bool srun = false;                 // --launcher srun: the native membership, no mpirun
  bool verbose = false;
  bool quiet = false;
  std::vector<std::string> program;  // the program and its arguments (or mpirun's)
};

// Reads argv (and RINGMEND_LAUNCHER). --help and --version print their text
// and give nullopt (exit 0); a bad option or value throws Fatal.
std::optional<Options> parse_options(int argc, char** argv);

}  // namespace ringmend::slurm::run
