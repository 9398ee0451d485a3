// The application's state that follows membership changes (docs/elastic.md).
//
// The application registers its state once, under names: buffers, or a
// pair of callbacks (save to bytes, load from bytes). When spares are
// admitted, one survivor sends every entry to the joiners over the new
// epoch's data path; a joiner keeps what it received until the application
// registers the same names, and then restores each entry at once. So the
// same registration code, run right after the Runtime starts, restores a
// joiner's state before its first call: it resumes at the survivors' step.
// Private to runtime/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "runtime/received_bytes.hpp"

namespace ringmend {

class StateRegistry {
 public:
  using Save = std::function<std::vector<std::byte>()>;
  using Load = std::function<void(std::span<const std::byte>)>;

  // Throws Error(InvalidArgument) for an empty or repeated name, a null
  // buffer, or (on a joiner) a size that differs from the survivors'.
  void add(const std::string& name, void* data, std::size_t bytes);
  void add(const std::string& name, Save save, Load load);
  bool remove(const std::string& name);

  // A survivor's side: every entry, in registration order (callbacks are
  // saved now), and the description the joiners receive first.
  struct Part {
    std::string name;
    void* data = nullptr;
    std::size_t bytes = 0;
    std::vector<std::byte> saved;  // a callback entry's bytes (data points here)
  };
  std::vector<Part> parts() const;
  struct Description {
    std::uint64_t next_seq = 0;  // the joiners' next collective call
    std::vector<std::pair<std::string, std::uint64_t>> entries;
  };
  static std::vector<std::byte> describe(const std::vector<Part>& parts, std::uint64_t next_seq);
  // Throws Error(Internal) for bytes that are not a description.
  static Description parse(std::span<const std::byte> bytes);

  // A joiner's side: the buffer registered under `name` when it has
  // exactly `bytes` (the entry is then received straight into it), else
  // null.
  void* buffer_for(const std::string& name, std::size_t bytes) const;
  // An entry received elsewhere, restored when (or if already) registered.
  void stage(const std::string& name, ReceivedBytes bytes);
  // Names received but not registered (yet).
  std::vector<std::string> unclaimed() const;

 private:
  struct Entry {
    std::string name;
    void* data = nullptr;
    std::size_t bytes = 0;
    Save save;
    Load load;
  };
  void check_new(const std::string& name) const;
  void insert(Entry entry);
  void restore(const Entry& entry, std::span<const std::byte> bytes) const;
  std::vector<Entry> entries_;
  std::map<std::string, ReceivedBytes> staged_;
};

}  // namespace ringmend
