// ringmend-run --network-check: one rank on each node runs ringmend-netcheck
// through mpirun before the job; its table is printed and its verdict says
// which nodes to leave out.
#pragma once

#include <string>
#include <vector>

#include "slurm/launch_plan.hpp"
#include "slurm/netcheck.hpp"
#include "slurm/run/options.hpp"

namespace ringmend::slurm::run {

// The check's own mpirun command: one rank on each of `nodes`, with the job's
// mpirun settings (`base`) and the rule of the options.
std::vector<std::string> network_check_command(const std::vector<std::string>& nodes,
                                               const CommandOptions& base, const Options& o,
                                               const std::string& self_dir);

// Runs the check on `nodes` (bounded by --network-check-timeout), prints its
// table, returns its verdict; a check that fails or times out is a Fatal.
NetcheckReport run_network_check(const std::vector<std::string>& nodes, const CommandOptions& base,
                                 const Options& o, const std::string& self_dir);

}  // namespace ringmend::slurm::run
