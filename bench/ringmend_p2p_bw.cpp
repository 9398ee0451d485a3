// osu_bw between ranks 0 and 1 of the job: a window of non-blocking sends,
// then an acknowledgement, over ringmend's transports (UCX, or shared memory
// with --transport shm) and over MPI.
//
//   ringmend_p2p_bw [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-W WINDOW]
//                   [--impl ringmend|mpi|both] [--transport ucx|shm]
//                   [--timeout SECONDS] [--json FILE]
#include "bench/p2p_bench.hpp"

int main(int argc, char** argv) {
  return ringmend::bench::p2p_main(argc, argv, ringmend::bench::P2PMode::Bandwidth);
}
