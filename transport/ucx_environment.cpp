#include "transport/ucx_environment.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

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
//
// Striping over several NICs (one rank per node, two NICs): UCX 1.13 sends
// an eager message's fragments round the lanes, starting on the first, so
// a message of one segment never leaves the first NIC. Between two nodes
// with two 400 Mbit/s NICs each, one rank per node (ringmend_allreduce,
// 4-16 MiB, whose ring sends pieces of 256 KiB-1 MiB): one NIC 0.041-0.045
// GB/s; both NICs with 2 MiB segments 0.041-0.061 (mostly on one NIC),
// with 256 KiB 0.041-0.061, with 64 KiB 0.069-0.085 (1.7-1.9x, each NIC
// half the bytes); UCX's newer protocols (UCX_PROTO_ENABLE=y), which split
// a message over the lanes whatever its segments, 0.059-0.075. Hence 64 KiB
// segments and as many eager lanes as devices.
void set_ucx_environment_defaults(std::string_view net_devices) {
  set_if_unset("UCX_TLS", "^sm");
  int devices = net_devices.empty() ? 0 : 1;
  for (char c : net_devices) devices += c == ',';
  const bool striped = devices >= 2;
  if (striped) {
    const std::string lanes = std::to_string(std::min(devices, kMaxStripedDevices));
    set_if_unset("UCX_MAX_EAGER_LANES", lanes.c_str());
    set_if_unset("UCX_MAX_RNDV_RAILS", lanes.c_str());
  }
  const char* segment = striped ? "64k" : "2m";
  // The receive segment must not be smaller than the send segment.
  const char* user_tx = std::getenv("UCX_TCP_TX_SEG_SIZE");
  set_if_unset("UCX_TCP_RX_SEG_SIZE", user_tx ? user_tx : segment);
  set_if_unset("UCX_TCP_TX_SEG_SIZE", segment);
  if (!has_rdma_devices()) {
    set_if_unset("UCX_RNDV_THRESH", "inf");
    set_if_unset("UCX_ZCOPY_THRESH", "64k");
  }
}

}  // namespace ringmend::transport
