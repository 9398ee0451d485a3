// Every setting of ringmend, in one place (part of the bottom layer, core/).
//
// `Options` is what a program asks for: each field left empty takes its
// RINGMEND_* environment variable (unless read_environment is false), and
// then the default written in `Settings` below. Options::resolve() does
// this and validates every value in one place: a bad value set in code is
// Error(InvalidArgument) naming the field, a bad variable
// Error(BadEnvironment) naming the variable. The runtime, the tests and the
// benchmarks all take their defaults from `Settings`, so a benchmark measures
// the layout the runtime uses. docs/environment.md lists every variable.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ringmend/core/log.hpp"
#include "ringmend/core/sizes.hpp"

namespace ringmend {

// What a recovery does with spares (Settings::spare_policy).
enum class SparePolicy { Replace, Shrink };
const char* name_of(SparePolicy policy);

// What a loss in the world does to its subgroups (Settings::subgroup_recovery;
// docs/subgroups.md, "Recovery by the step").
//   call  a subgroup whose members all survived, each as far as the
//         others, goes on; one that lost a member ends with MemberLost
//   step  every subgroup made before the loss ends, on every member, at
//         its call or its next one: the application makes them again
//         (spares in the lost members' places) and runs its step again
enum class SubgroupRecovery { Call, Step };
const char* name_of(SubgroupRecovery recovery);

// What the hang detector does with a member it finds stuck
// (Settings::hang_policy; docs/recovery.md, "Stuck members").
//   exclude  kill it and recover as from its death
//   fail     the waiting call fails with Errc::Timeout naming it
enum class HangPolicy { Exclude, Fail };
const char* name_of(HangPolicy policy);

// What the members do with a straggler: a member the others wait for, in
// every call, a large share of their time (Settings::straggler_policy;
// docs/recovery.md, "Stragglers").
//   off      no comparison (no extra call)
//   report   logged, and named in ringmend-run's summary
//   release  released from the job like release(), so that the others go
//            on at their own speed
enum class StragglerPolicy { Off, Report, Release };
const char* name_of(StragglerPolicy policy);

// Which membership backend runs the recoveries (Settings::membership).
//   auto    ULFM under mpirun with fault tolerance; the native membership
//           when srun started the job (docs/membership.md)
//   native  the native membership whenever ULFM is off
//   mpi     MPI's only: under srun, no fault tolerance (as before the
//           native membership existed)
enum class MembershipBackend { Auto, Native, Mpi };
const char* name_of(MembershipBackend backend);

// The resolved settings, with the one set of defaults.
struct Settings {
  // Collectives
  std::size_t chunk_bytes = 256 * KiB;  // RINGMEND_CHUNK_BYTES: pipeline chunk of the flat ring and broadcast
  std::size_t small_bytes = 16 * KiB;   // RINGMEND_SMALL_BYTES: one-shot (latency) path up to this size
  double timeout_seconds = 300;         // RINGMEND_TIMEOUT: one collective, 0 = none
  // A member that neither reaches the collective the others wait in nor
  // shows progress inside one for this long is stuck (docs/recovery.md).
  double hang_timeout_seconds = 60;              // RINGMEND_HANG_TIMEOUT: 0 = no hang detection
  HangPolicy hang_policy = HangPolicy::Exclude;  // RINGMEND_HANG_POLICY: exclude | fail
  // Every `straggler_window` calls the members compare the time each spent
  // waiting in them: a member the others waited for at least
  // `straggler_fraction` of that time, two comparisons in a row, is a
  // straggler (docs/recovery.md).
  StragglerPolicy straggler_policy =
      StragglerPolicy::Off;            // RINGMEND_STRAGGLER_POLICY: off | report | release
  std::size_t straggler_window = 100;  // RINGMEND_STRAGGLER_WINDOW: calls per comparison
  double straggler_fraction = 0.25;    // RINGMEND_STRAGGLER_FRACTION: 0.01 - 1
  // Membership
  double recovery_timeout_seconds = 120;  // RINGMEND_RECOVERY_TIMEOUT
  // The native membership (docs/membership.md): a node whose leader sends
  // no heartbeat for this long is suspected (a node cut or powered off).
  double heartbeat_timeout_seconds = 1;                    // RINGMEND_HEARTBEAT_TIMEOUT
  MembershipBackend membership = MembershipBackend::Auto;  // RINGMEND_MEMBERSHIP: auto | native | mpi
  std::string control_interface;  // RINGMEND_CONTROL_INTERFACE: the native membership's network interface
  double start_timeout_seconds = 120;    // RINGMEND_START_TIMEOUT: MPI_Init to the first epoch, 0 = none
  double finalize_timeout_seconds = 10;  // RINGMEND_FINALIZE_TIMEOUT
  // MPI_Finalize itself, once every member has agreed that all is done.
  double mpi_finalize_timeout_seconds = 0.5;  // RINGMEND_MPI_FINALIZE_TIMEOUT
  // Spares: the last `spares` processes of the job wait inside the Runtime's
  // start until admitted (docs/elastic.md). With policy Replace, a recovery
  // admits as many as members were lost, so the job keeps its size; with
  // Shrink, spares join only when the application asks (grow).
  std::size_t spares = 0;  // RINGMEND_SPARES
  // This process was started after the job (a later srun step): it joins
  // the running job (the native membership's rendezvous) and is admitted
  // like a spare at the members' next call; the job grows by it.
  bool join = false;                                // RINGMEND_JOIN
  SparePolicy spare_policy = SparePolicy::Replace;  // RINGMEND_SPARE_POLICY: replace | shrink
  // The same on every rank, like every setting that decides a protocol.
  SubgroupRecovery subgroup_recovery = SubgroupRecovery::Call;  // RINGMEND_SUBGROUP_RECOVERY: call | step
  // Shared memory inside a node
  bool shm = true;  // RINGMEND_SHM=0: UCX even inside a node
  // The shared-memory pipeline: each rank's buffers, cut per call into
  // `depth` chunks. With shm_tune, the chunk is measured per message size on
  // one node (coll/pipeline_tuner.hpp); the fixed chunk and depth below are
  // used across nodes, and everywhere when either is set (code or
  // environment) or tuning is off.
  std::size_t shm_buffer_bytes = 2 * MiB;   // RINGMEND_SHM_BUFFER_BYTES: pipeline buffers per rank
  bool shm_tune = true;                     // RINGMEND_SHM_TUNE=0: always the fixed chunk and depth
  std::size_t shm_chunk_bytes = 256 * KiB;  // RINGMEND_SHM_CHUNK_BYTES: fixed pipeline chunk
  std::size_t shm_depth = 4;                // RINGMEND_SHM_DEPTH: fixed pipeline depth
  // The point-to-point rings between local ranks (broadcast, catch-up): a
  // pair's ring is mapped when the pair first talks. Streaming 64 KiB - 4 MiB
  // messages on a 2-core AMD EPYC VM, 128 KiB x 8 slots moved 1-4 MiB ~10 %
  // faster than 64 KiB x 4; the runtime keeps the smaller ring, since a node
  // of n ranks has n(n-1) of them (4 x 64 KiB: ~14 MiB for 8 ranks).
  std::size_t shm_p2p_slot_bytes = 64 * KiB;  // RINGMEND_SHM_P2P_SLOT_BYTES: slot of a point-to-point ring
  std::size_t shm_p2p_slots = 4;              // RINGMEND_SHM_P2P_SLOTS: slots per point-to-point ring
  // UCX between nodes: each epoch's worker made ahead, and the previous
  // one's destroyed, by a helper thread of low priority
  // (transport/ucx_context.hpp), not on the way through a recovery.
  bool ucx_workers_ahead = true;  // RINGMEND_UCX_WORKERS_AHEAD=0: every worker made and destroyed inline
  // The NICs of a node, one per rail (RINGMEND_RAIL_DEVICES=eth1,eth2 or
  // mlx5_0:1,mlx5_1:1): the process of launcher local rank L gives UCX
  // device L mod n, so that rail i leaves through NIC i mod n. Empty: the
  // NIC nearest the process (hwloc), or UCX's choice (topo/location.hpp).
  std::vector<std::string> rail_devices;
  // GPU buffers (docs/gpu.md)
  bool nccl = true;  // RINGMEND_NCCL=0: never NCCL; GPU buffers always go through host memory
  bool nccl_shrink =
      false;  // RINGMEND_NCCL_SHRINK=1: after a failure, ncclCommShrink instead of a new communicator
  // Tests on one machine: ranks grouped k by k (in rank order) as if each
  // group were a node of its own, with shared memory inside a group and
  // UCX between groups (jobs without spares; a job with spares groups by host).
  std::size_t test_ranks_per_node = 0;  // RINGMEND_TEST_RANKS_PER_NODE: 0 = the real nodes
  // Diagnostics
  LogLevel log_level = LogLevel::Info;  // RINGMEND_LOG: error | warn | info | debug (core/log.hpp)
  bool verbose = false;                 // RINGMEND_VERBOSE=1: log level debug (when RINGMEND_LOG is unset)
  bool debug_topo = false;              // RINGMEND_DEBUG=topo: print the plan of every epoch
  std::string fault_spec;               // RINGMEND_FAULT (see docs/environment.md)
  std::string fault_record;             // RINGMEND_FAULT_RECORD: file for kill times
};

// What a program asks for; see the top of this file.
struct Options {
  std::optional<std::size_t> chunk_bytes, small_bytes;
  std::optional<double> timeout_seconds, hang_timeout_seconds, recovery_timeout_seconds,
      heartbeat_timeout_seconds, start_timeout_seconds, finalize_timeout_seconds,
      mpi_finalize_timeout_seconds;
  std::optional<std::size_t> spares;
  std::optional<bool> join;
  std::optional<SparePolicy> spare_policy;
  std::optional<SubgroupRecovery> subgroup_recovery;
  std::optional<HangPolicy> hang_policy;
  std::optional<StragglerPolicy> straggler_policy;
  std::optional<std::size_t> straggler_window;
  std::optional<double> straggler_fraction;
  std::optional<MembershipBackend> membership;
  std::optional<std::string> control_interface;
  std::optional<bool> shm;
  std::optional<std::size_t> shm_buffer_bytes, shm_chunk_bytes, shm_depth, shm_p2p_slot_bytes, shm_p2p_slots;
  std::optional<bool> shm_tune;
  std::optional<bool> ucx_workers_ahead;
  std::optional<std::vector<std::string>> rail_devices;
  std::optional<bool> nccl, nccl_shrink;
  std::optional<std::size_t> test_ranks_per_node;
  std::optional<LogLevel> log_level;
  std::optional<bool> verbose, debug_topo;
  std::optional<std::string> fault_spec, fault_record;
  bool read_environment = true;

  // Code first, then the environment, then the defaults; validated.
  Settings resolve() const;
};

// Parsers of environment values, exposed for the unit tests. Each throws
// Error(BadEnvironment) naming `name`.
std::size_t parse_size(const std::string& name, const std::string& value);  // 64K, 1M, 1048576
double parse_seconds(const std::string& name, const std::string& value);
bool parse_bool(const std::string& name, const std::string& value);
LogLevel parse_log_level(const std::string& name, const std::string& value);
SparePolicy parse_spare_policy(const std::string& name, const std::string& value);
SubgroupRecovery parse_subgroup_recovery(const std::string& name, const std::string& value);
HangPolicy parse_hang_policy(const std::string& name, const std::string& value);
StragglerPolicy parse_straggler_policy(const std::string& name, const std::string& value);
double parse_fraction(const std::string& name, const std::string& value);
MembershipBackend parse_membership(const std::string& name, const std::string& value);
// A comma-separated list of 1-16 device names of 1-23 characters
// (letters, digits, '_', '-', '.', ':'), no empty item.
std::vector<std::string> parse_device_list(const std::string& name, const std::string& value);

}  // namespace ringmend
