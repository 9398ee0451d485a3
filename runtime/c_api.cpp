// The C API: thin wrappers that turn exceptions into status codes.
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringmend/ringmend.h"
#include "ringmend/ringmend.hpp"

struct ringmend_runtime {
  ringmend::Runtime runtime;
};

// A non-blocking call, and the communicator whose storage its result uses.
struct ringmend_request {
  ringmend::Request request;
  ringmend_comm* comm;
};

namespace {

thread_local std::string last_error;

// The C handle of a communicator is the C++ object itself, plus storage for
// the lost-rank arrays handed out by pointer.
struct CommExtras {
  std::vector<int> lost, joined, released;
  std::vector<int> change_lost;
};

CommExtras& extras_of(const ringmend_comm* comm) {
  // Membership callbacks may run on the communicator's call thread.
  static std::mutex mutex;
  static std::unordered_map<const ringmend_comm*, CommExtras> table;
  std::lock_guard lock(mutex);
  return table[comm];  // references to elements stay valid as the table grows
}

ringmend::Communicator& cxx(ringmend_comm* c) { return *reinterpret_cast<ringmend::Communicator*>(c); }
const ringmend::Communicator& cxx(const ringmend_comm* c) {
  return *reinterpret_cast<const ringmend::Communicator*>(c);
}

int status_of(ringmend::Errc e) {
  switch (e) {
    case ringmend::Errc::InvalidArgument:
      return RINGMEND_ERR_INVALID_ARGUMENT;
    case ringmend::Errc::Mismatch:
      return RINGMEND_ERR_MISMATCH;
    case ringmend::Errc::Timeout:
      return RINGMEND_ERR_TIMEOUT;
    case ringmend::Errc::FaultToleranceUnavailable:
      return RINGMEND_ERR_FT_UNAVAILABLE;
    case ringmend::Errc::RootLost:
      return RINGMEND_ERR_ROOT_LOST;
    case ringmend::Errc::BadEnvironment:
      return RINGMEND_ERR_BAD_ENVIRONMENT;
    case ringmend::Errc::Internal:
      return RINGMEND_ERR_INTERNAL;
    case ringmend::Errc::Released:
      return RINGMEND_ERR_RELEASED;
    case ringmend::Errc::SizeChanged:
      return RINGMEND_ERR_SIZE_CHANGED;
    case ringmend::Errc::MemberLost:
      return RINGMEND_ERR_MEMBER_LOST;
  }
  return RINGMEND_ERR_INTERNAL;
}

template <class F>
int guarded(F&& f) {
  try {
    f();
    return RINGMEND_SUCCESS;
  } catch (const ringmend::Error& e) {
    last_error = e.what();
    return status_of(e.code());
  } catch (const std::exception& e) {
    last_error = e.what();
    return RINGMEND_ERR_INTERNAL;
  }
}

void fill(ringmend_comm* comm, const ringmend::CollectiveResult& r, ringmend_result* out) {
  if (!out) return;
  auto& ex = extras_of(comm);
  ex.lost = r.lost;
  ex.joined = r.joined;
  ex.released = r.released;
  out->recovered = r.recovered ? 1 : 0;
  out->contributors = r.contributors;
  out->num_lost = static_cast<int>(ex.lost.size());
  out->lost = ex.lost.data();
  out->epoch = r.epoch;
  out->num_joined = static_cast<int>(ex.joined.size());
  out->joined = ex.joined.data();
  out->num_released = static_cast<int>(ex.released.size());
  out->released = ex.released.data();
  out->left = r.left ? 1 : 0;
}

bool check_comm(const void* p) {
  if (p) return true;
  last_error = "null communicator or runtime handle";
  return false;
}

template <class F>
int start_request(ringmend_comm* comm, ringmend_request** request, F&& start) {
  if (!request) {
    last_error = "null request pointer";
    return RINGMEND_ERR_INVALID_ARGUMENT;
  }
  *request = nullptr;
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] { *request = new ringmend_request{start(), comm}; });
}

}  // namespace

extern "C" {

int ringmend_init(int* argc, char*** argv, ringmend_runtime** runtime) {
  if (!runtime) {
    last_error = "ringmend_init: null output pointer";
    return RINGMEND_ERR_INVALID_ARGUMENT;
  }
  *runtime = nullptr;
  return guarded([&] { *runtime = new ringmend_runtime{ringmend::Runtime(argc, argv)}; });
}

int ringmend_finalize(ringmend_runtime* runtime) {
  return guarded([&] { delete runtime; });
}

ringmend_comm* ringmend_world(ringmend_runtime* runtime) {
  return runtime ? reinterpret_cast<ringmend_comm*>(&runtime->runtime.world()) : nullptr;
}

int ringmend_fault_tolerant(const ringmend_runtime* runtime) {
  return runtime && runtime->runtime.fault_tolerant() ? 1 : 0;
}

int ringmend_comm_rank(const ringmend_comm* comm) { return comm ? cxx(comm).rank() : -1; }
int ringmend_comm_size(const ringmend_comm* comm) { return comm ? cxx(comm).size() : -1; }
uint64_t ringmend_comm_epoch(const ringmend_comm* comm) { return comm ? cxx(comm).epoch() : 0; }
int ringmend_comm_member_id(const ringmend_comm* comm, int rank) {
  if (!comm || rank < 0 || rank >= cxx(comm).size()) return -1;
  return cxx(comm).member_ids()[static_cast<std::size_t>(rank)];
}
int ringmend_comm_world_rank(const ringmend_comm* comm, int rank) {
  return ringmend_comm_member_id(comm, rank);
}

int ringmend_allreduce(ringmend_comm* comm, const void* input, void* output, size_t count,
                       ringmend_datatype type, ringmend_op op, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    auto t = static_cast<ringmend::DataType>(type);
    auto o = static_cast<ringmend::ReduceOp>(op);
    auto r = input == output ? cxx(comm).allreduce(output, count, t, o)
                             : cxx(comm).allreduce(input, output, count, t, o);
    fill(comm, r, result);
  });
}

int ringmend_broadcast(ringmend_comm* comm, void* buffer, size_t bytes, int root, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] { fill(comm, cxx(comm).broadcast(buffer, bytes, root), result); });
}

int ringmend_comm_split(ringmend_comm* comm, int color, int key, ringmend_comm** out) {
  if (!check_comm(comm) || !out) return RINGMEND_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  return guarded([&] { *out = reinterpret_cast<ringmend_comm*>(cxx(comm).split(color, key).release()); });
}

int ringmend_comm_group(ringmend_comm* comm, const int* ranks, int num_ranks, ringmend_comm** out) {
  if (!check_comm(comm) || !out || num_ranks <= 0 || !ranks) return RINGMEND_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  return guarded([&] {
    const std::span<const int> listed(ranks, static_cast<std::size_t>(num_ranks));
    *out = reinterpret_cast<ringmend_comm*>(cxx(comm).group(listed).release());
  });
}

int ringmend_comm_free(ringmend_comm** comm) {
  if (!comm || !*comm) return RINGMEND_ERR_INVALID_ARGUMENT;
  if (!cxx(*comm).is_subgroup()) {
    last_error = "ringmend_comm_free: the world communicator belongs to its runtime (ringmend_finalize)";
    return RINGMEND_ERR_INVALID_ARGUMENT;
  }
  return guarded([&] {
    delete &cxx(*comm);
    *comm = nullptr;
  });
}

int ringmend_barrier(ringmend_comm* comm, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] { fill(comm, cxx(comm).barrier(), result); });
}

int ringmend_allgather(ringmend_comm* comm, const void* input, size_t count, ringmend_datatype type,
                       void* output, size_t output_count, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    const auto t = static_cast<ringmend::DataType>(type);
    fill(comm, cxx(comm).allgather(input, count, t, output, output_count), result);
  });
}

namespace {

// One count per rank of the communicator (a null array: none).
std::span<const std::size_t> per_rank(ringmend_comm* comm, const size_t* counts) {
  return counts ? std::span<const std::size_t>(counts, static_cast<std::size_t>(cxx(comm).size()))
                : std::span<const std::size_t>();
}

}  // namespace

int ringmend_allgatherv(ringmend_comm* comm, const void* input, const size_t* counts, ringmend_datatype type,
                        void* output, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    const auto t = static_cast<ringmend::DataType>(type);
    fill(comm, cxx(comm).allgatherv(input, per_rank(comm, counts), t, output), result);
  });
}

int ringmend_alltoall(ringmend_comm* comm, const void* input, const size_t* send_counts,
                      ringmend_datatype type, void* output, const size_t* recv_counts,
                      ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    const auto t = static_cast<ringmend::DataType>(type);
    fill(comm, cxx(comm).alltoall(input, per_rank(comm, send_counts), t, output, per_rank(comm, recv_counts)),
         result);
  });
}

int ringmend_reduce_scatter(ringmend_comm* comm, const void* input, void* output, size_t count,
                            ringmend_datatype type, ringmend_op op, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    fill(comm,
         cxx(comm).reduce_scatter(input, output, count, static_cast<ringmend::DataType>(type),
                                  static_cast<ringmend::ReduceOp>(op)),
         result);
  });
}

int ringmend_iallreduce(ringmend_comm* comm, const void* input, void* output, size_t count,
                        ringmend_datatype type, ringmend_op op, ringmend_request** request) {
  return start_request(comm, request, [&] {
    const auto t = static_cast<ringmend::DataType>(type);
    const auto o = static_cast<ringmend::ReduceOp>(op);
    return cxx(comm).iallreduce(input, output, count, t, o);
  });
}

int ringmend_ibroadcast(ringmend_comm* comm, void* buffer, size_t bytes, int root,
                        ringmend_request** request) {
  return start_request(comm, request, [&] { return cxx(comm).ibroadcast(buffer, bytes, root); });
}

int ringmend_iallgather(ringmend_comm* comm, const void* input, size_t count, ringmend_datatype type,
                        void* output, size_t output_count, ringmend_request** request) {
  return start_request(comm, request, [&] {
    return cxx(comm).iallgather(input, count, static_cast<ringmend::DataType>(type), output, output_count);
  });
}

int ringmend_ireduce_scatter(ringmend_comm* comm, const void* input, void* output, size_t count,
                             ringmend_datatype type, ringmend_op op, ringmend_request** request) {
  return start_request(comm, request, [&] {
    return cxx(comm).ireduce_scatter(input, output, count, static_cast<ringmend::DataType>(type),
                                     static_cast<ringmend::ReduceOp>(op));
  });
}

int ringmend_iallgatherv(ringmend_comm* comm, const void* input, const size_t* counts, ringmend_datatype type,
                         void* output, ringmend_request** request) {
  return start_request(comm, request, [&] {
    return cxx(comm).iallgatherv(input, per_rank(comm, counts), static_cast<ringmend::DataType>(type),
                                 output);
  });
}

int ringmend_ialltoall(ringmend_comm* comm, const void* input, const size_t* send_counts,
                       ringmend_datatype type, void* output, const size_t* recv_counts,
                       ringmend_request** request) {
  return start_request(comm, request, [&] {
    return cxx(comm).ialltoall(input, per_rank(comm, send_counts), static_cast<ringmend::DataType>(type),
                               output, per_rank(comm, recv_counts));
  });
}

int ringmend_ibarrier(ringmend_comm* comm, ringmend_request** request) {
  return start_request(comm, request, [&] { return cxx(comm).ibarrier(); });
}

int ringmend_wait(ringmend_request** request, ringmend_result* result) {
  if (!request || !*request) {
    last_error = "ringmend_wait: null request";
    return RINGMEND_ERR_INVALID_ARGUMENT;
  }
  ringmend_request* r = std::exchange(*request, nullptr);
  const int status = guarded([&] { fill(r->comm, r->request.wait(), result); });
  delete r;
  return status;
}

int ringmend_test(ringmend_request** request, int* done, ringmend_result* result) {
  if (!request || !*request || !done) {
    last_error = "ringmend_test: null request or flag";
    return RINGMEND_ERR_INVALID_ARGUMENT;
  }
  *done = (*request)->request.test() ? 1 : 0;
  return *done ? ringmend_wait(request, result) : RINGMEND_SUCCESS;
}

int ringmend_grow(ringmend_comm* comm, int count, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] { fill(comm, cxx(comm).grow(count), result); });
}

int ringmend_release(ringmend_comm* comm, const int* ranks, int num_ranks, ringmend_result* result) {
  if (!check_comm(comm)) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    // A bad array is an argument error like any other, raised by the
    // request on every member alike: an empty span with a negative count
    // names no rank, so it is passed as one impossible rank.
    const int bad = -1;
    const std::span<const int> list = num_ranks < 0 || (num_ranks > 0 && !ranks)
                                          ? std::span<const int>(&bad, 1)
                                          : std::span<const int>(ranks, static_cast<std::size_t>(num_ranks));
    fill(comm, cxx(comm).release(list), result);
  });
}

int ringmend_comm_left(const ringmend_comm* comm) { return comm && cxx(comm).left() ? 1 : 0; }

void ringmend_set_log_handler(ringmend_log_handler handler, void* user) {
  if (!handler) {
    ringmend::set_log_sink({});
    return;
  }
  ringmend::set_log_sink([handler, user](ringmend::LogLevel level, const std::string& line) {
    handler(static_cast<int>(level), line.c_str(), user);
  });
}

int ringmend_on_membership_change(ringmend_comm* comm, ringmend_membership_callback callback, void* user) {
  if (!check_comm(comm) || !callback) return RINGMEND_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    cxx(comm).on_membership_change([comm, callback, user](const ringmend::MembershipChange& m) {
      auto& ex = extras_of(comm);
      ex.change_lost = m.lost;
      ringmend_membership_change c{m.old_epoch,
                                   m.new_epoch,
                                   m.old_size,
                                   m.new_size,
                                   m.new_rank,
                                   static_cast<int>(ex.change_lost.size()),
                                   ex.change_lost.data(),
                                   m.recovery_seconds,
                                   m.shrink_seconds,
                                   m.rebuild_seconds,
                                   m.attempts};
      callback(&c, user);
    });
  });
}

const char* ringmend_last_error(void) { return last_error.c_str(); }
const char* ringmend_version(void) { return ringmend::version(); }

}  // extern "C"
