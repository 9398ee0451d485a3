#include "membership/address_exchange.hpp"

#include "ulfm/ulfm.hpp"

namespace ringmend::membership {
namespace {

constexpr int kAddressTag = 0x5241;  // "RA"

}  // namespace

bool exchange_addresses(MPI_Comm comm, const std::vector<int>& peers, const std::vector<std::byte>& mine,
                        std::vector<std::vector<std::byte>>& out) {
  out.assign(peers.size(), {});
  std::vector<MPI_Request> sends(peers.size(), MPI_REQUEST_NULL);
  bool ok = true;
  for (std::size_t i = 0; i < peers.size() && ok; ++i)
    ok = MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, peers[i], kAddressTag, comm,
                   &sends[i]) == MPI_SUCCESS;
  for (std::size_t i = 0; i < peers.size() && ok; ++i) {
    // Addresses differ in length: probe for it. A dead peer or a revoked
    // communicator ends the probe with an error (ULFM).
    MPI_Status status;
    int bytes = 0;
    ok = MPI_Probe(peers[i], kAddressTag, comm, &status) == MPI_SUCCESS &&
         MPI_Get_count(&status, MPI_BYTE, &bytes) == MPI_SUCCESS && bytes >= 0;
    if (!ok) break;
    out[i].resize(static_cast<std::size_t>(bytes));
    ok = MPI_Recv(out[i].data(), bytes, MPI_BYTE, peers[i], kAddressTag, comm, MPI_STATUS_IGNORE) ==
         MPI_SUCCESS;
  }
  // After a failure, revoking ends every send still pending (with an
  // error), so the wait below returns and `mine` is no longer in use.
  if (!ok) ulfm::revoke(comm);
  const bool sent =
      MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE) == MPI_SUCCESS;
  return ok && sent;
}

}  // namespace ringmend::membership
