// The network pre-check: what it measures, how it judges the nodes, and
// what it reports. The measuring program (netcheck_main.cpp, one MPI rank
// per node) fills NetcheckMeasurements; judge() decides; ringmend-run reads
// the verdict from the program's output and leaves the dropped nodes out.
//
// The rule (also in docs/slurm.md). A synchronous data-parallel job runs at
// the pace of its slowest node, so a node far slower than the others is
// worth more out of the job than in it.
//   link(a,b)     = the lower of the bandwidths a->b and b->a (a ring uses both)
//   node_bw(a)    = the upper median of link(a,x) over the other nodes x: a
//                   node with one bad peer keeps its value, a node whose own
//                   links are all slow does not
//   local(a)      = the node's own memory-copy rate, measured while it runs
//                   (an overloaded or throttled node shows it here)
//   A node is dropped when
//     * node_bw < ratio x the upper median of node_bw over all nodes (3+ nodes), or
//     * local < ratio x the reference local rate: the upper median over all
//       nodes, or with two nodes the better of the two, or
//     * node_bw < the absolute floor (min_link_mbs, when set).
// With two nodes both see the same single link, so the link alone cannot
// tell which end is slow: the local rate decides, and a link below the floor
// with equal local rates is reported as an error instead of guessing. The
// rule assumes that fewer than half of the nodes are slow.
#pragma once

#include <string>
#include <vector>

namespace ringmend::slurm {

struct NetcheckRule {
  double ratio = 0.5;         // drop below ratio x the reference (0 < ratio <= 1)
  double min_link_mbs = 0.0;  // absolute floor for node_bw in MB/s (0: none)
};

struct NetcheckMeasurements {
  std::vector<std::string> nodes;
  std::vector<double> local_gbs;                // memory copy rate per node, GB/s
  std::vector<std::vector<double>> bw_mbs;      // [a][b]: bandwidth a -> b, MB/s (1e6 bytes/s)
  std::vector<std::vector<double>> latency_us;  // [a][b]: one-way latency (half round trip), us
};

struct NodeVerdict {
  std::string node;
  double node_bw_mbs = 0;
  double local_gbs = 0;
  bool drop = false;
  std::string reason;  // why it is dropped (empty when kept)
};

struct NetcheckReport {
  std::vector<NodeVerdict> nodes;
  std::string error;  // non-empty: no trustworthy decision (e.g. a link below the floor, no culprit)
  std::vector<std::string> dropped() const;
};

// The lower of the two directions (0 when either is missing).
double link_mbs(const NetcheckMeasurements& m, std::size_t a, std::size_t b);

NetcheckReport judge(const NetcheckMeasurements& m, const NetcheckRule& rule);

// Human-readable table: one line per link, then one per node with its verdict.
std::string format_report(const NetcheckMeasurements& m, const NetcheckReport& r, const NetcheckRule& rule);

// Machine-readable lines for ringmend-run, one per node ("keep NODE",
// "drop NODE REASON") and "error TEXT", each prefixed with kResultPrefix.
inline constexpr const char* kResultPrefix = "@ringmend-netcheck ";
std::vector<std::string> result_lines(const NetcheckReport& r);

// Reads them back; lines without the prefix are ignored. Returns false
// when no verdict was found at all.
bool parse_result_line(const std::string& line, NetcheckReport& into);

}  // namespace ringmend::slurm
