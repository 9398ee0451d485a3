// How this process was launched, and what to tell the user when that
// launch gives no fault tolerance. No MPI needed: the runtime asks it before
// it says whether ULFM is on, and the Slurm tools share the step test.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ringmend::ulfm {

// Looks up an environment variable (null when unset); tests pass their own.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_environment();

// True for the id of a Slurm job step that runs tasks (not the batch or
// extern step, whose ids are reserved values near 2^32).
bool is_slurm_job_step(const char* step_id);

enum class Launcher {
  Unknown,  // run by hand, a singleton, or a launcher not recognised
  Mpirun,   // Open MPI's mpirun / PRRTE (possibly inside a Slurm allocation)
  Srun,     // Slurm direct launch: srun ./app
};
Launcher detect_launcher(const EnvLookup& env = process_environment());

// This process's rank among the job's processes on its node, as its
// launcher says it (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPICH's
// MPI_LOCALRANKID, Slurm's SLURM_LOCALID, in that order); -1 when none says
// it, or says something that is not a whole number.
int launcher_local_rank(const EnvLookup& env = process_environment());

// How many of the job's processes the launcher put on this node, spares
// included (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS,
// or srun's SLURM_STEP_TASKS_PER_NODE at this node's SLURM_NODEID); -1 when
// none says it, or says something this cannot read.
int launcher_local_size(const EnvLookup& env = process_environment());

// What a rank should print when it runs without fault tolerance because
// srun started it: why (Slurm ends the whole step when one rank dies) and
// how to get fault tolerance instead.
std::string srun_no_fault_tolerance_notice();

// Non-empty when srun started several tasks but MPI sees a world of one:
// srun did not hand Open MPI a PMIx server (srun --mpi=pmix is missing),
// so every task runs alone. Says so and how to fix it; only in the task
// with SLURM_PROCID 0, so that the step says it once.
std::string srun_without_pmix_notice(const EnvLookup& env, int mpi_world_size);

// Whether Open MPI should be told, before MPI_Init, to yield the CPU when
// its progress loop finds nothing to do (MCA mpi_yield_when_idle): true
// when the launcher put more ranks of the job on this node
// (OMPI_COMM_WORLD_LOCAL_SIZE, spares included) than the machine has
// CPUs, and nobody set the variable. Open MPI yields by itself only when
// PRRTE marks the node oversubscribed, which it decides from the slots the
// allocation gives, and an allocation may promise more slots than there are
// cores (Slurm's --overcommit, spares placed on the members' cores, two
// Slurm nodes on one machine): each rank then spins in every agreement,
// shrink and allgather of a recovery and takes the CPU from the rank that
// has work (a 200-byte allgather of 8 ranks on 2 cores: 44 ms instead of
// 0.7 ms).
bool mpi_should_yield_when_idle(const EnvLookup& env, unsigned machine_cpus);

// How often, in microseconds, Open MPI's progress loop should look at its
// event library (MCA mpi_event_tick_rate) when nobody chose. Open MPI hands
// a failure notice from PMIx to its progress engine as an event, and the
// agreement defers work to events too; without a TCP connection of its own
// open, a process looks at its events only every 10 ms, so each of these
// hand-offs in a recovery waited up to 10 ms (plain ULFM, 3 ranks on one
// node: shrink 0.7-4.9 ms, 0.1 with this tick; across two nodes the
// allgather and the agreement after a shrink 9.9 ms each, then 0.3). The
// cost, a non-blocking poll per 100 us of MPI progress, is nothing to a
// runtime that moves its data outside MPI.
inline constexpr const char* kMpiEventTickRateMicroseconds = "100";

// How Open MPI should treat an error before MPI_Init completes (MCA
// mpi_initial_errhandler): return it. A process whose MPI_Init fails (it
// cannot reach a process that died while MPI started) is otherwise ended
// by Open MPI through PMIx_Abort, which Open MPI 5.0's mpirun counts as two
// terminations in a fault-tolerant job: it then takes the job for ended
// while a survivor still runs, and kills that survivor. Returned, the
// error reaches the Runtime, which tells the launcher and the application.
// Only for the MPI_Init the Runtime makes: a program that calls MPI_Init
// itself may not look at its return code.
inline constexpr const char* kMpiInitialErrhandler = "mpi_errors_return";

// An Open MPI setting (an OMPI_MCA_ variable) a rank starts with.
struct OpenMpiSetting {
  const char* variable;
  const char* value;
};

// The Open MPI settings ringmend gives a rank before its MPI_Init, leaving
// out any the user set: the event tick always, yielding when the node is
// crowded (both above). ringmend-rank applies them before the program
// starts, the Runtime before the MPI_Init it makes itself.
std::vector<OpenMpiSetting> open_mpi_settings(const EnvLookup& env, unsigned machine_cpus);

// The setting that makes MPI_Init return its error (kMpiInitialErrhandler),
// unless the user chose the initial error handler.
std::optional<OpenMpiSetting> return_init_errors(const EnvLookup& env);

}  // namespace ringmend::ulfm
