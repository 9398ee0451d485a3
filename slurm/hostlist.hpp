// Slurm's compact host and count lists.
//
// Slurm hands a job its geometry in compressed forms:
//   SLURM_JOB_NODELIST    n[001-004,010],gpu[1-2]   -> n001 n002 n003 n004 n010 gpu1 gpu2
//   SLURM_TASKS_PER_NODE  2(x3),1                   -> 2 2 2 1
// These parsers accept everything Slurm writes and reject anything else with
// a ParseError that names the input, the character where it went wrong and
// what was expected. They never crash, whatever the input (they are fuzzed),
// and they refuse to expand a list into more names than a limit, so that a
// typo such as n[1-999999999] is an error, not an out-of-memory kill.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringmend::slurm {

class ParseError : public std::runtime_error {
 public:
  // `position` counts characters of `input` from 1 (0: the input as a whole).
  ParseError(std::string_view what_kind, std::string_view input, std::size_t position,
             const std::string& problem);
  std::size_t position() const { return position_; }
  const std::string& problem() const { return problem_; }

 private:
  std::size_t position_;
  std::string problem_;
};

struct HostlistLimits {
  std::size_t max_hosts = std::size_t{1} << 20;  // names one list may expand to
  std::size_t max_name_length = 255;             // longest host name (a DNS name is at most 253)
};

// Expands a hostlist expression:
//   list   = entries separated by ',' or white space (empty entries are skipped)
//   entry  = literal text and bracket groups, e.g. rack[1-2]-n[01-16]; several
//            groups expand as their product, in order (rack1-n01, rack1-n02, ...)
//   group  = '[' range {',' range} ']', range = N or N-M with N <= M
// A range keeps the width of its lower bound: n[08-11] gives n08 ... n11,
// n[8-11] gives n8 ... n11. Host names may hold letters, digits, '.', '-'
// and '_'. Duplicates are kept (the caller decides whether they are errors).
std::vector<std::string> expand_hostlist(std::string_view list, const HostlistLimits& limits = {});

// The reverse: adjacent names that differ only in an increasing numeric
// suffix are folded into bracket ranges, keeping the order of `hosts`:
// {n001, n002, n003, n010, gpu1, gpu2} -> "n[001-003,010],gpu[1-2]".
// expand_hostlist(compress_hostlist(h)) == h for any h that expand_hostlist
// can produce.
std::string compress_hostlist(const std::vector<std::string>& hosts);

// Expands a Slurm count list ("2(x3),1" -> {2, 2, 2, 1}), the format of
// SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE. Counts are 0 or more.
std::vector<int> expand_counts(std::string_view list, std::size_t max_entries = std::size_t{1} << 20);

// The inverse of expand_counts: {2, 2, 2, 1} -> "2(x3),1".
std::string compress_counts(const std::vector<int>& counts);

}  // namespace ringmend::slurm
