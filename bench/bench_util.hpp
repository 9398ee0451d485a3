// Pieces shared by the benchmark programs (with MPI): size sweeps, job
// placement (ranks, nodes), run metadata, and the result files (JSON).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmend/core/types.hpp"

namespace ringmend::bench {

// The MPI datatype of `t`; MPI_DATATYPE_NULL for float16 and bfloat16
// (MPI has no 16-bit float type).
MPI_Datatype mpi_type_of(ringmend::DataType t);

// Latency statistics as OSU reports them (valid on rank 0): avg is the mean
// over ranks of each rank's mean time, min/max the extremes over ranks.
struct Stats {
  double avg_us = 0, min_us = 0, max_us = 0;
};

// Times `iters` calls of call() after `warmup` untimed ones.
// osu_allreduce's counts for a collective of `bytes` when -i / -x are not
// given: 1000 timed calls after 200 warm-up ones up to 8 KiB, 100 after 20
// above (OSU warms large sizes up 10 times; first touches of large buffers
// are slow on virtual machines).
inline int collective_iterations(std::optional<int> given, std::size_t bytes) {
  return given ? *given : bytes <= 8192 ? 1000 : 100;
}
inline int collective_warmups(std::optional<int> given, std::size_t bytes) {
  return given ? *given : bytes <= 8192 ? 200 : 20;
}

template <class F>
Stats time_calls(int warmup, int iters, MPI_Comm comm, F&& call) {
  for (int i = 0; i < warmup; ++i) call();
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) call();
  const double mine = (MPI_Wtime() - t0) * 1e6 / iters;
  int n = 1;
  MPI_Comm_size(comm, &n);
  double sum = 0, lo = 0, hi = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, comm);
  MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  return {sum / n, lo, hi};
}

// Sizes doubling from `min_bytes` up to `max_bytes`, each rounded down to a
// multiple of `granule` (at least one granule). A zero minimum gives 0, then
// starts again at one granule (as osu_latency does).
std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, std::size_t granule = 1);

// Where the ranks of a job run. node_comm holds the ranks of this rank's
// node (MPI_Comm_split_type SHARED); the caller frees it with MPI_Comm_free.
struct JobLayout {
  int rank = 0, size = 1;
  MPI_Comm node_comm = MPI_COMM_NULL;
  int node_rank = 0, node_size = 1;
  int nodes = 1;  // number of distinct nodes
  int min_ranks_per_node = 1, max_ranks_per_node = 1;
  int node_index = 0;             // 0..nodes-1, by lowest world rank
  std::vector<int> node_of_rank;  // node index of every world rank
  bool single_node() const { return nodes == 1; }
};
JobLayout job_layout(MPI_Comm world);

// What a result file records about the run (gathered collectively, valid on
// rank 0).
struct RunInfo {
  std::string program, command_line, date_utc, hostname;
  std::vector<std::string> node_hostnames;  // of each node's lowest rank
  std::string mpi_library_version, mpi_standard;
  std::string ringmend_version;
  int ranks = 1, nodes = 1, ranks_per_node = 1, min_ranks_per_node = 1;
};
RunInfo run_info(MPI_Comm world, const JobLayout& layout, int argc, char** argv,
                 std::string ringmend_version);

// Version of the ringmend sources the benchmarks were built from.
const char* built_version();

// Under srun the Runtime does not start MPI (the native membership runs
// without it; docs/slurm.md): a benchmark that calls MPI itself starts it
// first there. Elsewhere the Runtime starts MPI, with its own settings.
void start_mpi_under_srun(int* argc, char*** argv);

// A result file's document (bench/README.md, "JSON files"). Its keys stay in
// the order they are set (what the run was, then its rows), not sorted.
using Json = nlohmann::ordered_json;

// null where a value does not apply.
template <class T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// The "run" object of a result file.
Json run_json(const RunInfo& info);

// The keys an allreduce row starts with (bench/README.md, "JSON files"): a
// sum of `count` elements of `type` (bytes per rank), its latencies and
// bandwidths (GB/s); the program adds its own keys after them.
Json allreduce_row(std::size_t bytes, std::size_t count, const std::string& type, const std::string& impl,
                   const Stats& s, double algbw, double busbw);

// Rank 0 opens FILE for writing before a run (so that a bad path fails at
// once, not after the sweep); every rank learns whether it worked. Returns
// null on ranks other than 0 and on failure (then rank 0 has printed why).
struct JsonFile {
  std::FILE* file = nullptr;
  bool ok = true;
};
JsonFile open_json_file(MPI_Comm world, const std::string& path, const char* program);

// Writes `doc` (indented by 2; invalid UTF-8 in a string as U+FFFD) and
// closes the file (rank 0). Returns false on a write error.
bool finish_json_file(JsonFile& file, const Json& doc, const std::string& path, const char* program);

}  // namespace ringmend::bench
