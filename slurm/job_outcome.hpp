// How a job ended, from what each of its ranks reported.
//
// Under fault tolerance, Open MPI's mpirun exits 0 whatever happened to the
// ranks, so ringmend-run starts each rank through ringmend-rank, which waits
// for it and prints one record line (rank_record()) on the rank's stderr;
// mpirun forwards it, ringmend-run takes it out of the stream (take_record())
// and, once mpirun is done, judges the job (judge()) and prints a summary.
//
// A rank record: the marker, then key=value words, values without spaces:
//   member host pid start end (seconds since the epoch) status (exit:N or
//   signal:N) and what the Runtime itself said (the words of
//   ringmend/core/outcome.hpp: finished, epoch, size, recoveries, lost,
//   finalize_timeout, spare, admitted, spare_unused, released).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringmend::slurm {

inline constexpr std::string_view kRecordMarker = "@@ringmend-rank-outcome@@";

struct RankRecord {
  int member = -1;
  std::string host;
  long pid = 0;
  double start = 0, end = 0;
  enum class End { Exited, Signaled } how = End::Exited;
  int code = 0;                              // exit status, or the signal
  std::map<std::string, std::string> words;  // everything, as read (the Runtime's words too)

  bool runtime_finished() const;
  bool finalize_timed_out() const;
  bool runtime_used() const;     // the program began the Runtime's start (a ringmend program)
  bool runtime_started() const;  // the Runtime completed its start-up
  bool start_timed_out() const;
  bool recovery_timed_out() const;  // ended by the recovery watchdog
  bool mpi_init_failed() const;     // its MPI_Init returned an error (the Runtime said so)
  // A spare that was never admitted (it waited, then left or died).
  bool unadmitted_spare() const;
  // A member released on request (it left the job before the others).
  bool released() const;

  // A word of the record; `otherwise` when it is not there.
  std::string word(const char* key, const std::string& otherwise = "") const;
  // A word that is a whole number; `otherwise` when it is not there or not one.
  long number(const char* key, long otherwise) const;
  // How it ended, in words ("killed by SIGKILL", "excluded as stuck ...").
  std::string how_it_ended() const;
};

// The launcher's exit status when no rank could start because ranks died
// while MPI started (distinct from 1, a failed run, and 2, a launch that
// could not be attempted).
inline constexpr int kExitStartFailed = 4;

// The launcher's exit status when a whole node was lost: the MPI runtime
// (PRRTE in Open MPI 5.0) ends the job when its daemon on a node dies, so
// the survivors cannot go on; relaunch without that node (docs/slurm.md).
inline constexpr int kExitNodeLost = 5;

// The line ringmend-rank prints (without a newline).
std::string rank_record(const RankRecord& r, const std::string& runtime_words);

// A line of mpirun's stderr: if it carries a record, the record and the
// text before the marker (output of the rank that had no newline yet).
struct TakenRecord {
  RankRecord record;
  std::string text_before;
};
std::optional<TakenRecord> take_record(std::string_view line);

// A line of mpirun's stderr that names a node whose MPI daemon was lost
// (PRRTE's "lost communication with a remote daemon" message, whose line
// "  Remote daemon: [nspace,vpid] on node NAME" this recognises): NAME.
std::optional<std::string> lost_daemon_node(std::string_view line);

// A line of srun's stderr that says Slurm's PMIx plugin is ending the step:
// its error handler ran because a task that was still connected to srun's
// PMIx server went away (slurmstepd's "mpi/pmix...: _errhandler: ... Error
// handler invoked"). Slurm then kills every task of the step, started or not.
bool pmix_plugin_ends_step(std::string_view line);

// SIGSEGV and the like: the process itself went wrong (a probable bug),
// unlike SIGKILL or SIGTERM, which come from outside.
bool crash_signal(int sig);

}  // namespace ringmend::slurm
