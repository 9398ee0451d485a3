// Inputs whose reductions are exact in every type (small integers), so that
// survivors can check results bit for bit against a reference they compute
// themselves from the set of contributing ranks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace ringmend::testing {

inline long long input_value(int world_rank, std::size_t i, ReduceOp op, int salt) {
  const long long w = world_rank, k = static_cast<long long>(i) + salt;
  switch (op) {
    case ReduceOp::Sum:
      return (w * 7 + k * 3) % 11 - 5;
    case ReduceOp::Prod:
      return (w + k) % 3 == 0 ? 2 : ((w + k) % 3 == 1 ? -1 : 1);
    case ReduceOp::Min:
    case ReduceOp::Max:
      return (w * 13 + k * 7) % 101 - 50;
  }
  return 0;
}

// A small integer as an element of T, and an element as a number to print.
// Exact in every type, the 16-bit floats included: sums of up to 51 ranks
// stay within +-256 (bfloat16 holds every integer up to there), products
// and partial products are signed powers of two.
template <class T>
T element(long long v) {
  if constexpr (std::is_same_v<T, float16>)
    return to_float16(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bfloat16>)
    return to_bfloat16(static_cast<float>(v));
  else
    return static_cast<T>(v);
}
template <class T>
double number(T x) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
    return to_float(x);
  else
    return static_cast<double>(x);
}

template <class T>
void fill(T* p, std::size_t n, int world_rank, ReduceOp op, int salt) {
  for (std::size_t i = 0; i < n; ++i) p[i] = element<T>(input_value(world_rank, i, op, salt));
}

inline long long fold(long long a, long long b, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return a + b;
    case ReduceOp::Prod:
      return a * b;
    case ReduceOp::Min:
      return b < a ? b : a;
    case ReduceOp::Max:
      return b > a ? b : a;
  }
  return 0;
}

// Number of mismatching elements of `out` against the reduction over `ranks`.
template <class T>
std::size_t count_wrong(const T* out, std::size_t n, const std::vector<int>& ranks, ReduceOp op, int salt) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    long long ref = input_value(ranks[0], i, op, salt);
    for (std::size_t r = 1; r < ranks.size(); ++r) ref = fold(ref, input_value(ranks[r], i, op, salt), op);
    if (!(out[i] == element<T>(ref))) {
      if (wrong < 3)
        std::fprintf(stderr, "  element %zu: got %.17g, expected %lld\n", i, number(out[i]), ref);
      ++wrong;
    }
  }
  return wrong;
}

// Buffer of `count` elements of any type, with typed access.
struct TypedBuffer {
  DataType type;
  std::size_t count;
  std::vector<std::byte> bytes;
  TypedBuffer(DataType t, std::size_t n) : type(t), count(n), bytes(n * size_of(t) + 8) {}
  void* data() { return bytes.data(); }
  void fill_input(int world_rank, ReduceOp op, int salt) {
    switch (type) {
      case DataType::Float32:
        fill(reinterpret_cast<float*>(data()), count, world_rank, op, salt);
        break;
      case DataType::Float64:
        fill(reinterpret_cast<double*>(data()), count, world_rank, op, salt);
        break;
      case DataType::Int32:
        fill(reinterpret_cast<std::int32_t*>(data()), count, world_rank, op, salt);
        break;
      case DataType::Int64:
        fill(reinterpret_cast<std::int64_t*>(data()), count, world_rank, op, salt);
        break;
      case DataType::Float16:
        fill(reinterpret_cast<float16*>(data()), count, world_rank, op, salt);
        break;
      case DataType::BFloat16:
        fill(reinterpret_cast<bfloat16*>(data()), count, world_rank, op, salt);
        break;
    }
  }
  std::size_t wrong(const std::vector<int>& ranks, ReduceOp op, int salt) {
    switch (type) {
      case DataType::Float32:
        return count_wrong(reinterpret_cast<float*>(data()), count, ranks, op, salt);
      case DataType::Float64:
        return count_wrong(reinterpret_cast<double*>(data()), count, ranks, op, salt);
      case DataType::Int32:
        return count_wrong(reinterpret_cast<std::int32_t*>(data()), count, ranks, op, salt);
      case DataType::Int64:
        return count_wrong(reinterpret_cast<std::int64_t*>(data()), count, ranks, op, salt);
      case DataType::Float16:
        return count_wrong(reinterpret_cast<float16*>(data()), count, ranks, op, salt);
      case DataType::BFloat16:
        return count_wrong(reinterpret_cast<bfloat16*>(data()), count, ranks, op, salt);
    }
    return count;
  }
};

// The original ranks whose inputs a result contains: the current members,
// plus the ranks lost during the call when the result was computed before
// they died (a survivor handed it over).
inline std::vector<int> contributors_of(const Communicator& comm, const CollectiveResult& r) {
  const std::vector<int> members = comm.member_ids();
  std::set<int> s(members.begin(), members.end());
  if (r.contributors == comm.size() + static_cast<int>(r.lost.size()))
    s.insert(r.lost.begin(), r.lost.end());
  else if (r.contributors != comm.size()) {
    std::fprintf(stderr, "contributors=%d matches neither the %d members nor members+lost\n", r.contributors,
                 comm.size());
    std::exit(3);
  }
  return {s.begin(), s.end()};
}

// Every "--name[=value]" argument must name one of `known`: a misspelled
// flag is an error (status 2), never a check silently left out.
inline void require_known_options(int argc, char** argv, std::initializer_list<std::string_view> known) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--", 2) != 0) continue;
    const std::string_view arg = argv[i] + 2;
    const std::string_view name = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += " --" + std::string(k);
    std::fprintf(stderr, "%s: unknown option '%s' (known:%s)\n", argv[0], argv[i], list.c_str());
    std::exit(2);
  }
}

// "--name=value" style option lookup.
inline std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  return fallback;
}

// "1,4,2" -> {1, 4, 2}; a value that is not a number throws (std::stoi).
inline std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    if (comma > begin) out.push_back(std::stoi(text.substr(begin, comma - begin)));
    begin = comma + 1;
  }
  return out;
}

}  // namespace ringmend::testing
