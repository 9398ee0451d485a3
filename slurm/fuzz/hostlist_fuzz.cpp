// Fuzz target for the Slurm list parsers and the environment reader. Any
// input must give either a result or a ParseError/EnvironmentError: a crash,
// a sanitizer report, another exception, or a broken round trip
// (expand(compress(x)) != x) is a bug.
//
//   libFuzzer (clang):  build target hostlist_fuzz, then ./hostlist_fuzz CORPUS_DIR
//   replay (any compiler): hostlist_fuzz_replay FILE_OR_DIR... (also feeds random inputs)
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "slurm/slurm.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringmend::slurm;
  const std::string input(reinterpret_cast<const char*>(data), size);
  HostlistLimits limits;
  limits.max_hosts = 4096;  // keeps every input fast; the limit itself is part of what is tested
  bool small = true;        // the environment reader below expands with the default (larger) limit
  try {
    const auto hosts = expand_hostlist(input, limits);
    check(hosts.size() <= limits.max_hosts);
    for (const auto& h : hosts)
      check(!h.empty() && h.size() <= limits.max_name_length &&
            h.find_first_of(",[] \t") == std::string::npos);
    check(expand_hostlist(compress_hostlist(hosts), limits) == hosts);
  } catch (const ParseError& e) {
    check(e.position() <= size + 1 && e.what()[0] != '\0');
    small = e.problem().find("expands to more than") == std::string::npos;
  }
  try {
    const auto counts = expand_counts(input, 4096);
    check(!counts.empty() && counts.size() <= 4096);
    check(expand_counts(compress_counts(counts), 4096) == counts);
  } catch (const ParseError& e) {
    check(e.position() <= size + 1);
  }
  if (!small) return 0;
  // The same bytes as every list the environment reader parses.
  const std::map<std::string, std::string> env{{"SLURM_JOB_ID", "1"},
                                               {"SLURM_JOB_NODELIST", input},
                                               {"SLURM_TASKS_PER_NODE", input},
                                               {"SLURM_JOB_CPUS_PER_NODE", input},
                                               {"SLURM_CPUS_PER_TASK", input}};
  try {
    const auto e = read_slurm_environment([&](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
    check(e.allocation && e.allocation->nodes.size() == e.allocation->slots.size());
  } catch (const EnvironmentError&) {
  } catch (const ParseError&) {
  }
  return 0;
}
