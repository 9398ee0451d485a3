// A buffer for bytes a joiner receives (registered state, before the
// application registers it): not zeroed first, since the transfer writes
// every byte, and backed by huge pages where the kernel offers them, so
// that 64 MiB costs tens of page faults instead of sixteen thousand (each
// one a trip to the hypervisor on a virtual machine: zeroing and faulting
// a fresh 64 MiB vector took longer there than sending it). Private to
// runtime/.
#pragma once

#include <cstddef>
#include <span>

namespace ringmend {

class ReceivedBytes {
 public:
  ReceivedBytes() = default;
  explicit ReceivedBytes(std::size_t bytes);  // throws std::bad_alloc
  static ReceivedBytes copy_of(std::span<const std::byte> bytes);
  ~ReceivedBytes();
  ReceivedBytes(ReceivedBytes&& other) noexcept;
  ReceivedBytes& operator=(ReceivedBytes&& other) noexcept;
  ReceivedBytes(const ReceivedBytes&) = delete;
  ReceivedBytes& operator=(const ReceivedBytes&) = delete;

  std::byte* data() { return data_; }
  std::size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  void release();
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;  // 0: small, from new[]
};

}  // namespace ringmend
