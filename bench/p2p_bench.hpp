// Point-to-point benchmarks between ranks 0 and 1 of a job, in the formats
// of osu_bw / osu_bibw (windowed streaming, MB/s) and osu_latency (ping-pong, half the
// round trip), over ringmend's own transport and over MPI's point-to-point.
#pragma once

namespace ringmend::bench {

// Bandwidth: osu_bw (rank 0 to rank 1); BiBandwidth: osu_bibw (both ways at
// once, the sum reported); Latency: osu_latency.
enum class P2PMode { Bandwidth, BiBandwidth, Latency };

// The whole program: options, MPI start-up, measurement, output. Returns the
// process exit status.
int p2p_main(int argc, char** argv, P2PMode mode);

}  // namespace ringmend::bench
