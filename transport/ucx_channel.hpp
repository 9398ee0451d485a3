// Channel over UCX (UCP tag matching), with peer-failure error handling.
//
// Lifecycle, one per communicator epoch:
//   UcxContext ctx;                       // once per process (ucx_context.hpp)
//   UcxChannel ch(ctx, rank, size, epoch); // a worker of its own, from ctx
//   bytes = ch.local_address();           // exchanged over MPI by the caller
//   ch.connect(all_addresses, peers);     // endpoints to the peers it talks to
// A new worker per epoch drops every message of the previous epoch, so a
// re-executed collective never matches stale data.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/channel.hpp"
#include "transport/request_pool.hpp"
#include "transport/ucx_context.hpp"

namespace ringmend::transport {

class UcxChannel final : public Channel {
 public:
  UcxChannel(UcxContext& context, int rank, int size, std::uint32_t epoch);
  ~UcxChannel() override;
  UcxChannel(const UcxChannel&) = delete;
  UcxChannel& operator=(const UcxChannel&) = delete;

  // This worker's address, to be sent to the other ranks.
  std::vector<std::byte> local_address() const { return worker_.address(); }

  // Creates endpoints to `peers`; `addresses[r]` is rank r's local_address().
  void connect(const std::vector<std::vector<std::byte>>& addresses, const std::vector<int>& peers);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Op send(int peer, std::uint32_t tag, std::span<const Piece> pieces) override;
  Op recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) override;
  OpState test(Op op, std::size_t* bytes) override;
  bool progress() override;
  void abandon() override;
  bool peer_failed() const override { return failed_peer_ >= 0; }
  std::string failure_reason() const override { return failure_reason_; }

  struct Request;  // bookkeeping of one outstanding operation

 private:
  ucp_tag_t full_tag(int source, std::uint32_t tag) const;
  Request* acquire(std::span<const Piece> pieces);
  void release(Request* r);
  void on_peer_error(int peer, ucs_status_t status);
  static void peer_error_cb(void* arg, ucp_ep_h ep, ucs_status_t status);

  int rank_, size_;
  std::uint32_t epoch_;
  UcxWorker worker_;
  std::vector<ucp_ep_h> endpoints_;  // by rank; null where not connected
  struct ErrorArg {
    UcxChannel* channel;
    int peer;
  };
  std::vector<std::unique_ptr<ErrorArg>> error_args_;
  RequestPool<Request> requests_;
  bool abandoned_ = false;
  int failed_peer_ = -1;
  std::string failure_reason_;
};

}  // namespace ringmend::transport
