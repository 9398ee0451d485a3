#include "slurm/netcheck.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ringmend::slurm {
namespace {

// Upper median: for two values the larger, so that one bad peer of a node
// (or one bad node of three) does not pull the reference down.
double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double value_or_zero(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}
std::string rpad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::vector<std::string> NetcheckReport::dropped() const {
  std::vector<std::string> out;
  for (const auto& n : nodes)
    if (n.drop) out.push_back(n.node);
  return out;
}

double link_mbs(const NetcheckMeasurements& m, std::size_t a, std::size_t b) {
  if (a >= m.bw_mbs.size() || b >= m.bw_mbs.size() || b >= m.bw_mbs[a].size() || a >= m.bw_mbs[b].size())
    return 0;
  return std::min(value_or_zero(m.bw_mbs[a][b]), value_or_zero(m.bw_mbs[b][a]));
}

NetcheckReport judge(const NetcheckMeasurements& m, const NetcheckRule& rule) {
  NetcheckReport r;
  const std::size_t k = m.nodes.size();
  for (std::size_t a = 0; a < k; ++a) {
    NodeVerdict v;
    v.node = m.nodes[a];
    v.local_gbs = a < m.local_gbs.size() ? value_or_zero(m.local_gbs[a]) : 0;
    std::vector<double> links;
    for (std::size_t b = 0; b < k; ++b)
      if (b != a) links.push_back(link_mbs(m, a, b));
    v.node_bw_mbs = upper_median(links);
    r.nodes.push_back(v);
  }
  if (k < 2) return r;

  std::vector<double> node_bw, local;
  for (const auto& v : r.nodes) {
    node_bw.push_back(v.node_bw_mbs);
    local.push_back(v.local_gbs);
  }
  const double bw_ref = upper_median(node_bw);
  const double local_ref = k == 2 ? std::max(local[0], local[1]) : upper_median(local);
  const std::string ratio = fmt("%g", rule.ratio);

  for (auto& v : r.nodes) {
    if (k >= 3 && v.node_bw_mbs < rule.ratio * bw_ref) {
      v.drop = true;
      v.reason = "bandwidth to the other nodes " + fmt("%.0f", v.node_bw_mbs) + " MB/s is below " + ratio +
                 " x the median node (" + fmt("%.0f", bw_ref) + " MB/s)";
    } else if (v.local_gbs < rule.ratio * local_ref) {
      v.drop = true;
      v.reason = "memory copy rate " + fmt("%.2f", v.local_gbs) + " GB/s is below " + ratio + " x the " +
                 (k == 2 ? "other node" : "median node") + " (" + fmt("%.2f", local_ref) +
                 " GB/s): the node is overloaded or throttled";
    }
  }
  if (rule.min_link_mbs > 0) {
    std::vector<NodeVerdict*> below;
    for (auto& v : r.nodes)
      if (v.node_bw_mbs < rule.min_link_mbs) below.push_back(&v);
    const bool culprit_known =
        std::any_of(below.begin(), below.end(), [](NodeVerdict* v) { return v->drop; });
    if (k == 2 && below.size() == 2) {
      // One link, two suspects: only a slow local rate names the culprit.
      if (!culprit_known)
        r.error = "the link " + m.nodes[0] + " - " + m.nodes[1] + " carries " +
                  fmt("%.0f", r.nodes[0].node_bw_mbs) + " MB/s, below the floor of " +
                  fmt("%.0f", rule.min_link_mbs) +
                  " MB/s, and with two nodes the check cannot tell which end is at fault (their memory copy "
                  "rates are alike)";
    } else {
      for (NodeVerdict* v : below)
        if (!v->drop) {
          v->drop = true;
          v->reason = "bandwidth to the other nodes " + fmt("%.0f", v->node_bw_mbs) +
                      " MB/s is below the floor of " + fmt("%.0f", rule.min_link_mbs) + " MB/s";
        }
    }
  }
  if (r.error.empty() &&
      std::all_of(r.nodes.begin(), r.nodes.end(), [](const NodeVerdict& v) { return v.drop; }))
    r.error = "every node failed the check; nothing would be left to run on";
  return r;
}

std::string format_report(const NetcheckMeasurements& m, const NetcheckReport& r, const NetcheckRule& rule) {
  std::string out;
  const std::size_t k = m.nodes.size();
  std::size_t w = 4;
  for (const auto& n : m.nodes) w = std::max(w, n.size());
  out += "network check: " + std::to_string(k) + (k == 1 ? " node" : " nodes") +
         ", rule: drop a node below " + fmt("%g", rule.ratio) + " x the reference" +
         (rule.min_link_mbs > 0 ? " or below " + fmt("%.0f", rule.min_link_mbs) + " MB/s" : std::string()) +
         "\n";
  if (k >= 2) {
    out += "  " + pad("link", 2 * w + 3) + rpad("latency us", 12) + rpad("MB/s ->", 12) +
           rpad("MB/s <-", 12) + "\n";
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = a + 1; b < k; ++b) {
        const double lat = a < m.latency_us.size() && b < m.latency_us[a].size() ? m.latency_us[a][b] : 0;
        out += "  " + pad(m.nodes[a] + " - " + m.nodes[b], 2 * w + 3) + rpad(fmt("%.1f", lat), 12) +
               rpad(fmt("%.0f", value_or_zero(m.bw_mbs[a][b])), 12) +
               rpad(fmt("%.0f", value_or_zero(m.bw_mbs[b][a])), 12) + "\n";
      }
  }
  out += "  " + pad("node", w + 2) + rpad("link MB/s", 10) + rpad("copy GB/s", 11) + "  verdict\n";
  for (const auto& v : r.nodes)
    out += "  " + pad(v.node, w + 2) + rpad(fmt("%.0f", v.node_bw_mbs), 10) +
           rpad(fmt("%.2f", v.local_gbs), 11) + "  " + (v.drop ? "DROP: " + v.reason : std::string("ok")) +
           "\n";
  if (!r.error.empty()) out += "  error: " + r.error + "\n";
  return out;
}

std::vector<std::string> result_lines(const NetcheckReport& r) {
  std::vector<std::string> out;
  for (const auto& v : r.nodes)
    out.push_back(std::string(kResultPrefix) +
                  (v.drop ? "drop " + v.node + " " + v.reason : "keep " + v.node));
  if (!r.error.empty()) out.push_back(std::string(kResultPrefix) + "error " + r.error);
  return out;
}

bool parse_result_line(const std::string& line, NetcheckReport& into) {
  const std::string prefix = kResultPrefix;
  if (line.compare(0, prefix.size(), prefix) != 0) return false;
  std::string rest = line.substr(prefix.size());
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.pop_back();
  const auto sp = rest.find(' ');
  const std::string verb = rest.substr(0, sp);
  const std::string arg = sp == std::string::npos ? std::string() : rest.substr(sp + 1);
  if (verb == "error") {
    into.error = arg;
    return true;
  }
  if (verb != "keep" && verb != "drop") return false;
  NodeVerdict v;
  const auto sp2 = arg.find(' ');
  v.node = arg.substr(0, sp2);
  v.drop = verb == "drop";
  if (v.drop && sp2 != std::string::npos) v.reason = arg.substr(sp2 + 1);
  if (v.node.empty()) return false;
  into.nodes.push_back(v);
  return true;
}

}  // namespace ringmend::slurm
