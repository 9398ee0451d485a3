// transport/ — moving bytes between ranks.
//
// What this folder offers the runtime:
//   * Channel (channel.hpp): the small non-blocking point-to-point interface
//     every algorithm runs on; UcxChannel (ucx_channel.hpp) implements it over
//     UCX with peer-failure detection, ShmChannel (shm_channel.hpp) over
//     shared-memory rings between the ranks of one node.
//   * RoutedChannel (routed_channel.hpp): shared memory to the ranks of this
//     node, UCX to the others, behind one Channel.
//   * ShmNode (shm_node.hpp): the ranks of one node on one shared-memory
//     segment (shm_segment.hpp), with direct liveness checks (peer_watch.hpp).
//   * The algorithms, one per header: ring_allreduce.hpp, ring_stream.hpp
//     (many small ring allreduces in flight at once), chain_broadcast.hpp,
//     recursive_doubling.hpp, and hier_allreduce.hpp (shared memory inside a
//     node, rails of UCX rings across nodes, a one-shot latency path).
//   * reduce_kernels.hpp: the vectorisable element-wise reductions.
//   * progress.hpp: how every wait drives progress and polls for failures
//     (WaitContext), and the two ways a wait ends early (Interrupted, Mismatch).
#pragma once

#include "transport/chain_broadcast.hpp"
#include "transport/channel.hpp"
#include "transport/hier_allreduce.hpp"
#include "transport/progress.hpp"
#include "transport/recursive_doubling.hpp"
#include "transport/reduce_kernels.hpp"
#include "transport/ring_allreduce.hpp"
#include "transport/ring_stream.hpp"
#include "transport/routed_channel.hpp"
#include "transport/shm_channel.hpp"
#include "transport/shm_node.hpp"
#include "transport/ucx_channel.hpp"
#include "transport/wire_header.hpp"
