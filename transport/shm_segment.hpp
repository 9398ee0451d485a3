// A POSIX shared-memory segment mapped into this process (RAII).
//
// One rank of a node creates the segment; the others attach to it by name.
// The name is removed (shm_unlink) as soon as every rank has attached, so
// nothing is left in /dev/shm even if all ranks are later SIGKILLed: the
// memory lives exactly as long as the last mapping.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace ringmend::transport {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates `name` with `bytes` of zeroed memory. Nothing is allocated yet:
  // every process reserve()s the part it writes. Throws std::runtime_error
  // saying why on failure.
  static ShmSegment create(const std::string& name, std::size_t bytes);

  // Maps an existing segment of at least `bytes`; nullopt while it does not
  // exist yet or is still being sized by its creator. Throws on other errors.
  static std::optional<ShmSegment> attach(const std::string& name, std::size_t bytes);

  // The segment of a group of processes, each of which opens `name` with the
  // same size: whoever comes first creates and sizes it, the others map it.
  // Nobody waits for anybody (a creator that is descheduled or dead holds
  // no one up). Only the creator removes the name on destruction; the group
  // removes it (unlink_name) once every member has opened it. Throws
  // std::runtime_error saying why it failed, also when `name` exists with
  // a different size.
  static ShmSegment open_shared(const std::string& name, std::size_t bytes);

  // Allocates and maps the pages of [offset, offset + bytes) (whole pages),
  // so that a full /dev/shm is an error here rather than a SIGBUS at the
  // first write. Every process reserves what it writes, before it writes.
  // Throws std::runtime_error saying why on failure.
  void reserve(std::size_t offset, std::size_t bytes) const;

  // Removes the name (idempotent; the mapping stays valid).
  void unlink();
  // Removes `name` if it exists: for a segment whose creator may have died.
  static void unlink_name(const std::string& name);
  // Removes every name of /dev/shm that starts with `prefix` (a process's
  // own segments, at its end: a peer that created one of them and died
  // before the group removed it leaves it behind otherwise).
  static void unlink_names_starting_with(const std::string& prefix);

  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  ShmSegment(std::string name, int fd, std::byte* data, std::size_t bytes, bool owner);
  void release();

  std::string name_;
  int fd_ = -1;  // kept for reserve()
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool linked_ = false;  // this process created the name and has not removed it
};

}  // namespace ringmend::transport
