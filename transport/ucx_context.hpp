// The process's UCP context, and the workers it gives each epoch's
// UcxChannel.
//
// Every epoch has a worker of its own (ucx_channel.hpp says why), so a
// recovery across nodes used to create one (1.5-4 ms on a 2-core VM, up to
// 17 when the node is busy) and destroy the previous epoch's (1.5-4.5 ms),
// both on the way from the failure to the first collective. Neither needs
// to be there: with `workers_ahead`, a helper thread makes the next epoch's
// worker, and destroys the channels of past epochs handed to it, once the
// new epoch is in use (epoch_in_use(): its first collective done), so that
// its work does not compete with the recovery's for the cores. It runs at
// the lowest priority (nice 19): where every core is busy it only uses
// what the ranks leave, and a worker that is not ready when an epoch needs
// it is made on the spot, as before.
//
// UCP allows it when the context is shared by workers on several threads
// (mt_workers_shared, thread mode MULTI) and each worker is used by one
// thread at a time (UCS_THREAD_MODE_SERIALIZED). A UCX built without
// thread support reports another mode: then nothing is made ahead and
// every worker is created and destroyed inline.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace ringmend::transport {

class UcxChannel;

// One UCP worker and its address (RAII). Empty when default-made or moved
// from.
class UcxWorker {
 public:
  UcxWorker() = default;
  explicit UcxWorker(ucp_context_h context);
  ~UcxWorker();
  UcxWorker(UcxWorker&& other) noexcept;
  UcxWorker& operator=(UcxWorker&& other) noexcept;
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h get() const { return worker_; }
  explicit operator bool() const { return worker_ != nullptr; }
  // What a peer needs to connect (sent over MPI by the caller).
  const std::vector<std::byte>& address() const { return address_; }
  // Force-closes this worker's `endpoints` (peers may be dead: a graceful
  // close could wait for them), progressing the worker for at most 200 ms,
  // and sets each to null.
  void close_forced(std::span<ucp_ep_h> endpoints) const;
  // UCP workers of this process not destroyed yet (every UcxWorker's):
  // what a test checks when no leak report is on.
  static int live();

 private:
  void destroy();

  ucp_worker_h worker_ = nullptr;
  std::vector<std::byte> address_;
};

class UcxContext {
 public:
  // `net_device`: the UCX network device(s) to use (UCX_NET_DEVICES), unless
  // the user set one; several, comma-separated, are striped over
  // (ucx_environment.hpp sets how); empty leaves the choice to UCX. `workers_ahead`: a
  // helper thread makes workers ahead and closes old channels (above).
  explicit UcxContext(const std::string& net_device = {}, bool workers_ahead = true);
  // Stops the helper, then destroys what it still holds.
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;
  ucp_context_h get() const { return context_; }

  // A worker for a new channel: the one made ahead if it is ready, else one
  // made now. Throws ringmend::Error when UCX cannot make one.
  UcxWorker take_worker();
  // Has a worker made ahead (the helper starts on the first take_worker()
  // otherwise); a spare calls it before it waits to be admitted.
  void prepare_worker();
  // Destroys `channel` on the helper thread (once the next epoch is in
  // use), or now without one. The channel must no longer be used by anyone.
  void close_later(std::unique_ptr<UcxChannel> channel) noexcept;
  // The epoch that took the last worker is in use: the helper may make the
  // next one and close old channels now. Cheap when there is nothing to
  // release (one atomic load): called after every collective.
  void epoch_in_use() noexcept;
  // Whether workers are made ahead (asked for, and UCX is thread-safe).
  bool workers_ahead() const { return helper_allowed_; }
  // What the helper has done so far (for tests and benchmarks).
  struct HelperCounts {
    std::size_t made_ahead = 0;    // workers made ahead
    std::size_t taken_ready = 0;   // ... of which handed out
    std::size_t closed_later = 0;  // channels destroyed on the helper
  };
  HelperCounts helper_counts() const;

 private:
  struct Helper;
  // Started on first use, held (see epoch_in_use()) unless asked otherwise;
  // null: none.
  Helper* helper(bool held_at_start = true) noexcept;

  ucp_context_h context_ = nullptr;
  bool helper_allowed_ = false;
  mutable std::mutex helper_start_;
  std::unique_ptr<Helper> helper_;
  bool helper_failed_ = false;
  std::atomic<bool> settle_pending_{false};  // a worker was taken since the last epoch_in_use()
};

}  // namespace ringmend::transport
