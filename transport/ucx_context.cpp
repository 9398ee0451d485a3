#include "transport/ucx_context.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#include "ringmend/core/error.hpp"
#include "transport/ucx_channel.hpp"
#include "transport/ucx_log.hpp"

namespace ringmend::transport {
namespace {

using Clock = std::chrono::steady_clock;

void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) throw Error(Errc::Internal, std::string("UCX: ") + what + ": " + ucs_status_string(s));
}

std::atomic<int> live_workers{0};

}  // namespace

int UcxWorker::live() { return live_workers.load(); }

void UcxWorker::destroy() {
  if (!worker_) return;
  ucp_worker_destroy(std::exchange(worker_, nullptr));
  live_workers.fetch_sub(1);
}

UcxWorker::UcxWorker(ucp_context_h context) {
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Made on one thread (the helper) and used on another, one at a time.
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  check(ucp_worker_create(context, &wp, &worker_),
        "ucp_worker_create (check the UCX_* environment variables; `ucx_info -c` lists them)");
  live_workers.fetch_add(1);
  ucp_address_t* addr = nullptr;
  std::size_t len = 0;
  if (ucs_status_t s = ucp_worker_get_address(worker_, &addr, &len); s != UCS_OK) {
    destroy();
    check(s, "ucp_worker_get_address");
  }
  address_.assign(reinterpret_cast<std::byte*>(addr), reinterpret_cast<std::byte*>(addr) + len);
  ucp_worker_release_address(worker_, addr);
}

UcxWorker::~UcxWorker() { destroy(); }

UcxWorker::UcxWorker(UcxWorker&& other) noexcept
    : worker_(std::exchange(other.worker_, nullptr)), address_(std::move(other.address_)) {}

UcxWorker& UcxWorker::operator=(UcxWorker&& other) noexcept {
  if (this != &other) {
    destroy();
    worker_ = std::exchange(other.worker_, nullptr);
    address_ = std::move(other.address_);
  }
  return *this;
}

void UcxWorker::close_forced(std::span<ucp_ep_h> endpoints) const {
  std::vector<void*> closing;
  for (ucp_ep_h& ep : endpoints) {
    if (!ep) continue;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(std::exchange(ep, nullptr), &p);
    if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  for (void* req : closing) {
    while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline)
      ucp_worker_progress(worker_);
    ucp_request_free(req);
  }
}

// The helper thread: keeps one worker ready, destroys the channels given
// to it. It sleeps on a condition variable while there is nothing to do.
struct UcxContext::Helper {
  Helper(ucp_context_h ctx, bool held_at_start)
      : context(ctx), held(held_at_start), thread([this] { loop(); }) {}
  ~Helper() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    thread.join();
    // What it did not get to: closed here, before the context goes.
    closing.clear();
    ready = UcxWorker{};
  }

  void loop() {
    // The lowest priority, for this thread only (Linux applies nice per
    // thread): its work must never hold up the ranks'.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || (!held && (!closing.empty() || (wanted && !ready))); });
      if (stopping) return;
      if (!closing.empty()) {
        std::vector<std::unique_ptr<UcxChannel>> batch = std::move(closing);
        closing.clear();
        lock.unlock();
        const std::size_t closed = batch.size();
        batch.clear();  // each channel's destructor destroys its worker
        lock.lock();
        counts.closed_later += closed;
        continue;
      }
      lock.unlock();
      UcxWorker made;
      try {
        made = UcxWorker(context);
      } catch (const std::exception&) {
        // Made on the spot when needed, where the error reaches the caller.
      }
      lock.lock();
      if (!made) {
        wanted = false;  // not again until one is taken
        continue;
      }
      ++counts.made_ahead;
      ready = std::move(made);  // only this thread fills it, and it was empty
    }
  }

  ucp_context_h context;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool held;           // an epoch is being set up: wait until it is in use
  bool wanted = true;  // keep a worker ready
  UcxWorker ready;
  HelperCounts counts;
  std::vector<std::unique_ptr<UcxChannel>> closing;
  std::thread thread;  // last: started once the rest is set
};

UcxContext::UcxContext(const std::string& net_device, bool workers_ahead) {
  filter_ucx_log();
  ucp_config_t* config = nullptr;
  // UCX's variables (and ringmend's defaults for them, ucx_environment.hpp)
  // are read here, from the environment.
  check(ucp_config_read(nullptr, nullptr, &config), "reading configuration");
  if (!net_device.empty() && std::getenv("UCX_NET_DEVICES") == nullptr)
    ucp_config_modify(config, "NET_DEVICES", net_device.c_str());
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  // Workers on more than one thread (the helper's and the ranks'); without
  // the helper, UCX keeps its context free of locks as before.
  params.mt_workers_shared = workers_ahead ? 1 : 0;
  ucs_status_t s = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check(s, "ucp_init (check the UCX_* environment variables; `ucx_info -c` lists them)");
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_THREAD_MODE;
  helper_allowed_ = workers_ahead && ucp_context_query(context_, &attr) == UCS_OK &&
                    attr.thread_mode == UCS_THREAD_MODE_MULTI;
}

UcxContext::~UcxContext() {
  helper_.reset();
  if (context_) ucp_cleanup(context_);
}

UcxContext::Helper* UcxContext::helper(bool held_at_start) noexcept {
  if (!helper_allowed_) return nullptr;
  // Started at most once; a communicator's calls may run on a thread of
  // their own (runtime/call_queue.hpp).
  std::lock_guard lock(helper_start_);
  if (!helper_ && !helper_failed_) {
    try {
      helper_ = std::make_unique<Helper>(context_, held_at_start);
    } catch (const std::exception&) {
      helper_failed_ = true;  // no thread to be had: everything inline
    }
  }
  return helper_.get();
}

UcxWorker UcxContext::take_worker() {
  Helper* h = helper();
  if (!h) return UcxWorker(context_);
  UcxWorker worker;
  {
    std::lock_guard lock(h->mutex);
    if (h->ready) {
      worker = std::move(h->ready);
      ++h->counts.taken_ready;
    }
    h->wanted = true;  // the next one, once the epoch is in use
    h->held = true;
  }
  settle_pending_.store(true, std::memory_order_release);
  if (!worker) worker = UcxWorker(context_);
  return worker;
}

void UcxContext::prepare_worker() { helper(false); }  // makes one as it starts

void UcxContext::epoch_in_use() noexcept {
  if (!settle_pending_.load(std::memory_order_acquire)) return;  // the common case: one load
  settle_pending_.store(false, std::memory_order_relaxed);
  Helper* h = helper();
  if (!h) return;
  {
    std::lock_guard lock(h->mutex);
    h->held = false;
  }
  h->wake.notify_one();
}

void UcxContext::close_later(std::unique_ptr<UcxChannel> channel) noexcept {
  Helper* h = channel ? helper() : nullptr;
  if (!h) return;  // destroyed here, as `channel` goes
  {
    std::lock_guard lock(h->mutex);
    try {
      h->closing.push_back(std::move(channel));
    } catch (const std::bad_alloc&) {
      // destroyed here
    }
  }
  h->wake.notify_one();
}

UcxContext::HelperCounts UcxContext::helper_counts() const {
  std::lock_guard start(helper_start_);
  if (!helper_) return {};
  std::lock_guard lock(helper_->mutex);
  return helper_->counts;
}

}  // namespace ringmend::transport
