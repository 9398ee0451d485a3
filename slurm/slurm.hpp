// slurm/ — running ringmend jobs under Slurm.
//
// What this folder offers:
//   * hostlist.hpp: Slurm's compact lists (n[001-004,010],gpu[1-2]; 2(x3),1),
//     expanded and compressed, with clear errors on malformed input (fuzzed);
//   * environment.hpp: the job's geometry from SLURM_* variables (job id,
//     nodes, task slots per node, CPUs per task; procid, localid, nodeid of a
//     task) and how a process was launched (mpirun or srun), with the notice
//     a rank started by srun should print about fault tolerance;
//   * launch_plan.hpp: where ranks go in an allocation or on this machine,
//     and the mpirun command with the FT arguments that puts them there;
//   * netcheck.hpp: the network pre-check's rule for leaving out a slow node;
//   * job_outcome.hpp: how each rank ended (its record);
//   * job_verdict.hpp: the verdict over the job from its records:
//     ringmend-run's summary and exit status, by a table of exit rules;
//   * the programs ringmend-run (the launcher, bin/), ringmend-rank (starts
//     one rank and reports how it ended) and ringmend-netcheck (the MPI side
//     of the pre-check), both in libexec/ringmend/.
// The library needs no MPI; only ringmend-netcheck links it.
#pragma once

#include "slurm/environment.hpp"
#include "slurm/hostlist.hpp"
#include "slurm/job_outcome.hpp"
#include "slurm/job_verdict.hpp"
#include "slurm/launch_plan.hpp"
#include "slurm/netcheck.hpp"
