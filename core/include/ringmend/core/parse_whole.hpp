// The whole of a text as a number, for the values ringmend reads from the
// environment, from /proc and from its own rules: nothing when it is
// absent or anything but the number (a sign where T has none, trailing
// characters, overflow). Callers add their own range and error message.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace ringmend {

template <typename T>
std::optional<T> parse_whole(std::string_view text) {
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// The same for a C string, which may be null (a variable not set).
template <typename T>
std::optional<T> parse_whole(const char* text) {
  if (!text) return std::nullopt;
  return parse_whole<T>(std::string_view(text));
}

}  // namespace ringmend
