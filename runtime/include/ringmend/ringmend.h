/* ringmend C API: the C++ API (ringmend.hpp) for C and Fortran codes.
 *
 * Every call returns RINGMEND_SUCCESS or an error code; ringmend_last_error()
 * then gives the message (per thread, valid until the next failing call). */
#ifndef RINGMEND_H
#define RINGMEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RINGMEND_SUCCESS = 0,
  RINGMEND_ERR_INVALID_ARGUMENT = 1,
  RINGMEND_ERR_MISMATCH = 2,
  RINGMEND_ERR_TIMEOUT = 3,
  RINGMEND_ERR_FT_UNAVAILABLE = 4,
  RINGMEND_ERR_ROOT_LOST = 5,
  RINGMEND_ERR_BAD_ENVIRONMENT = 6,
  RINGMEND_ERR_INTERNAL = 7,
  RINGMEND_ERR_RELEASED = 8,
  RINGMEND_ERR_SIZE_CHANGED = 9,
  RINGMEND_ERR_MEMBER_LOST = 10
} ringmend_status;

typedef enum {
  RINGMEND_FLOAT32 = 0,
  RINGMEND_FLOAT64 = 1,
  RINGMEND_INT32 = 2,
  RINGMEND_INT64 = 3,
  RINGMEND_FLOAT16 = 4, /* IEEE binary16, reduced in float32 */
  RINGMEND_BFLOAT16 = 5 /* bfloat16, reduced in float32 */
} ringmend_datatype;
typedef enum { RINGMEND_SUM = 0, RINGMEND_PROD = 1, RINGMEND_MIN = 2, RINGMEND_MAX = 3 } ringmend_op;

typedef struct ringmend_runtime ringmend_runtime;
typedef struct ringmend_comm ringmend_comm;
typedef struct ringmend_request ringmend_request;

/* Filled by collectives when the caller passes a non-null pointer. The id
 * arrays point into storage owned by the communicator, valid until its next
 * call. */
typedef struct {
  int recovered;    /* 1 if the membership changed in the call */
  int contributors; /* ranks whose inputs the result contains */
  int num_lost;     /* ids of the members lost during the call */
  const int* lost;
  uint64_t epoch; /* membership epoch after the call */
  int num_joined; /* ids of the spares admitted in the call */
  const int* joined;
  int num_released; /* ids of the members released in the call */
  const int* released;
  int left; /* 1 on a member released by ringmend_release: it left the job */
} ringmend_result;

typedef struct {
  uint64_t old_epoch, new_epoch;
  int old_size, new_size, new_rank;
  int num_lost;
  const int* lost;
  double recovery_seconds; /* failure noticed -> membership rebuilt, of which: */
  double shrink_seconds;   /*   revoke + shrink */
  double rebuild_seconds;  /*   plan, shared memory, endpoints, agreement */
  int attempts;            /* shrinks needed */
} ringmend_membership_change;

typedef void (*ringmend_membership_callback)(const ringmend_membership_change* change, void* user);

/* The log (docs/troubleshooting.md): every line that passes RINGMEND_LOG's
 * level (0 error, 1 warn, 2 info, 3 debug) goes to `handler` instead of
 * stderr, whole and without a newline; NULL: stderr again. */
typedef void (*ringmend_log_handler)(int level, const char* line, void* user);
void ringmend_set_log_handler(ringmend_log_handler handler, void* user);

int ringmend_init(int* argc, char*** argv, ringmend_runtime** runtime);
int ringmend_finalize(ringmend_runtime* runtime); /* frees it; bounded */
ringmend_comm* ringmend_world(ringmend_runtime* runtime);
int ringmend_fault_tolerant(const ringmend_runtime* runtime);

int ringmend_comm_rank(const ringmend_comm* comm);
int ringmend_comm_size(const ringmend_comm* comm);
uint64_t ringmend_comm_epoch(const ringmend_comm* comm);
/* Member id of rank `rank` (its MPI_COMM_WORLD rank for the members started
 * with the job), or -1 when out of range. */
int ringmend_comm_member_id(const ringmend_comm* comm, int rank);
/* Deprecated: the old name of ringmend_comm_member_id. */
int ringmend_comm_world_rank(const ringmend_comm* comm, int rank);

/* In place when input == output. */
int ringmend_allreduce(ringmend_comm* comm, const void* input, void* output, size_t count,
                       ringmend_datatype type, ringmend_op op, ringmend_result* result);
int ringmend_broadcast(ringmend_comm* comm, void* buffer, size_t bytes, int root, ringmend_result* result);
int ringmend_barrier(ringmend_comm* comm, ringmend_result* result);
/* Every rank's `count` elements of `input`, rank r's at element r * count of
   `output`, which holds `output_count` elements (at least size * count).
   After a loss, result->contributors blocks are filled (ringmend.hpp). */
int ringmend_allgather(ringmend_comm* comm, const void* input, size_t count, ringmend_datatype type,
                       void* output, size_t output_count, ringmend_result* result);
/* Uneven allgather (ringmend.hpp: allgatherv): `counts` has one entry per
   rank (the communicator's size), rank r's block of counts[r] elements lands
   at the sum of counts[0..r) in `output`. Alltoall: rank r sends
   send_counts[s] elements to rank s and receives recv_counts[s] from it,
   blocks end to end in rank order. RINGMEND_ERR_SIZE_CHANGED after a loss no
   spare replaced. */
int ringmend_allgatherv(ringmend_comm* comm, const void* input, const size_t* counts, ringmend_datatype type,
                        void* output, ringmend_result* result);
int ringmend_alltoall(ringmend_comm* comm, const void* input, const size_t* send_counts,
                      ringmend_datatype type, void* output, const size_t* recv_counts,
                      ringmend_result* result);
/* `input` holds size blocks of `count` elements; rank r gets the reduction
   of block r. RINGMEND_ERR_SIZE_CHANGED after a loss no spare replaced. */
int ringmend_reduce_scatter(ringmend_comm* comm, const void* input, void* output, size_t count,
                            ringmend_datatype type, ringmend_op op, ringmend_result* result);
/* Non-blocking (ringmend.hpp: iallreduce; docs/nonblocking.md): the call is
 * queued on the communicator's call thread and *request set to its handle.
 * ringmend_wait waits for it, fills *result, returns the call's status and
 * frees the handle (*request = NULL); ringmend_test does the same once the
 * call has completed (*done = 1), else returns at once (*done = 0). Buffers
 * stay untouched until then. */
int ringmend_iallreduce(ringmend_comm* comm, const void* input, void* output, size_t count,
                        ringmend_datatype type, ringmend_op op, ringmend_request** request);
int ringmend_ibroadcast(ringmend_comm* comm, void* buffer, size_t bytes, int root,
                        ringmend_request** request);
int ringmend_ibarrier(ringmend_comm* comm, ringmend_request** request);
int ringmend_iallgather(ringmend_comm* comm, const void* input, size_t count, ringmend_datatype type,
                        void* output, size_t output_count, ringmend_request** request);
int ringmend_ireduce_scatter(ringmend_comm* comm, const void* input, void* output, size_t count,
                             ringmend_datatype type, ringmend_op op, ringmend_request** request);
int ringmend_iallgatherv(ringmend_comm* comm, const void* input, const size_t* counts, ringmend_datatype type,
                         void* output, ringmend_request** request);
int ringmend_ialltoall(ringmend_comm* comm, const void* input, const size_t* send_counts,
                       ringmend_datatype type, void* output, const size_t* recv_counts,
                       ringmend_request** request);
int ringmend_wait(ringmend_request** request, ringmend_result* result);
int ringmend_test(ringmend_request** request, int* done, ringmend_result* result);
/* Membership on request (ringmend.hpp: grow, release; docs/elastic.md):
 * collective, every member with the same arguments. A released member
 * gets result->left = 1, calls no collective after, and should call
 * ringmend_finalize and exit (it does not finalize MPI). */
int ringmend_grow(ringmend_comm* comm, int count, ringmend_result* result);
int ringmend_release(ringmend_comm* comm, const int* ranks, int num_ranks, ringmend_result* result);
int ringmend_comm_left(const ringmend_comm* comm);
int ringmend_on_membership_change(ringmend_comm* comm, ringmend_membership_callback callback, void* user);

/* Subgroups (ringmend.hpp: split, group; docs/subgroups.md). `*out` is a
 * new communicator of the caller's (NULL for a negative color), taking
 * every collective above; free it with ringmend_comm_free before
 * ringmend_finalize. split is a collective of the world; group is called
 * by the ranks listed only, each with the same list. */
int ringmend_comm_split(ringmend_comm* comm, int color, int key, ringmend_comm** out);
int ringmend_comm_group(ringmend_comm* comm, const int* ranks, int num_ranks, ringmend_comm** out);
/* Frees a subgroup and sets *comm to NULL (the world is the runtime's). */
int ringmend_comm_free(ringmend_comm** comm);

const char* ringmend_last_error(void);
const char* ringmend_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RINGMEND_H */
