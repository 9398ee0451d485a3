#include "transport/ucx_channel.hpp"

#include <algorithm>
#include <stdexcept>

#include "ringmend/core/error.hpp"
#include "transport/progress.hpp"
#include "transport/ucx_log.hpp"

namespace ringmend::transport {
struct UcxChannel::Request {
  void* ucx = nullptr;  // UCX's request, null when completed immediately
  OpState state = OpState::Pending;
  std::size_t bytes = 0;
  std::vector<ucp_dt_iov_t> iov;  // must live until completion
  bool is_recv = false;
};

UcxChannel::UcxChannel(UcxContext& context, int rank, int size, std::uint32_t epoch)
    : rank_(rank),
      size_(size),
      epoch_(epoch),
      worker_(context.take_worker()),
      endpoints_(static_cast<std::size_t>(size), nullptr) {}

UcxChannel::~UcxChannel() {
  // What an interrupted call, or a peer that died, left in the worker is
  // expected (abandoned before now: by the call that a failure interrupted).
  const QuietUcxScope quiet(abandoned_ || failed_peer_ >= 0);
  abandon();
  // Now, while the endpoints' error arguments still exist.
  worker_ = UcxWorker{};
}

void UcxChannel::abandon() {
  if (abandoned_) return;
  abandoned_ = true;
  const QuietUcxScope quiet;
  // Cancel what is still posted, force-close endpoints (peers may be dead:
  // a graceful close could wait for them), free the requests.
  for (auto& r : requests_)
    if (r->ucx && r->state == OpState::Pending && r->is_recv) ucp_request_cancel(worker_.get(), r->ucx);
  worker_.close_forced(endpoints_);
  for (auto& r : requests_) {
    if (r->ucx) ucp_request_free(r->ucx);
    r->ucx = nullptr;
  }
}

void UcxChannel::connect(const std::vector<std::vector<std::byte>>& addresses,
                         const std::vector<int>& peers) {
  for (int peer : peers) {
    if (peer == rank_ || endpoints_[static_cast<std::size_t>(peer)]) continue;
    auto arg = std::make_unique<ErrorArg>(ErrorArg{this, peer});
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses[static_cast<std::size_t>(peer)].data());
    // PEER mode: UCX reports a dead peer through the callback instead of
    // leaving operations to it pending forever.
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &UcxChannel::peer_error_cb;
    ep.err_handler.arg = arg.get();
    ucs_status_t st = ucp_ep_create(worker_.get(), &ep, &endpoints_[static_cast<std::size_t>(peer)]);
    error_args_.push_back(std::move(arg));
    // The peer may already be gone (dead, or recovering and so past this
    // epoch): that is a failure to recover from, not an error.
    if (st != UCS_OK) {
      endpoints_[static_cast<std::size_t>(peer)] = nullptr;
      on_peer_error(peer, st);
    }
  }
}

void UcxChannel::peer_error_cb(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* a = static_cast<ErrorArg*>(arg);
  a->channel->on_peer_error(a->peer, status);
}

void UcxChannel::on_peer_error(int peer, ucs_status_t status) {
  if (failed_peer_ >= 0) return;
  failed_peer_ = peer;
  failure_reason_ =
      "connection to rank " + std::to_string(peer) + " failed (" + ucs_status_string(status) + ")";
}

ucp_tag_t UcxChannel::full_tag(int source, std::uint32_t tag) const {
  // [63..48] epoch, [47..32] source rank, [31..0] algorithm tag.
  return (static_cast<ucp_tag_t>(epoch_ & 0xffffu) << 48) |
         (static_cast<ucp_tag_t>(static_cast<std::uint32_t>(source) & 0xffffu) << 32) | tag;
}

UcxChannel::Request* UcxChannel::acquire(std::span<const Piece> pieces) {
  Request* r = requests_.acquire();
  r->ucx = nullptr;
  r->state = OpState::Pending;
  r->bytes = 0;
  r->is_recv = false;
  r->iov.clear();
  for (const Piece& p : pieces) r->iov.push_back(ucp_dt_iov_t{p.data, p.bytes});
  return r;
}

void UcxChannel::release(Request* r) {
  if (r->ucx) ucp_request_free(r->ucx);
  r->ucx = nullptr;
  requests_.release(r);
}

namespace {

void send_done(void* /*request*/, ucs_status_t status, void* user) {
  auto* r = static_cast<UcxChannel::Request*>(user);
  r->state = status == UCS_OK ? OpState::Done : OpState::Failed;
}

void recv_done(void* /*request*/, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* r = static_cast<UcxChannel::Request*>(user);
  if (status == UCS_OK) {
    r->state = OpState::Done;
    r->bytes = info->length;
  } else if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    r->state = OpState::Truncated;
  } else {
    r->state = OpState::Failed;
  }
}

}  // namespace

Channel::Op UcxChannel::send(int peer, std::uint32_t tag, std::span<const Piece> pieces) {
  if (abandoned_) throw Interrupted("transport: channel abandoned after a failure");
  ucp_ep_h ep = endpoints_.at(static_cast<std::size_t>(peer));
  if (!ep)
    throw Interrupted("transport: no connection to rank " + std::to_string(peer) + " (" + failure_reason_ +
                      ")");
  Request* r = acquire(pieces);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  p.cb.send = send_done;
  p.user_data = r;
  p.datatype = ucp_dt_make_iov();
  void* s = ucp_tag_send_nbx(ep, r->iov.data(), r->iov.size(), full_tag(rank_, tag), &p);
  if (s == nullptr)
    r->state = OpState::Done;
  else if (UCS_PTR_IS_ERR(s))
    r->state = OpState::Failed;
  else
    r->ucx = s;
  return r;
}

Channel::Op UcxChannel::recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) {
  if (abandoned_) throw Interrupted("transport: channel abandoned after a failure");
  Request* r = acquire(pieces);
  r->is_recv = true;
  ucp_request_param_t p{};
  // No immediate completion: the callback then always reports the length
  // (UCX 1.13 leaves recv_info unset for some immediately matched messages).
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE |
                   UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = recv_done;
  p.user_data = r;
  p.datatype = ucp_dt_make_iov();
  void* s =
      ucp_tag_recv_nbx(worker_.get(), r->iov.data(), r->iov.size(), full_tag(peer, tag), ~ucp_tag_t{0}, &p);
  if (UCS_PTR_IS_ERR(s)) {
    r->state = UCS_PTR_STATUS(s) == UCS_ERR_MESSAGE_TRUNCATED ? OpState::Truncated : OpState::Failed;
  } else {
    r->ucx = s;
  }
  return r;
}

OpState UcxChannel::test(Op op, std::size_t* bytes) {
  auto* r = static_cast<Request*>(op);
  OpState s = r->state;
  if (s == OpState::Pending) return s;
  if (bytes) *bytes = r->bytes;
  if (s == OpState::Failed && failure_reason_.empty())
    failure_reason_ = "a UCX operation failed (peer unreachable)";
  release(r);
  return s;
}

bool UcxChannel::progress() { return ucp_worker_progress(worker_.get()) != 0; }

}  // namespace ringmend::transport
