#include "transport/ucx_environment.hpp"

#include <cstdlib>
#include <filesystem>

namespace ringmend::transport {
namespace {

bool has_rdma_devices() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
  return !ec && it != std::filesystem::directory_iterator();
}

void set_if_unset(const char* name, const char* value) { ::setenv(name, value, 0); }

}  // namespace

// Over TCP (measured with bench/ringmend_allreduce, _p2p_bw and _p2p_bibw
// between the two nodes of the local Slurm cluster): UCX 1.13's rendezvous
// protocol over TCP and its 8 KiB send segments reach 0.25-0.5 GB/s, eager
// messages 4-6 GB/s one way; the collectives pre-post their receives a
// window ahead, so eager messages arrive expected. Segments of 2 MiB, and
// sending messages above 64 KiB from the caller's buffer (zero-copy eager)
// rather than through a bounce buffer, cut the system calls and copies per
// byte: the ring allreduce, which sends and receives at once, went from
// 1.3 to 1.6-2.0 GB/s at 4-16 MiB with one rank per node, and from 0.8-1.5
// to 1.6-2.1 GB/s with two; one-way streaming of large messages loses
// 10-30%. With RDMA devices present, UCX's own protocol choices stay.
//
// UCX's shared-memory transports have no peer-failure handling, so they are
// never used on ringmend's endpoints (PEER error mode); left in, they still
// cost ~25 ms of interface set-up in every worker, that is in every rebuild
// after a failure. Inside a node ringmend has its own shared memory.
void set_ucx_environment_defaults() {
  set_if_unset("UCX_TLS", "^sm");
  // The receive segment must not be smaller than the send segment.
  const char* user_tx = std::getenv("UCX_TCP_TX_SEG_SIZE");
  set_if_unset("UCX_TCP_RX_SEG_SIZE", user_tx ? user_tx : "2m");
  set_if_unset("UCX_TCP_TX_SEG_SIZE", "2m");
  if (!has_rdma_devices()) {
    set_if_unset("UCX_RNDV_THRESH", "inf");
    set_if_unset("UCX_ZCOPY_THRESH", "64k");
  }
}

}  // namespace ringmend::transport
