// Recycled operation records of a channel: no allocation per message once
// warmed up, and stable addresses (they are the channel's Op handles).
#pragma once

#include <memory>
#include <vector>

namespace ringmend::transport {

template <class Request>
class RequestPool {
 public:
  // A record for a new operation (the caller resets its fields).
  Request* acquire() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<Request>());
      return all_.back().get();
    }
    Request* r = free_.back();
    free_.pop_back();
    return r;
  }
  void release(Request* r) { free_.push_back(r); }

  // Every record ever handed out, in use or not.
  auto begin() { return all_.begin(); }
  auto end() { return all_.end(); }

 private:
  std::vector<std::unique_ptr<Request>> all_;
  std::vector<Request*> free_;
};

}  // namespace ringmend::transport
