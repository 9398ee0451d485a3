// osu_bibw between ranks 0 and 1 of the job: both post a window of receives
// and a window of sends at once; the bandwidth of both directions together,
// over ringmend's transports (UCX, or shared memory with --transport shm)
// and over MPI. A ring allreduce sends and receives at once on every rank:
// this, not the one-way bandwidth, bounds it where the CPUs that move the
// bytes are shared by both directions (TCP over loopback, for instance).
//
//   ringmend_p2p_bibw [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-W WINDOW]
//                     [--impl ringmend|mpi|both] [--transport ucx|shm]
//                     [--timeout SECONDS] [--json FILE]
#include "bench/p2p_bench.hpp"

int main(int argc, char** argv) {
  return ringmend::bench::p2p_main(argc, argv, ringmend::bench::P2PMode::BiBandwidth);
}
