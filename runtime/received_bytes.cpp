#include "runtime/received_bytes.hpp"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

namespace ringmend {
namespace {

// Below this, an ordinary allocation: the page faults do not matter.
constexpr std::size_t kMapFrom = std::size_t{1} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

}  // namespace

ReceivedBytes::ReceivedBytes(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  if (bytes < kMapFrom) {
    data_ = new std::byte[bytes];  // default-initialised: not zeroed
    return;
  }
  mapped_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  // Advice only: without transparent huge pages it is ordinary memory.
  ::madvise(p, mapped_, MADV_HUGEPAGE);
  data_ = static_cast<std::byte*>(p);
}

ReceivedBytes ReceivedBytes::copy_of(std::span<const std::byte> bytes) {
  ReceivedBytes out(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

ReceivedBytes::~ReceivedBytes() { release(); }

ReceivedBytes::ReceivedBytes(ReceivedBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

ReceivedBytes& ReceivedBytes::operator=(ReceivedBytes&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void ReceivedBytes::release() {
  if (!data_) return;
  if (mapped_)
    ::munmap(data_, mapped_);
  else
    delete[] data_;
  data_ = nullptr;
}

}  // namespace ringmend
