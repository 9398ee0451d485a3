#include "slurm/hostlist.hpp"

#include <algorithm>
#include <cstdint>

namespace ringmend::slurm {
namespace {

// Inputs can be anything (an environment variable, a fuzzer's bytes): shown
// escaped and shortened, so that an error message stays one readable line.
std::string shown(std::string_view input) {
  constexpr std::size_t kMax = 120;
  std::string out;
  for (std::size_t i = 0; i < input.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(input[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (input.size() > kMax) out += "...";
  return out;
}

std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  if (c == ' ') return "a space";
  static const char* hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' || c == '_';
}
bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// 18 digits always fit in 64 bits; longer numbers are no host index.
constexpr std::size_t kMaxDigits = 18;

std::size_t digit_count(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

std::string padded(std::uint64_t v, std::size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

struct Range {
  std::uint64_t lo = 0, hi = 0;
  std::size_t width = 0;
};

// Literal text, or a bracket group (ranges non-empty).
struct Piece {
  std::string literal;
  std::vector<Range> ranges;
};

class HostlistParser {
 public:
  HostlistParser(std::string_view input, const HostlistLimits& limits) : s_(input), limits_(limits) {}

  std::vector<std::string> run() {
    std::vector<std::string> out;
    std::size_t total = 0;
    while (i_ < s_.size()) {
      if (is_separator(s_[i_])) {
        ++i_;
        continue;
      }
      const std::size_t entry_start = i_;
      std::vector<Piece> pieces = entry();
      // Check size and name length before expanding anything.
      std::size_t count = 1, longest = 0;
      for (const auto& p : pieces) {
        if (p.ranges.empty()) {
          longest += p.literal.size();
          continue;
        }
        std::size_t in_group = 0, widest = 0;
        for (const auto& r : p.ranges) {
          const std::uint64_t n = r.hi - r.lo + 1;
          if (n > limits_.max_hosts || in_group + n > limits_.max_hosts) too_many(entry_start);
          in_group += static_cast<std::size_t>(n);
          widest = std::max({widest, r.width, digit_count(r.hi)});
        }
        if (count > limits_.max_hosts / in_group) too_many(entry_start);
        count *= in_group;
        longest += widest;
      }
      if (total + count > limits_.max_hosts) too_many(entry_start);
      total += count;
      if (longest > limits_.max_name_length)
        fail(entry_start, "this entry gives host names of up to " + std::to_string(longest) +
                              " characters; the limit is " + std::to_string(limits_.max_name_length));
      expand(pieces, out);
    }
    return out;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& problem) const {
    throw ParseError("hostlist", s_, at + 1, problem);
  }
  [[noreturn]] void too_many(std::size_t at) const {
    fail(at, "expands to more than " + std::to_string(limits_.max_hosts) + " host names");
  }

  std::vector<Piece> entry() {
    std::vector<Piece> pieces;
    while (i_ < s_.size() && !is_separator(s_[i_])) {
      const char c = s_[i_];
      if (c == '[') {
        pieces.push_back(group());
      } else if (c == ']') {
        fail(i_, "']' without a matching '['");
      } else if (is_name_char(c)) {
        if (pieces.empty() || !pieces.back().ranges.empty()) pieces.emplace_back();
        pieces.back().literal += c;
        ++i_;
      } else {
        fail(i_, describe(c) + " cannot appear in a host name (letters, digits, '.', '-' and '_' can)");
      }
    }
    return pieces;
  }

  // At '['; returns after the matching ']'.
  Piece group() {
    const std::size_t open = i_;
    ++i_;
    Piece p;
    for (;;) {
      Range r;
      const std::size_t lo_at = i_;
      r.width = number(r.lo, open, "a number");
      r.hi = r.lo;
      if (i_ < s_.size() && s_[i_] == '-') {
        ++i_;
        number(r.hi, open, "the upper bound of the range after '-'");
      }
      if (r.hi < r.lo)
        fail(lo_at, "the range " + std::string(s_.substr(lo_at, i_ - lo_at)) +
                        " decreases (write the lower bound first)");
      p.ranges.push_back(r);
      if (i_ >= s_.size()) fail(open, "the '[' is not closed by a ']'");
      const char c = s_[i_];
      if (c == ']') {
        ++i_;
        return p;
      }
      if (c == ',') {
        ++i_;
        continue;
      }
      if (c == '-') fail(i_, "a range has one '-' (N-M)");
      if (c == '[') fail(i_, "'[' inside a bracket group (groups do not nest)");
      fail(i_, describe(c) + " inside a bracket group (expected ',' or ']' after a number or range)");
    }
  }

  // Reads digits at i_; returns how many there were.
  std::size_t number(std::uint64_t& value, std::size_t open, const char* what) {
    const std::size_t start = i_;
    value = 0;
    while (i_ < s_.size() && is_digit(s_[i_])) {
      if (i_ - start == kMaxDigits) fail(start, "a number longer than 18 digits");
      value = value * 10 + static_cast<std::uint64_t>(s_[i_] - '0');
      ++i_;
    }
    if (i_ == start) {
      if (i_ >= s_.size()) fail(open, "the '[' is not closed by a ']'");
      const char c = s_[i_];
      if (c == ']' || c == ',')
        fail(i_, std::string("empty range: expected ") + what + " before " + describe(c));
      fail(i_, std::string("expected ") + what + ", found " + describe(c));
    }
    return i_ - start;
  }

  static void expand(const std::vector<Piece>& pieces, std::vector<std::string>& out) {
    std::vector<std::string> names{std::string()};
    for (const auto& p : pieces) {
      if (p.ranges.empty()) {
        for (auto& n : names) n += p.literal;
        continue;
      }
      std::vector<std::string> next;
      for (const auto& n : names)
        for (const auto& r : p.ranges)
          for (std::uint64_t v = r.lo;; ++v) {
            next.push_back(n + padded(v, r.width));
            if (v == r.hi) break;
          }
      names = std::move(next);
    }
    for (auto& n : names) out.push_back(std::move(n));
  }

  std::string_view s_;
  HostlistLimits limits_;
  std::size_t i_ = 0;
};

struct Suffix {
  std::string_view prefix, digits;
  std::uint64_t value = 0;
  bool numeric = false;
};

Suffix split_suffix(const std::string& host) {
  Suffix s;
  std::size_t k = host.size();
  while (k > 0 && is_digit(host[k - 1])) --k;
  s.prefix = std::string_view(host).substr(0, k);
  s.digits = std::string_view(host).substr(k);
  if (s.digits.empty() || s.digits.size() > kMaxDigits) return s;
  for (char c : s.digits) s.value = s.value * 10 + static_cast<std::uint64_t>(c - '0');
  s.numeric = true;
  return s;
}

}  // namespace

ParseError::ParseError(std::string_view what_kind, std::string_view input, std::size_t position,
                       const std::string& problem)
    : std::runtime_error(
          std::string(what_kind) + " \"" + shown(input) +
          "\": " + (position ? "at character " + std::to_string(position) + ": " : std::string()) + problem),
      position_(position),
      problem_(problem) {}

std::vector<std::string> expand_hostlist(std::string_view list, const HostlistLimits& limits) {
  return HostlistParser(list, limits).run();
}

std::string compress_hostlist(const std::vector<std::string>& hosts) {
  std::string out;
  std::size_t i = 0;
  while (i < hosts.size()) {
    if (!out.empty()) out += ',';
    const Suffix first = split_suffix(hosts[i]);
    if (!first.numeric) {
      out += hosts[i++];
      continue;
    }
    // A group: the same prefix, increasing values, each written as the
    // first one's width would write it (so that expansion gives it back).
    const std::size_t width = first.digits.size();
    std::vector<std::uint64_t> values{first.value};
    std::size_t j = i + 1;
    for (; j < hosts.size(); ++j) {
      const Suffix s = split_suffix(hosts[j]);
      if (!s.numeric || s.prefix != first.prefix || s.value <= values.back() ||
          padded(s.value, width) != s.digits)
        break;
      values.push_back(s.value);
    }
    if (values.size() == 1) {
      out += hosts[i++];
      continue;
    }
    out += first.prefix;
    out += '[';
    for (std::size_t a = 0; a < values.size();) {
      std::size_t b = a;
      while (b + 1 < values.size() && values[b + 1] == values[b] + 1) ++b;
      if (a) out += ',';
      out += padded(values[a], width);
      if (b > a) out += '-' + padded(values[b], width);
      a = b + 1;
    }
    out += ']';
    i = j;
  }
  return out;
}

std::vector<int> expand_counts(std::string_view list, std::size_t max_entries) {
  auto fail = [&](std::size_t at, const std::string& problem) -> void {
    throw ParseError("count list", list, at + 1, problem);
  };
  if (list.empty()) throw ParseError("count list", list, 0, "is empty (expected e.g. 2(x3),1)");
  std::vector<int> out;
  std::size_t i = 0;
  auto read = [&](const char* what) {
    const std::size_t start = i;
    long long v = 0;
    while (i < list.size() && is_digit(list[i])) {
      if (i - start == 9) fail(start, "a number longer than 9 digits");
      v = v * 10 + (list[i] - '0');
      ++i;
    }
    if (i == start)
      fail(i,
           std::string("expected ") + what + ", found " + (i < list.size() ? describe(list[i]) : "the end"));
    return v;
  };
  for (;;) {
    const std::size_t item = i;
    const long long count = read("a count");
    long long repeat = 1;
    if (i < list.size() && list[i] == '(') {
      ++i;
      if (i >= list.size() || list[i] != 'x')
        fail(i, "expected 'x' after '(' (the form is COUNT(xREPEAT), e.g. 2(x3))");
      ++i;
      const std::size_t rep_at = i;
      repeat = read("a repeat count after '(x'");
      if (repeat == 0) fail(rep_at, "a repeat count of 0");
      if (i >= list.size() || list[i] != ')') fail(i, "expected ')' after the repeat count");
      ++i;
    }
    if (static_cast<unsigned long long>(repeat) > max_entries - out.size())
      fail(item, "expands to more than " + std::to_string(max_entries) + " entries");
    out.insert(out.end(), static_cast<std::size_t>(repeat), static_cast<int>(count));
    if (i == list.size()) return out;
    if (list[i] != ',') fail(i, "expected ',' between entries, found " + describe(list[i]));
    ++i;
    if (i == list.size()) fail(i - 1, "a ',' at the end");
  }
}

std::string compress_counts(const std::vector<int>& counts) {
  std::string out;
  for (std::size_t i = 0; i < counts.size();) {
    std::size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(counts[i]);
    if (j - i > 1) out += "(x" + std::to_string(j - i) + ")";
    i = j;
  }
  return out;
}

}  // namespace ringmend::slurm
