// The whole of a C string as a number, for the values ringmend reads from
// its environment and from /proc: nothing when it is absent or anything
// but the number (trailing characters, overflow).
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace ringmend::ulfm {

template <typename T>
std::optional<T> parse_whole(const char* text) {
  if (!text) return std::nullopt;
  const std::string_view v(text);
  T value{};
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec != std::errc() || ptr != v.data() + v.size()) return std::nullopt;
  return value;
}

}  // namespace ringmend::ulfm
