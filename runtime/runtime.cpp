// The Runtime: MPI start-up and a bounded shutdown.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "membership/epoch_builder.hpp"
#include "membership/native/bootstrap.hpp"
#include "membership/native/control_net.hpp"
#include "membership/native/join.hpp"
#include "membership/native/native_control.hpp"
#include "ringmend/core/outcome.hpp"
#include "runtime/communicator_impl.hpp"
#include "runtime/outcome_channel.hpp"
#include "runtime/watchdog.hpp"
#include "transport/shm_segment.hpp"
#include "transport/ucx_environment.hpp"
#include "ulfm/launch_environment.hpp"
#include "ulfm/pmix_connection.hpp"

namespace ringmend {

struct Runtime::Impl {
  Settings settings;
  bool we_initialized_mpi = false;
  bool fault_tolerant = false;
  std::string ft_status;
  std::unique_ptr<transport::UcxContext> ucx;
  // The native membership, when it runs the recoveries (a job started by
  // srun); null under ULFM or without fault tolerance.
  std::shared_ptr<membership::native::SharedGroup> group;
  // Where this process published its record for joiners (join.hpp); empty
  // when it did not.
  std::string rendezvous_dir;
  std::unique_ptr<Communicator> world;
  // What this rank tells its launcher (ringmend/core/outcome.hpp).
  int outcome_fd = -1;
  int recoveries = 0;
  std::vector<int> lost;
  // Bounds the start; a spare stops it while it waits to be admitted.
  std::optional<Watchdog> start_watchdog;
};

Runtime::Runtime(int* argc, char*** argv, Options options, std::vector<StateBuffer> state)
    : impl_(std::make_unique<Impl>()) {
  // The one error boundary of start-up: whatever a lower layer throws
  // reaches the caller as a ringmend::Error.
  try {
    impl_->settings = options.resolve();
    impl_->outcome_fd = outcome_fd_from_environment();
    // From here a death is a ringmend program's: one during MPI_Init is a
    // start that failed (ringmend-run's verdict), not an unknown program's.
    tell_launcher(impl_->outcome_fd, std::string(outcome::kRuntime) + "=1");
    const double limit = impl_->settings.start_timeout_seconds;
    impl_->start_watchdog.emplace(
        limit, impl_->outcome_fd, LogLevel::Error,
        "start-up did not complete within " + seconds_text(limit) +
            " (RINGMEND_START_TIMEOUT): a process of the job probably died while "
            "MPI started, and MPI did not report it; this process ends with status " +
            std::to_string(outcome::kStartTimeoutStatus) + ". Start the job again.",
        outcome::kStartTimeout, outcome::kStartTimeoutStatus);
    start(argc, argv, state);
    impl_->start_watchdog.reset();
  } catch (const Error& e) {
    if (!caused_by_input(e.code()))
      log(LogLevel::Error, std::string("start-up failed (") + to_string(e.code()) + "): " + e.what());
    throw;
  } catch (const std::exception& e) {
    log(LogLevel::Error, std::string("start-up failed: ") + e.what());
    throw Error(Errc::Internal, std::string("start-up: ") + e.what());
  }
  tell_launcher(impl_->outcome_fd, std::string(outcome::kStarted) + "=1");
}

// What this process published for joiners (its rendezvous record), for a
// watchdog that ends it before close_and_finalize() withdraws it.
std::vector<std::string> published_records(Runtime::Impl& impl) {
  if (!impl.group || impl.rendezvous_dir.empty()) return {};
  return {membership::native::record_path(impl.rendezvous_dir,
                                          impl.group->with([](auto& g) { return g.self(); }))};
}

// The end of every process: transports closed, the names of the segments
// it led removed (a local peer may have created one before dying), and
// MPI_Finalize, bounded when `bounded` (its watchdog exits with `status`).
void close_and_finalize(Runtime::Impl& impl, bool bounded, const std::string& why_bounded, int status) {
  // A released member does not finalize MPI: in a fault-tolerant Open MPI,
  // MPI_Finalize shrinks MPI_COMM_WORLD, which waits for every process of
  // the job, and a released process is to leave now. Its end is, to MPI, a
  // process that ended, which the members left behind no longer talk to.
  const bool finalize = !impl.world || !impl.world->left();
  impl.world.reset();
  if (impl.group) {
    if (!impl.rendezvous_dir.empty())
      membership::native::withdraw_record(impl.rendezvous_dir,
                                          impl.group->with([](auto& g) { return g.self(); }));
    impl.group->leave();  // the peers are told: this end is no failure
    impl.group.reset();
  }
  impl.ucx.reset();
  transport::ShmSegment::unlink_names_starting_with(membership::segment_prefix(static_cast<int>(::getpid())));
  if (!finalize) {
    log(LogLevel::Debug, "transports closed; released from the job: no MPI_Finalize");
    return;
  }
  log(LogLevel::Debug, "transports closed; MPI_Finalize");
  if (!impl.we_initialized_mpi) return;
  const double limit = impl.settings.mpi_finalize_timeout_seconds;
  Watchdog mpi_watchdog(bounded ? limit : 0, impl.outcome_fd, LogLevel::Warn,
                        "MPI_Finalize did not return within " + seconds_text(limit) + " " + why_bounded,
                        outcome::kFinalizeTimeout, status);
  MPI_Finalize();
  log(LogLevel::Debug, "MPI finalized");
}

// A spare the job no longer needs ends here, without returning to the
// application: its transports and MPI are closed as at a normal end.
[[noreturn]] void end_spare(Runtime::Impl& impl, const SpareDismissed& dismissed) {
  log(dismissed.status == 0 ? LogLevel::Debug : LogLevel::Error, "spare: " + dismissed.why + "; it ends");
  tell_launcher(impl.outcome_fd, std::string(outcome::kSpareUnused) + "=1");
  close_and_finalize(impl, true, "(RINGMEND_MPI_FINALIZE_TIMEOUT): this spare ends", dismissed.status);
  std::fflush(stdout);
  std::exit(dismissed.status);
}

bool mpi_started() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0;
}

// MPI's start-up, and whether ULFM is on.
void start_mpi(Runtime::Impl& impl, int* argc, char*** argv, bool initialized) {
  if (!initialized) {
    // Read by Open MPI at MPI_Init (ulfm/launch_environment.hpp says why).
    const auto env = ulfm::process_environment();
    auto settings = ulfm::open_mpi_settings(env, std::thread::hardware_concurrency());
    if (auto s = ulfm::return_init_errors(env)) settings.push_back(*s);
    for (const auto& s : settings) {
      ::setenv(s.variable, s.value, 0);
      log(LogLevel::Debug, std::string("Open MPI setting ") + s.variable + "=" + s.value);
    }
    int provided = 0;
    // Returned, not fatal (ulfm/launch_environment.hpp says why): the
    // others may go on without this process.
    if (int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided); rc != MPI_SUCCESS) {
      tell_launcher(impl.outcome_fd, std::string(outcome::kMpiInitFailed) + "=1");
      throw Error(Errc::Internal, "MPI_Init_thread failed (" + ulfm::error_string(rc) +
                                      "): this process cannot join the job. When a process of the job "
                                      "died while MPI started, this is what it leaves: the others go on "
                                      "without this one (or, if none could start, start the job again)");
    }
    impl.we_initialized_mpi = true;
  }
  // Errors must come back to ringmend, not abort the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
#if RINGMEND_HAVE_ULFM
  impl.fault_tolerant = ulfm::fault_tolerance_enabled();
  impl.ft_status = impl.fault_tolerant ? "fault tolerance on (ULFM)"
                   : ulfm::detect_launcher() == ulfm::Launcher::Srun
                       ? ulfm::srun_no_fault_tolerance_notice()
                       : "fault tolerance OFF: this MPI has ULFM but the job was not launched with it "
                         "(ringmend-run, or mpirun " +
                             [] {
                               std::string s;
                               for (const auto& a : ulfm::ft_mpirun_args()) s += a + " ";
                               return s;
                             }() +
                             "...); a rank failure will end the job";
#else
  impl.ft_status =
      "fault tolerance OFF: ringmend was built against an MPI without ULFM "
      "(RINGMEND_REQUIRE_ULFM=OFF); a rank failure will end the job";
#endif
}

namespace {

// The native membership's first view, started by joining a running job
// through the rendezvous directory: no MPI, no PMIx (its own srun step has
// a namespace of its own, not the job's).
void join_native(Runtime::Impl& impl, const membership::native::GroupSettings& group) {
  if (impl.settings.spares != 0 || impl.settings.membership == MembershipBackend::Mpi)
    throw Error(Errc::InvalidArgument,
                "RINGMEND_JOIN=1 joins a running job on the native membership: not with RINGMEND_SPARES or "
                "RINGMEND_MEMBERSHIP=mpi");
  const std::string dir = membership::native::rendezvous_dir();
  if (dir.empty())
    throw Error(Errc::InvalidArgument,
                "RINGMEND_JOIN=1: no job to join (neither RINGMEND_RENDEZVOUS_DIR nor SLURM_JOB_ID is set)");
  try {
    impl.group = std::make_shared<membership::native::SharedGroup>(
        membership::native::join_running_job(group, impl.settings.control_interface, dir,
                                             group.recovery_timeout),
        group.recovery_timeout);
  } catch (const std::runtime_error& e) {
    throw Error(Errc::Internal, std::string("RINGMEND_JOIN=1: ") + e.what());
  }
}

// This process's membership from its start: the native one (a joiner, a
// job srun started, or asked for), else MPI's. Gives the native first view,
// or null under MPI's, with this process's rank and the job's size.
std::unique_ptr<membership::Control> start_membership(Runtime::Impl& impl, int* argc, char*** argv, int& rank,
                                                      int& size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  const MembershipBackend backend = impl.settings.membership;
  membership::native::GroupSettings group;
  group.heartbeat_timeout = impl.settings.heartbeat_timeout_seconds;
  group.recovery_timeout = impl.settings.recovery_timeout_seconds;
  if (impl.settings.join) join_native(impl, group);
#if RINGMEND_HAVE_PMIX
  // A job that srun started runs on the native membership, without MPI:
  // Slurm's mpi/pmix plugin ends the whole step as soon as a task it serves
  // dies while connected to it, and MPI stays connected until
  // MPI_Finalize. The native start-up takes the others' addresses from
  // Slurm's PMIx server and disconnects before any work begins.
  if (!impl.group && !initialized && backend != MembershipBackend::Mpi &&
      ulfm::detect_launcher() == ulfm::Launcher::Srun && membership::native::pmix_available())
    impl.group = std::make_shared<membership::native::SharedGroup>(
        membership::native::join_from_pmix(group, impl.settings.control_interface), group.recovery_timeout);
#endif
  const bool without_mpi = impl.group != nullptr;
  if (!impl.group) {
    start_mpi(impl, argc, argv, initialized != 0);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // Asked for (RINGMEND_MEMBERSHIP=native) under mpirun, or by an
    // application that started MPI itself: the native membership over MPI's
    // start-up, MPI unused afterwards. Under mpirun with ULFM on, PRRTE
    // keeps the survivors of a death alive and the native membership runs
    // their recoveries instead of ULFM (the fault tests run it so on one
    // machine); under srun, MPI stays connected to Slurm's PMIx server,
    // which still ends the step at a task's death.
    if (size <= 1 || backend != MembershipBackend::Native) return nullptr;
    impl.group = membership::native::start_over_mpi(MPI_COMM_WORLD, group, impl.settings.control_interface);
  }
  impl.fault_tolerant = true;
  impl.ft_status = "fault tolerance on (the native membership, heartbeat timeout " +
                   seconds_text(group.heartbeat_timeout) + "; docs/membership.md)";
  auto first = membership::native::NativeControl::first_view(impl.group);
  if (without_mpi) {
    rank = first->rank();
    size = first->size();
  }
  return first;
}

// Every process of a native group says where joiners find it.
void publish_rendezvous(Runtime::Impl& impl) {
  impl.rendezvous_dir = membership::native::rendezvous_dir();
  if (impl.rendezvous_dir.empty()) return;
  try {
    impl.group->with([&](membership::native::Group& g) {
      membership::native::publish_record(impl.rendezvous_dir, g.record(g.self()), g.job_key());
    });
  } catch (const std::exception& e) {
    log(LogLevel::Warn, std::string("no process can join this job later: ") + e.what());
    impl.rendezvous_dir.clear();
  }
}

// What the operator should know of this start, said once (by rank 0).
void say_how_it_runs(const Runtime::Impl& impl, int rank, int size) {
  if (impl.group && rank == 0) log(LogLevel::Info, impl.ft_status);
  if (!impl.fault_tolerant && rank == 0) log(LogLevel::Warn, impl.ft_status);
  // This process's end of the PMIx connection tells how the Open MPI it
  // runs was built (ulfm/pmix_connection.hpp).
  if (impl.fault_tolerant && !impl.group && rank == 0)
    if (const auto port = ulfm::pmix_server_port();
        port && ulfm::pmix_connection_state(*port) == ulfm::PmixConnection::Nagle)
      log(LogLevel::Warn,
          "this Open MPI's PMIx connection sends with Nagle's algorithm (no TCP_NODELAY): failure notices "
          "can reach the ranks up to 40 ms late (MPI learns of a death only from them). "
          "scripts/bootstrap.sh builds Open MPI with the fix "
          "(scripts/patches/openpmix-5.0.7-ptl-tcp-nodelay.patch; docs/troubleshooting.md)");
  // srun without a PMIx server: every task is a 1-rank job.
  if (const std::string alone = ulfm::srun_without_pmix_notice(ulfm::process_environment(), size);
      !alone.empty())
    log(LogLevel::Warn, alone);
}

// A spare waits in the pool as long as the job runs, until admitted (or
// dismissed: the process ends there).
void wait_as_spare(Runtime::Impl& impl, Communicator::Impl& comm) {
  impl.start_watchdog.reset();  // the start-up bound is over
  tell_launcher(impl.outcome_fd, std::string(outcome::kSpare) + "=1");
  // Its first epoch's UCX worker, made while it waits rather than when it
  // is admitted; none where the whole job is on one node (shared memory only).
  if (!comm.job_on_one_node()) impl.ucx->prepare_worker();
  try {
    comm.serve_as_spare();
  } catch (const SpareDismissed& dismissed) {
    end_spare(impl, dismissed);
  }
  tell_launcher(impl.outcome_fd, std::string(outcome::kAdmitted) + "=1");
}

// RINGMEND_RAIL_DEVICES named the NICs: this process's is the one of its
// launcher local rank, shown in its Location (the plan every rank logs and
// ringmend-topo prints). UCX_NET_DEVICES set by the user wins over both.
// Returns the device list UCX will use (empty: UCX's choice).
std::string choose_rail_device(const std::vector<std::string>& devices, topo::Self& self) {
  if (const char* user = std::getenv("UCX_NET_DEVICES")) {
    if (!devices.empty())
      log(LogLevel::Warn, "RINGMEND_RAIL_DEVICES is ignored: UCX_NET_DEVICES=" + std::string(user) +
                              " is set and UCX follows it");
    return user;
  }
  if (devices.empty()) return self.ucx_net_device;
  // Fewer processes on the node than NICs (one rank per node): each takes
  // its share of the NICs and UCX stripes over them.
  const int local = ulfm::launcher_local_rank();
  const int local_size = ulfm::launcher_local_size();
  self.ucx_net_device = topo::rail_device(devices, local, local_size);
  topo::set_nic(self.where, self.ucx_net_device);
  const auto known = [](int v) { return v < 0 ? std::string("unknown") : std::to_string(v); };
  log(LogLevel::Debug, "rail device " + self.ucx_net_device + " (launcher local rank " + known(local) +
                           " of " + known(local_size) + " on the node, " + std::to_string(devices.size()) +
                           " RINGMEND_RAIL_DEVICES)");
  return self.ucx_net_device;
}

}  // namespace

void Runtime::start(int* argc, char*** argv, const std::vector<StateBuffer>& state) {
  set_log_level(impl_->settings.log_level);
  // A dead peer leaves TCP connections behind (Open MPI's btl/tcp forwarding
  // a revoke, UCX): writing to one raises SIGPIPE, whose default action
  // would kill this survivor. A fault-tolerant process takes EPIPE as an
  // error instead. An application's own SIGPIPE handler is left alone.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
  int rank = 0, size = 0;
  std::unique_ptr<membership::Control> native_first = start_membership(*impl_, argc, argv, rank, size);
  if (impl_->group) publish_rendezvous(*impl_);
  say_how_it_runs(*impl_, rank, size);
  // Where this process runs (read once: loading hwloc's topology takes
  // milliseconds), and the NIC nearest to it for UCX when there are several:
  // nearest the GPU the program already works on, if any, so that each
  // local rank's rail leaves through its GPU's NIC.
  const std::string gpu = gpu_in_use();
  topo::Self self = topo::inspect_self(gpu);
  const std::string ucx_devices = choose_rail_device(impl_->settings.rail_devices, self);
  if (!gpu.empty())
    log(LogLevel::Debug,
        "GPU " + gpu + " in use; UCX network device: " +
            (self.ucx_net_device.empty() ? "UCX's choice (fewer than two NICs)" : self.ucx_net_device));
  // Before UCX reads its configuration; how it stripes depends on the NICs.
  transport::set_ucx_environment_defaults(ucx_devices);
  impl_->ucx =
      std::make_unique<transport::UcxContext>(self.ucx_net_device, impl_->settings.ucx_workers_ahead);
  impl_->world.reset(new Communicator(std::make_unique<Communicator::Impl>(
      impl_->settings, impl_->fault_tolerant, *impl_->ucx, mpi_started() ? MPI_COMM_WORLD : MPI_COMM_NULL,
      self.where, impl_->outcome_fd, std::move(native_first))));
  // Before a spare waits: an admitted spare receives into these buffers.
  for (const StateBuffer& b : state) impl_->world->impl_->state.add(b.name, b.data, b.bytes);
  if (Communicator::Impl& comm = *impl_->world->impl_; comm.waiting_as_spare()) wait_as_spare(*impl_, comm);
  // A start-up that lost members is the job's first recovery.
  if (const auto& lost = impl_->world->impl_->lost_at_start(); !lost.empty()) {
    impl_->lost.assign(lost.begin(), lost.end());
    ++impl_->recoveries;
  }
  impl_->world->on_membership_change([impl = impl_.get()](const MembershipChange& change) {
    if (!change.lost.empty()) ++impl->recoveries;  // a grow or a release recovers nothing
    impl->lost.insert(impl->lost.end(), change.lost.begin(), change.lost.end());
  });
}

Runtime::~Runtime() {
  // The calls still queued run first; the shutdown's own calls follow on
  // this thread.
  impl_->world->impl_->stop_queue();
  const long errors = application_errors().load();
  // Reached by unwinding (the application is failing): not a normal finish.
  if (std::uncaught_exceptions() == 0) {
    const Communicator& w = *impl_->world;
    std::string lost;
    for (int id : impl_->lost) lost.append(lost.empty() ? "" : ",").append(std::to_string(id));
    // When the application's last call was done: the launcher measures the
    // shutdown from here.
    char now[32];
    std::snprintf(now, sizeof now, "%.3f",
                  std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    std::string straggler;
    if (const double share = w.impl_->straggler_share(); share > 0) {
      char text[48];
      std::snprintf(text, sizeof text, "%s=%.3f ", outcome::kStraggler, share);
      straggler = text;
    }
    tell_launcher(impl_->outcome_fd, straggler + (w.left() ? std::string(outcome::kReleased) + "=1 " : "") +
                                         outcome::kFinished + "=1 " + outcome::kEpoch + "=" +
                                         std::to_string(w.epoch()) + " " + outcome::kSize + "=" +
                                         std::to_string(w.size()) + " " + outcome::kRecoveries + "=" +
                                         std::to_string(impl_->recoveries) + " " + outcome::kLost + "=" +
                                         (lost.empty() ? "-" : lost) + " " + outcome::kShutdownFrom + "=" +
                                         now + " " + outcome::kErrors + "=" + std::to_string(errors));
  }
  // If the watchdog fires, the application's own status is lost with the
  // process: 0 only when it finished without an error from a collective
  // and is not unwinding an exception.
  const bool failing = errors > 0 || std::uncaught_exceptions() > 0;
  const double limit = impl_->settings.finalize_timeout_seconds;
  Watchdog watchdog(limit, impl_->outcome_fd, LogLevel::Warn,
                    "shutdown did not finish within " + seconds_text(limit) +
                        " (RINGMEND_FINALIZE_TIMEOUT): the watchdog ends this process, with status " +
                        (failing ? "1 (its application saw " + std::to_string(errors) +
                                       " collective error(s), or was failing)"
                                 : std::string("0 (the application finished)")),
                    outcome::kFinalizeTimeout, failing ? 1 : 0, published_records(*impl_));
  bool all_done = false;
  if (impl_->world->left()) {
    // Released: the members go on without this process, which has nothing
    // to wait for.
    close_and_finalize(*impl_, false, "", 0);
    return;
  }
  try {
    impl_->world->impl_->warn_unfired_faults();
    impl_->world->impl_->quiesce();
    all_done = true;
  } catch (const std::exception& e) {
    log(LogLevel::Warn, std::string("while finalizing: ") + e.what());
  }
  try {
    // Spares still waiting leave with the members (they would wait for ever).
    impl_->world->impl_->dismiss_spares();
  } catch (const std::exception& e) {
    log(LogLevel::Warn, std::string("while dismissing the spares: ") + e.what());
  }
  log(LogLevel::Debug, "all members finalizing");
  // Every member agreed that nothing is in flight: MPI_Finalize has
  // nothing left to deliver. Yet ULFM's MPI_Finalize shrinks
  // MPI_COMM_WORLD, and in Open MPI 5.0 that agreement can wait for ever
  // after failures on two nodes (open-mpi/ompi#11404; reproduced here by
  // killing one rank on each of two nodes in the same call, and fixed by
  // scripts/patches/openmpi-5.0.7-ulfm-populate-failed-proc.patch, which an
  // Open MPI built elsewhere may lack). A short budget ends such a wait
  // instead of the whole shutdown's.
  close_and_finalize(*impl_, all_done && impl_->fault_tolerant,
                     "after every member had finished (RINGMEND_MPI_FINALIZE_TIMEOUT; Open MPI 5.0's "
                     "fault-tolerant MPI_Finalize can wait for ever after failures): this process ends with "
                     "status 0 (the application finished)",
                     0);
}

Communicator& Runtime::world() { return *impl_->world; }
const Settings& Runtime::settings() const { return impl_->settings; }
bool Runtime::fault_tolerant() const { return impl_->fault_tolerant; }
std::string Runtime::fault_tolerance_status() const { return impl_->ft_status; }

void Runtime::application_failed() { application_errors().fetch_add(1, std::memory_order_relaxed); }

std::string Runtime::control_address() const {
  return membership::native::control_ip(settings().control_interface);
}

std::vector<std::string> ft_mpirun_args() { return ulfm::ft_mpirun_args(); }
const char* version() { return RINGMEND_VERSION_STRING; }

}  // namespace ringmend
