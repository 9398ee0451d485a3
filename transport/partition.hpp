// Splitting n elements into `parts` contiguous ranges whose sizes differ by
// at most one (the first n % parts ranges are one longer).
#pragma once

#include <cstddef>

namespace ringmend::transport {

struct Range {
  std::size_t offset;
  std::size_t count;
};

constexpr Range split(std::size_t n, std::size_t parts, std::size_t index) {
  const std::size_t base = n / parts, extra = n % parts;
  const std::size_t offset = index * base + (index < extra ? index : extra);
  return {offset, base + (index < extra ? 1 : 0)};
}

}  // namespace ringmend::transport
