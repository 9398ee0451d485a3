// Sizes and ranges: splitting n elements into near-equal parts, and
// rounding up to an alignment.
#pragma once

#include <cstddef>

namespace ringmend {

// A contiguous range of elements.
struct Range {
  std::size_t offset;
  std::size_t count;
};

// Part `index` of n elements split into `parts` contiguous ranges whose sizes
// differ by at most one (the first n % parts ranges are one longer).
constexpr Range split(std::size_t n, std::size_t parts, std::size_t index) {
  const std::size_t base = n / parts, extra = n % parts;
  const std::size_t offset = index * base + (index < extra ? index : extra);
  return {offset, base + (index < extra ? 1 : 0)};
}

// `v` rounded up to a multiple of `a` (a > 0).
constexpr std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

}  // namespace ringmend
