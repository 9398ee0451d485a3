// FNV-1a (64 bits): a cheap fingerprint of bytes, for telling apart what
// processes of one job compare (a GPU's host and bus, an all-gather's
// participants, a result in the soak test). Not a checksum against
// corruption and not for input an adversary chooses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ringmend {

class Fnv1a {
 public:
  Fnv1a& add(const void* data, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) hash_ = (hash_ ^ b[i]) * kPrime;
    return *this;
  }
  Fnv1a& add(std::string_view text) { return add(text.data(), text.size()); }
  // A value's bytes (an integer, say), as this machine stores them.
  template <class T>
  requires std::is_trivially_copyable_v<T> Fnv1a& add_value(const T& v) { return add(&v, sizeof v); }
  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kOffsetBasis = 14695981039346656037ULL;
  static constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash_ = kOffsetBasis;
};

inline std::uint64_t fnv1a(const void* data, std::size_t bytes) { return Fnv1a().add(data, bytes).value(); }
inline std::uint64_t fnv1a(std::string_view text) { return Fnv1a().add(text).value(); }

}  // namespace ringmend
