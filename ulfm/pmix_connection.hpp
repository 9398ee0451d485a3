// Whether this process's connection to its PMIx server (PRRTE's daemon)
// sends without delay. PMIx carries the failure notices of ULFM; OpenPMIx
// never sets TCP_NODELAY on that TCP connection, so Nagle's algorithm can
// hold a notice for the rank's delayed acknowledgement of an earlier
// message (up to 40 ms on Linux). scripts/bootstrap.sh patches the Open
// MPI it builds; an Open MPI built elsewhere may lack the fix, and the
// runtime says so. A process sees only its own end of the connection; the
// server's end comes from the same build of PMIx. No MPI needed.
#pragma once

#include <optional>

#include "ulfm/launch_environment.hpp"

namespace ringmend::ulfm {

// The TCP port of the PMIx server this process was given
// (PMIX_SERVER_URI41 and older: "NSPACE.RANK;tcp4://HOST:PORT"); nothing
// when there is none or it is not TCP.
std::optional<int> pmix_server_port(const EnvLookup& env = process_environment());

enum class PmixConnection {
  NotFound,  // no connected TCP socket of this process has that peer port
  NoDelay,   // found, TCP_NODELAY set
  Nagle,     // found, TCP_NODELAY not set: small messages may wait
};

// Looks at this process's open sockets (/proc/self/fd) for a TCP
// connection to `server_port` and whether it sends without delay.
PmixConnection pmix_connection_state(int server_port);

}  // namespace ringmend::ulfm
