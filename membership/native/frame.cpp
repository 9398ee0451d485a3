#include "membership/native/frame.hpp"

#include <cstring>
#include <stdexcept>

namespace ringmend::membership::native {

namespace {

class Writer {
 public:
  template <typename T>
  void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));  // the hosts are little-endian (x86-64, aarch64)
    out_.append(bytes, sizeof(T));
  }
  void put_bytes(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  void put_ids(const std::vector<MemberId>& ids) {
    put(static_cast<std::uint32_t>(ids.size()));
    for (MemberId id : ids) put(id);
  }
  std::string& text() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t n) : data_(data), left_(n) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, data_, sizeof(T));
    data_ += sizeof(T);
    left_ -= sizeof(T);
    return value;
  }
  std::string get_bytes() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(data_, n);
    data_ += n;
    left_ -= n;
    return s;
  }
  std::vector<MemberId> get_ids() {
    const auto n = get<std::uint32_t>();
    need(std::size_t{n} * sizeof(MemberId));
    std::vector<MemberId> ids(n);
    for (auto& id : ids) id = get<MemberId>();
    return ids;
  }
  bool done() const { return left_ == 0; }

 private:
  void need(std::size_t n) const {
    if (n > left_) throw std::runtime_error("control frame: truncated body");
  }
  const char* data_;
  std::size_t left_;
};

void put_ballot(Writer& w, Ballot b) {
  w.put(b.round);
  w.put(b.leader);
}
Ballot get_ballot(Reader& r) {
  Ballot b;
  b.round = r.get<std::uint32_t>();
  b.leader = r.get<MemberId>();
  return b;
}

}  // namespace

const char* to_string(FrameKind kind) {
  switch (kind) {
    case FrameKind::Hello:
      return "HELLO";
    case FrameKind::Heartbeat:
      return "HEARTBEAT";
    case FrameKind::Protocol:
      return "PROTOCOL";
    case FrameKind::Gather:
      return "GATHER";
    case FrameKind::Bye:
      return "BYE";
    case FrameKind::Exchange:
      return "EXCHANGE";
    case FrameKind::Join:
      return "JOIN";
    case FrameKind::Welcome:
      return "WELCOME";
    case FrameKind::Record:
      return "RECORD";
  }
  return "?";
}

std::string encode(const Frame& f) {
  Writer w;
  w.put(std::uint32_t{0});  // the length, filled in below
  w.put(static_cast<std::uint8_t>(f.kind));
  w.put(f.epoch);
  w.put(f.from);
  switch (f.kind) {
    case FrameKind::Hello:
      w.put(f.job_key);
      break;
    case FrameKind::Protocol:
      w.put(static_cast<std::uint8_t>(f.protocol.kind));
      w.put(f.protocol.to);
      put_ballot(w, f.protocol.ballot);
      put_ballot(w, f.protocol.accepted);
      w.put_ids(f.protocol.value);
      break;
    case FrameKind::Gather:
    case FrameKind::Exchange:
      w.put(f.round);
      w.put(f.tag);
      w.put_bytes(f.payload);
      break;
    case FrameKind::Join:
    case FrameKind::Welcome:
    case FrameKind::Record:
      w.put_bytes(f.payload);
      break;
    case FrameKind::Heartbeat:
    case FrameKind::Bye:
      break;
  }
  std::string& s = w.text();
  const auto length = static_cast<std::uint32_t>(s.size() - sizeof(std::uint32_t));
  std::memcpy(s.data(), &length, sizeof length);
  return std::move(s);
}

std::optional<Frame> FrameReader::next() {
  const std::size_t avail = buffer_.size() - offset_;
  std::uint32_t length = 0;
  if (avail < sizeof length) return std::nullopt;
  std::memcpy(&length, buffer_.data() + offset_, sizeof length);
  if (length > kMaxFrameBytes)
    throw std::runtime_error("control frame: " + std::to_string(length) + " bytes");
  if (avail < sizeof length + length) return std::nullopt;
  Reader r(buffer_.data() + offset_ + sizeof length, length);
  Frame f;
  const auto kind = r.get<std::uint8_t>();
  if (kind < 1 || kind > static_cast<std::uint8_t>(FrameKind::Record))
    throw std::runtime_error("control frame: unknown kind " + std::to_string(kind));
  f.kind = static_cast<FrameKind>(kind);
  f.epoch = r.get<std::uint64_t>();
  f.from = r.get<MemberId>();
  switch (f.kind) {
    case FrameKind::Hello:
      f.job_key = r.get<std::uint64_t>();
      break;
    case FrameKind::Protocol: {
      const auto mk = r.get<std::uint8_t>();
      if (mk > static_cast<std::uint8_t>(MessageKind::Commit))
        throw std::runtime_error("control frame: unknown message kind " + std::to_string(mk));
      f.protocol.kind = static_cast<MessageKind>(mk);
      f.protocol.epoch = f.epoch;
      f.protocol.from = f.from;
      f.protocol.to = r.get<MemberId>();
      f.protocol.ballot = get_ballot(r);
      f.protocol.accepted = get_ballot(r);
      f.protocol.value = r.get_ids();
      break;
    }
    case FrameKind::Gather:
    case FrameKind::Exchange:
      f.round = r.get<std::uint64_t>();
      f.tag = r.get<std::uint64_t>();
      f.payload = r.get_bytes();
      break;
    case FrameKind::Join:
    case FrameKind::Welcome:
    case FrameKind::Record:
      f.payload = r.get_bytes();
      break;
    case FrameKind::Heartbeat:
    case FrameKind::Bye:
      break;
  }
  if (!r.done()) throw std::runtime_error("control frame: trailing bytes");
  offset_ += sizeof length + length;
  if (offset_ > 4096 && offset_ * 2 > buffer_.size()) {  // keep the buffer from growing for ever
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return f;
}

}  // namespace ringmend::membership::native
