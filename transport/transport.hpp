// transport/ — moving bytes between ranks (depends on core/ only).
//
// What this folder offers the layers above:
//   * Channel (channel.hpp): the small non-blocking point-to-point interface
//     every algorithm runs on; UcxChannel (ucx_channel.hpp) implements it over
//     UCX with peer-failure detection, ShmChannel (shm_channel.hpp) over
//     shared-memory rings between the ranks of one node, RoutedChannel
//     (routed_channel.hpp) puts the two behind one Channel.
//   * ShmNode (shm_node.hpp): the ranks of one node on one shared-memory
//     segment (shm_segment.hpp), with direct liveness checks (peer_watch.hpp).
//   * Fabric (fabric.hpp): the channels of one epoch, the one place that
//     chooses a channel per peer; where a GPU channel plugs in.
//   * progress.hpp: how every wait drives progress and polls for failures
//     (WaitContext), and the two ways a wait ends early (Interrupted,
//     Mismatch); backoff.hpp: the one spin / yield / poll policy.
//   * UcxContext (ucx_context.hpp): the process's UCP context; each epoch's
//     worker made ahead and the last one's destroyed behind, on a helper
//     thread of the lowest priority.
//   * ucx_environment.hpp: ringmend's defaults for UCX's variables, set once.
//   * ucx_log.hpp: what UCX says of a dead peer or of a worker abandoned
//     after a failure goes to ringmend's debug log, not stderr.
#pragma once

#include "transport/backoff.hpp"
#include "transport/channel.hpp"
#include "transport/fabric.hpp"
#include "transport/progress.hpp"
#include "transport/routed_channel.hpp"
#include "transport/shm_channel.hpp"
#include "transport/shm_node.hpp"
#include "transport/ucx_channel.hpp"
#include "transport/ucx_context.hpp"
#include "transport/ucx_environment.hpp"
#include "transport/ucx_log.hpp"
