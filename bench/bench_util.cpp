#include "bench/bench_util.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>

#ifndef RINGMEND_BENCH_VERSION
#define RINGMEND_BENCH_VERSION "unknown"
#endif

namespace ringmend::bench {

MPI_Datatype mpi_type_of(ringmend::DataType t) {
  switch (t) {
    case ringmend::DataType::Float32:
      return MPI_FLOAT;
    case ringmend::DataType::Float64:
      return MPI_DOUBLE;
    case ringmend::DataType::Int32:
      return MPI_INT32_T;
    case ringmend::DataType::Int64:
      return MPI_INT64_T;
    case ringmend::DataType::Float16:
    case ringmend::DataType::BFloat16:
      break;
  }
  return MPI_DATATYPE_NULL;
}

std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, std::size_t granule) {
  std::vector<std::size_t> sizes;
  if (granule == 0) granule = 1;
  std::size_t b = min_bytes;
  if (b == 0) {
    sizes.push_back(0);
    b = granule;
  }
  b = std::max(b, granule);
  for (; b <= max_bytes; b *= 2) {
    sizes.push_back(b / granule * granule);
    if (b > std::numeric_limits<std::size_t>::max() / 2) break;
  }
  return sizes;
}

JobLayout job_layout(MPI_Comm world) {
  JobLayout l;
  MPI_Comm_rank(world, &l.rank);
  MPI_Comm_size(world, &l.size);
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, l.rank, MPI_INFO_NULL, &l.node_comm);
  MPI_Comm_rank(l.node_comm, &l.node_rank);
  MPI_Comm_size(l.node_comm, &l.node_size);
  // Each node is named by its lowest world rank (node rank 0, as the split
  // is keyed by world rank).
  int leader = l.rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, l.node_comm);
  std::vector<int> leaders(static_cast<std::size_t>(l.size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, world);
  std::map<int, int> count;  // leader -> ranks on that node
  for (int x : leaders) ++count[x];
  std::map<int, int> index;
  for (const auto& [lead, n] : count) index.emplace(lead, static_cast<int>(index.size()));
  l.nodes = static_cast<int>(count.size());
  l.min_ranks_per_node = l.size;
  l.max_ranks_per_node = 0;
  for (const auto& [lead, n] : count) {
    l.min_ranks_per_node = std::min(l.min_ranks_per_node, n);
    l.max_ranks_per_node = std::max(l.max_ranks_per_node, n);
  }
  l.node_of_rank.resize(leaders.size());
  for (std::size_t r = 0; r < leaders.size(); ++r) l.node_of_rank[r] = index[leaders[r]];
  l.node_index = l.node_of_rank[static_cast<std::size_t>(l.rank)];
  return l;
}

namespace {

std::string trim(std::string s) {
  while (!s.empty() &&
         (s.back() == '\0' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.pop_back();
  return s;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

const char* built_version() { return RINGMEND_BENCH_VERSION; }

void start_mpi_under_srun(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  const bool mpirun = std::getenv("PRTE_LAUNCHED") || std::getenv("OMPI_COMM_WORLD_SIZE");
  if (initialized || mpirun || !std::getenv("SLURM_STEP_ID")) return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
}

RunInfo run_info(MPI_Comm world, const JobLayout& layout, int argc, char** argv,
                 std::string ringmend_version) {
  RunInfo info;
  info.ranks = layout.size;
  info.nodes = layout.nodes;
  info.ranks_per_node = layout.max_ranks_per_node;
  info.min_ranks_per_node = layout.min_ranks_per_node;
  info.ringmend_version = std::move(ringmend_version);
  if (argc > 0) {
    const char* slash = std::strrchr(argv[0], '/');
    info.program = slash ? slash + 1 : argv[0];
  }
  for (int i = 0; i < argc; ++i) {
    if (i) info.command_line += ' ';
    info.command_line += argv[i];
  }
  info.date_utc = utc_now();

  // Hostname of every rank, gathered in fixed-size slots.
  constexpr std::size_t kHost = 256;
  std::array<char, kHost> mine{};
  if (gethostname(mine.data(), kHost - 1) != 0) std::snprintf(mine.data(), kHost, "unknown");
  std::vector<char> all(layout.rank == 0 ? kHost * static_cast<std::size_t>(layout.size) : 0);
  MPI_Gather(mine.data(), static_cast<int>(kHost), MPI_CHAR, all.data(), static_cast<int>(kHost), MPI_CHAR, 0,
             world);
  info.hostname = mine.data();
  if (layout.rank == 0) {
    info.node_hostnames.assign(static_cast<std::size_t>(layout.nodes), std::string());
    for (int r = layout.size - 1; r >= 0; --r) {  // lowest rank of each node wins
      const char* h = all.data() + kHost * static_cast<std::size_t>(r);
      info.node_hostnames[static_cast<std::size_t>(layout.node_of_rank[static_cast<std::size_t>(r)])] =
          std::string(h, strnlen(h, kHost));
    }
  }

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  info.mpi_library_version = trim(std::string(version, static_cast<std::size_t>(std::max(len, 0))));
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  info.mpi_standard = std::to_string(major) + "." + std::to_string(minor);
  return info;
}

// ---------------------------------------------------------------- JSON

Json run_json(const RunInfo& info) {
  Json run;
  run["program"] = info.program;
  run["command_line"] = info.command_line;
  run["date"] = info.date_utc;
  run["hostname"] = info.hostname;
  run["node_hostnames"] = info.node_hostnames;
  run["ranks"] = info.ranks;
  run["nodes"] = info.nodes;
  run["ranks_per_node"] = info.ranks_per_node;
  run["min_ranks_per_node"] = info.min_ranks_per_node;
  run["ringmend_version"] = info.ringmend_version.empty() ? Json(nullptr) : Json(info.ringmend_version);
  run["mpi_library_version"] = info.mpi_library_version;
  run["mpi_standard"] = info.mpi_standard;
  return run;
}

JsonFile open_json_file(MPI_Comm world, const std::string& path, const char* program) {
  JsonFile f;
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  int ok = 1;
  if (rank == 0) {
    f.file = std::fopen(path.c_str(), "w");
    if (!f.file) {
      std::fprintf(stderr, "%s: cannot write '%s': %s\n", program, path.c_str(), std::strerror(errno));
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, world);
  f.ok = ok != 0;
  return f;
}

Json allreduce_row(std::size_t bytes, std::size_t count, const std::string& type, const std::string& impl,
                   const Stats& s, double algbw, double busbw) {
  return {{"size", bytes},
          {"count", count},
          {"type", type},
          {"op", "sum"},
          {"impl", impl},
          {"avg_latency_us", s.avg_us},
          {"min_latency_us", s.min_us},
          {"max_latency_us", s.max_us},
          {"algbw_GBps", algbw},
          {"busbw_GBps", busbw}};
}

namespace {

// Ten significant digits: more than any measurement here resolves, and a
// file a person can read (a double's shortest exact text has up to 17).
void round_numbers(Json& value) {
  if (value.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.10g", value.get<double>());
    value = std::strtod(text, nullptr);
  } else if (value.is_structured()) {
    for (Json& item : value) round_numbers(item);
  }
}

}  // namespace

bool finish_json_file(JsonFile& file, const Json& doc, const std::string& path, const char* program) {
  if (!file.file) return true;
  Json rounded = doc;
  round_numbers(rounded);
  // Host names and MPI's version string come from outside: bytes that are no
  // UTF-8 become U+FFFD rather than an exception. Non-finite numbers are null.
  const std::string text = rounded.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  bool ok = std::fwrite(text.data(), 1, text.size(), file.file) == text.size();
  ok = (std::fclose(file.file) == 0) && ok;
  file.file = nullptr;
  if (!ok) std::fprintf(stderr, "%s: error writing '%s'\n", program, path.c_str());
  return ok;
}

}  // namespace ringmend::bench
