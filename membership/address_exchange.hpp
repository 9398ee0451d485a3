// The UCX addresses of an epoch, fetched from the peers that need them only.
//
// Every member sends its address to each of its remote peers and receives
// theirs, point to point on the control communicator: O(peers) bytes per
// member, not the O(n) of an allgather. It relies on the peer relation being
// symmetric (ring and rail neighbours, recursive-doubling partners), which
// holds for every algorithm of coll/.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace ringmend::membership {

// Returns false when MPI reported a failure (a peer died, the communicator
// was revoked; the communicator is then revoked); `out[i]` is then undefined. On success `out[i]` is
// peers[i]'s address.
bool exchange_addresses(MPI_Comm comm, const std::vector<int>& peers, const std::vector<std::byte>& mine,
                        std::vector<std::vector<std::byte>>& out);

}  // namespace ringmend::membership
