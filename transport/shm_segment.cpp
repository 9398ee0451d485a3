#include "transport/shm_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace ringmend::transport {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& name, int err) {
  throw std::runtime_error("shared memory " + name + ": " + what + ": " + std::strerror(err));
}

// Closes a descriptor on every path out of a function, unless taken.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int take() { return std::exchange(fd, -1); }
};

}  // namespace

ShmSegment::ShmSegment(std::string name, int fd, std::byte* data, std::size_t bytes, bool owner)
    : name_(std::move(name)), fd_(fd), data_(data), bytes_(bytes), linked_(owner) {}

ShmSegment::~ShmSegment() { release(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      linked_(std::exchange(other.linked_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

void ShmSegment::release() {
  unlink();
  if (data_) ::munmap(data_, bytes_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  data_ = nullptr;
  bytes_ = 0;
}

void ShmSegment::unlink() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

void ShmSegment::unlink_name(const std::string& name) { ::shm_unlink(name.c_str()); }

void ShmSegment::unlink_names_starting_with(const std::string& prefix) {
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return;
  while (const dirent* e = ::readdir(dir))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
      ::shm_unlink(("/" + std::string(e->d_name)).c_str());
  ::closedir(dir);
}

ShmSegment ShmSegment::create(const std::string& name, std::size_t bytes) {
  Fd f{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
  if (f.fd < 0) fail("shm_open(create)", name, errno);
  ShmSegment unlink_on_error(name, -1, nullptr, 0, true);
  // Sized, not allocated: each process reserves the part it writes
  // (reserve()), so that creating a node's segment costs the same at 4 and
  // at 64 ranks.
  if (::ftruncate(f.fd, static_cast<off_t>(bytes)) != 0) fail("ftruncate", name, errno);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (p == MAP_FAILED) fail("mmap", name, errno);
  unlink_on_error.linked_ = false;
  return ShmSegment(name, f.take(), static_cast<std::byte*>(p), bytes, true);
}

std::optional<ShmSegment> ShmSegment::attach(const std::string& name, std::size_t bytes) {
  Fd f{::shm_open(name.c_str(), O_RDWR, 0600)};
  if (f.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("shm_open(attach)", name, errno);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail("fstat", name, errno);
  if (static_cast<std::size_t>(st.st_size) < bytes) return std::nullopt;  // creator still sizing it
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (p == MAP_FAILED) fail("mmap", name, errno);
  return ShmSegment(name, f.take(), static_cast<std::byte*>(p), bytes, false);
}

void ShmSegment::reserve(std::size_t offset, std::size_t bytes) const {
  if (bytes == 0) return;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t begin = offset / page * page;
  const std::size_t end = std::min(bytes_, (offset + bytes + page - 1) / page * page);
  if (begin >= end) return;
  // Allocating the pages turns a full /dev/shm into this error rather than
  // a SIGBUS at the first write. tmpfs gives up with EINTR when a signal is
  // pending (MPI and UCX use signals): try again.
  int rc = 0;
  do rc = ::posix_fallocate(fd_, static_cast<off_t>(begin), static_cast<off_t>(end - begin));
  while (rc == EINTR);
  if (rc != 0)
    fail("reserving " + std::to_string(end - begin) +
             " bytes (is /dev/shm full? containers often mount a small one)",
         name_, rc);
  // Mapping them now spares the first messages a page fault per 4 KiB
  // (~1 ms per MiB measured); kernels before 5.14 refuse, and fault lazily.
  ::madvise(data_ + begin, end - begin, MADV_POPULATE_WRITE);
}

ShmSegment ShmSegment::open_shared(const std::string& name, std::size_t bytes) {
  // The name may vanish between the two opens only if the group has already
  // removed it, which it does after every member has opened: a few tries.
  for (int attempt = 0; attempt < 3; ++attempt) {
    bool created = true;
    Fd f{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
    if (f.fd < 0 && errno == EEXIST) {
      created = false;
      f.fd = ::shm_open(name.c_str(), O_RDWR, 0600);
      if (f.fd < 0 && errno == ENOENT) continue;
    }
    if (f.fd < 0) fail(created ? "shm_open(create)" : "shm_open(attach)", name, errno);
    ShmSegment unlink_on_error(name, -1, nullptr, 0, created);
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) fail("fstat", name, errno);
    const auto size = static_cast<std::size_t>(st.st_size);
    // Sizing is idempotent: members that race here all set the same size.
    if (size == 0 && ::ftruncate(f.fd, static_cast<off_t>(bytes)) != 0) fail("ftruncate", name, errno);
    if (size != 0 && size != bytes)
      fail("exists with " + std::to_string(size) + " bytes, not " + std::to_string(bytes), name, EEXIST);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
    if (p == MAP_FAILED) fail("mmap", name, errno);
    unlink_on_error.linked_ = false;
    return ShmSegment(name, f.take(), static_cast<std::byte*>(p), bytes, created);
  }
  fail("shm_open(attach)", name, ENOENT);
}

}  // namespace ringmend::transport
