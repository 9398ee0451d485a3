#include "runtime/state_registry.hpp"

#include <algorithm>
#include <cstring>

#include "ringmend/core/error.hpp"

namespace ringmend {
namespace {

// "rmst", then the joiners' next call, the entry count, and per entry the
// name's length, the name and the byte count.
constexpr std::uint32_t kMagic = 0x74736d72;

template <class T>
void put(std::vector<std::byte>& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

template <class T>
T take(std::span<const std::byte>& in) {
  if (in.size() < sizeof(T)) throw Error(Errc::Internal, "state transfer: a truncated description");
  T v;
  std::memcpy(&v, in.data(), sizeof v);
  in = in.subspan(sizeof v);
  return v;
}

}  // namespace

void StateRegistry::check_new(const std::string& name) const {
  if (name.empty() ||
      std::any_of(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.name == name; }))
    throw Error(Errc::InvalidArgument,
                "register_state: the name '" + name + "' is empty or already registered");
}

void StateRegistry::add(const std::string& name, void* data, std::size_t bytes) {
  if (data == nullptr && bytes > 0)
    throw Error(Errc::InvalidArgument,
                "register_state('" + name + "'): null buffer with " + std::to_string(bytes) + " bytes");
  check_new(name);
  insert({name, data, bytes, {}, {}});
}

void StateRegistry::add(const std::string& name, Save save, Load load) {
  if (!save || !load)
    throw Error(Errc::InvalidArgument, "register_state('" + name + "'): both callbacks are needed");
  check_new(name);
  insert({name, nullptr, 0, std::move(save), std::move(load)});
}

// What a joiner received under this name is restored at once.
void StateRegistry::insert(Entry e) {
  if (auto it = staged_.find(e.name); it != staged_.end()) {
    restore(e, it->second.bytes());
    staged_.erase(it);
  }
  entries_.push_back(std::move(e));
}

bool StateRegistry::remove(const std::string& name) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.name == name; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

void StateRegistry::restore(const Entry& e, std::span<const std::byte> bytes) const {
  if (e.load) {
    e.load(bytes);
    return;
  }
  if (bytes.size() != e.bytes)
    throw Error(Errc::InvalidArgument, "register_state('" + e.name + "'): this joiner registers " +
                                           std::to_string(e.bytes) + " bytes, the survivors sent " +
                                           std::to_string(bytes.size()));
  if (!bytes.empty()) std::memcpy(e.data, bytes.data(), bytes.size());
}

std::vector<StateRegistry::Part> StateRegistry::parts() const {
  std::vector<Part> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) {
    Part p{e.name, e.data, e.bytes, {}};
    if (e.save) {
      p.saved = e.save();
      p.data = p.saved.data();
      p.bytes = p.saved.size();
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::byte> StateRegistry::describe(const std::vector<Part>& parts, std::uint64_t next_seq) {
  std::vector<std::byte> out;
  put(out, kMagic);
  put(out, next_seq);
  put(out, static_cast<std::uint32_t>(parts.size()));
  for (const Part& p : parts) {
    put(out, static_cast<std::uint32_t>(p.name.size()));
    const auto* n = reinterpret_cast<const std::byte*>(p.name.data());
    out.insert(out.end(), n, n + p.name.size());
    put(out, static_cast<std::uint64_t>(p.bytes));
  }
  return out;
}

StateRegistry::Description StateRegistry::parse(std::span<const std::byte> in) {
  if (take<std::uint32_t>(in) != kMagic) throw Error(Errc::Internal, "state transfer: not a description");
  Description d;
  d.next_seq = take<std::uint64_t>(in);
  const auto count = take<std::uint32_t>(in);
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto length = take<std::uint32_t>(in);
    if (in.size() < length) throw Error(Errc::Internal, "state transfer: a truncated description");
    std::string name(reinterpret_cast<const char*>(in.data()), length);
    in = in.subspan(length);
    d.entries.emplace_back(std::move(name), take<std::uint64_t>(in));
  }
  return d;
}

void* StateRegistry::buffer_for(const std::string& name, std::size_t bytes) const {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.name == name; });
  return it != entries_.end() && !it->load && it->bytes == bytes && bytes > 0 ? it->data : nullptr;
}

void StateRegistry::stage(const std::string& name, ReceivedBytes bytes) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.name == name; });
  if (it != entries_.end())
    restore(*it, bytes.bytes());
  else
    staged_[name] = std::move(bytes);
}

std::vector<std::string> StateRegistry::unclaimed() const {
  std::vector<std::string> names;
  for (const auto& [name, bytes] : staged_) names.push_back(name);
  return names;
}

}  // namespace ringmend
