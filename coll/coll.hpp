// coll/ — the collective algorithms (depends on transport/ and core/).
//
// What this folder offers the layers above:
//   * algorithm.hpp: what an algorithm is (when it applies, the peers it
//     needs, whether a call can end on some ranks only), and what it runs
//     over: coll::Layout (the epoch's plan in ranks) and coll::Channels;
//   * one header per algorithm: ring_allreduce.hpp, recursive_doubling.hpp,
//     shm_allreduce.hpp (one-shot and pipelined, shared memory inside a node
//     and rails across), chain_broadcast.hpp, ring_allgather.hpp (even
//     and uneven blocks), ring_reduce_scatter.hpp, pairwise_alltoall.hpp;
//     ring_stream.hpp is the non-blocking ring the pipelined path runs
//     between nodes;
//   * direct_transfer.hpp: one buffer from one rank straight to a few
//     others (the state a joiner receives);
//   * selector.hpp: every algorithm in order of preference, the choice per
//     call, and the peers an epoch must connect;
//   * wire_header.hpp: the header every call opens with (one builder, one
//     check), ring.hpp (positions, neighbours, the ring schedule),
//     ring_pass.hpp (blocks passed along the ring, for the block rings),
//     attempt.hpp (abandon the channel when an algorithm fails),
//     reduce_kernels.hpp (the element-wise reductions).
// A new algorithm: a header and source here, and a line in selector.cpp.
#pragma once

#include "coll/algorithm.hpp"
#include "coll/chain_broadcast.hpp"
#include "coll/direct_transfer.hpp"
#include "coll/pairwise_alltoall.hpp"
#include "coll/recursive_doubling.hpp"
#include "coll/reduce_kernels.hpp"
#include "coll/ring_allgather.hpp"
#include "coll/ring_allreduce.hpp"
#include "coll/ring_pass.hpp"
#include "coll/ring_reduce_scatter.hpp"
#include "coll/ring_stream.hpp"
#include "coll/selector.hpp"
#include "coll/shm_allreduce.hpp"
#include "coll/wire_header.hpp"
