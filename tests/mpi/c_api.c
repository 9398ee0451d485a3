/* The C API end to end: allreduce (in place and not), broadcast, barrier,
 * allgather, reduce_scatter, allgatherv, alltoall, their non-blocking forms, and an error reported through a
 * status code and ringmend_last_error(). */
#include <stdio.h>
#include <string.h>

#include "ringmend/ringmend.h"

int main(int argc, char** argv) {
  ringmend_runtime* rt = NULL;
  if (ringmend_init(&argc, &argv, &rt) != RINGMEND_SUCCESS) {
    fprintf(stderr, "init: %s\n", ringmend_last_error());
    return 1;
  }
  ringmend_comm* world = ringmend_world(rt);
  const int rank = ringmend_comm_rank(world), size = ringmend_comm_size(world);
  int failures = 0, rc = 0;

  double x[3] = {rank, 1.0, -rank}, y[3];
  ringmend_result r;
  if (ringmend_allreduce(world, x, y, 3, RINGMEND_FLOAT64, RINGMEND_SUM, &r) != RINGMEND_SUCCESS) ++failures;
  if (y[0] != size * (size - 1) / 2.0 || y[1] != size || r.contributors != size) ++failures;
  if (ringmend_allreduce(world, x, x, 3, RINGMEND_FLOAT64, RINGMEND_MAX, NULL) != RINGMEND_SUCCESS)
    ++failures;
  if (x[0] != size - 1 || x[2] != 0) ++failures;

  char msg[16] = {0};
  if (rank == 0) strcpy(msg, "from rank 0");
  if (ringmend_broadcast(world, msg, sizeof msg, 0, NULL) != RINGMEND_SUCCESS ||
      strcmp(msg, "from rank 0") != 0)
    ++failures;
  if (ringmend_barrier(world, NULL) != RINGMEND_SUCCESS) ++failures;

  /* allgather: rank r's two values at 2r; reduce_scatter: rank r gets the
   * sum of every rank's block r; both non-blocking too. */
  {
    long long mine[2] = {rank, 100 + rank}, all[2 * 64];
    if (size > 64 ||
        ringmend_allgather(world, mine, 2, RINGMEND_INT64, all, 2 * (size_t)size, &r) != RINGMEND_SUCCESS ||
        r.contributors != size)
      ++failures;
    for (int i = 0; i < size && i < 64; ++i)
      if (all[2 * i] != i || all[2 * i + 1] != 100 + i) ++failures;
    double blocks[64], out = -1;
    for (int j = 0; j < size && j < 64; ++j) blocks[j] = rank * 10.0 + j;
    if (ringmend_reduce_scatter(world, blocks, &out, 1, RINGMEND_FLOAT64, RINGMEND_SUM, NULL) !=
            RINGMEND_SUCCESS ||
        out != 10.0 * size * (size - 1) / 2 + size * rank)
      ++failures;
    ringmend_request *ga = NULL, *rs = NULL;
    out = -1;
    if (ringmend_iallgather(world, mine, 2, RINGMEND_INT64, all, 2 * (size_t)size, &ga) != RINGMEND_SUCCESS ||
        ringmend_ireduce_scatter(world, blocks, &out, 1, RINGMEND_FLOAT64, RINGMEND_MAX, &rs) !=
            RINGMEND_SUCCESS ||
        ringmend_wait(&ga, NULL) != RINGMEND_SUCCESS || ringmend_wait(&rs, NULL) != RINGMEND_SUCCESS ||
        out != 10.0 * (size - 1) + rank)
      ++failures;
    /* allgatherv: rank r's r + 1 values; alltoall: rank r sends s + 1
     * values (10 r + s) to rank s; both non-blocking too. */
    size_t counts[64], send[64], recv[64];
    long long uneven[2080], to_all[2080], from_all[4096];
    for (int i = 0; i < size && i < 64; ++i) {
      counts[i] = (size_t)i + 1;
      send[i] = (size_t)i + 1;
      recv[i] = (size_t)rank + 1;
    }
    long long own[64];
    for (int i = 0; i <= rank && i < 64; ++i) own[i] = 1000 * rank + i;
    size_t at = 0;
    for (int s = 0; s < size && s < 64; ++s)
      for (int i = 0; i <= s; ++i) to_all[at++] = 10 * rank + s;
    ringmend_request *gv = NULL, *aa = NULL;
    if (ringmend_allgatherv(world, own, counts, RINGMEND_INT64, uneven, &r) != RINGMEND_SUCCESS ||
        r.contributors != size ||
        ringmend_alltoall(world, to_all, send, RINGMEND_INT64, from_all, recv, NULL) != RINGMEND_SUCCESS)
      ++failures;
    at = 0;
    for (int q = 0; q < size && q < 64; ++q)
      for (int i = 0; i <= q; ++i, ++at)
        if (uneven[at] != 1000 * q + i) ++failures;
    for (int q = 0; q < size && q < 64; ++q)
      for (int i = 0; i <= rank; ++i)
        if (from_all[q * (rank + 1) + i] != 10 * q + rank) ++failures;
    if (ringmend_iallgatherv(world, own, counts, RINGMEND_INT64, uneven, &gv) != RINGMEND_SUCCESS ||
        ringmend_ialltoall(world, to_all, send, RINGMEND_INT64, from_all, recv, &aa) != RINGMEND_SUCCESS ||
        ringmend_wait(&gv, NULL) != RINGMEND_SUCCESS || ringmend_wait(&aa, NULL) != RINGMEND_SUCCESS)
      ++failures;
    /* Null counts on one rank: an error on every rank. */
    rc = ringmend_allgatherv(world, own, rank == 0 ? NULL : counts, RINGMEND_INT64, uneven, NULL);
    if (rc != RINGMEND_ERR_INVALID_ARGUMENT) {
      fprintf(stderr, "rank %d: null allgatherv counts: got %d (%s)\n", rank, rc, ringmend_last_error());
      ++failures;
    }
    /* An output too small for size blocks: an error on every rank. */
    rc = ringmend_allgather(world, mine, 2, RINGMEND_INT64, all, rank == 0 ? 1 : 2 * (size_t)size, NULL);
    if (rc != RINGMEND_ERR_INVALID_ARGUMENT) {
      fprintf(stderr, "rank %d: small allgather output: got %d (%s)\n", rank, rc, ringmend_last_error());
      ++failures;
    }
  }

  /* A null buffer on one rank is an error on every rank. */
  int v = 1;
  rc = ringmend_allreduce(world, rank == 0 ? NULL : &v, &v, 1, RINGMEND_INT32, RINGMEND_SUM, NULL);
  if (rc != RINGMEND_ERR_INVALID_ARGUMENT || strstr(ringmend_last_error(), "null buffer") == NULL) {
    fprintf(stderr, "rank %d: expected invalid-argument, got %d (%s)\n", rank, rc, ringmend_last_error());
    ++failures;
  }
  if (ringmend_comm_member_id(world, size) != -1) ++failures;

  /* Non-blocking: two in flight, tested then waited; the handles are freed. */
  {
    float a[1000], b[1000];
    for (int i = 0; i < 1000; ++i) a[i] = (float)(rank + i), b[i] = 1.0f;
    ringmend_request *ra = NULL, *rb = NULL;
    if (ringmend_iallreduce(world, a, a, 1000, RINGMEND_FLOAT32, RINGMEND_SUM, &ra) != RINGMEND_SUCCESS ||
        ringmend_iallreduce(world, b, b, 1000, RINGMEND_FLOAT32, RINGMEND_SUM, &rb) != RINGMEND_SUCCESS)
      ++failures;
    int done = 0;
    while (!done)
      if (ringmend_test(&rb, &done, &r) != RINGMEND_SUCCESS) ++failures, done = 1;
    if (rb != NULL || r.contributors != size) ++failures;
    if (ringmend_wait(&ra, NULL) != RINGMEND_SUCCESS || ra != NULL) ++failures;
    for (int i = 0; i < 1000; ++i)
      if (a[i] != (float)(size * (size - 1) / 2 + size * i) || b[i] != (float)size) {
        ++failures;
        break;
      }
    ringmend_request* rq = NULL;
    if (ringmend_ibarrier(world, &rq) != RINGMEND_SUCCESS || ringmend_wait(&rq, NULL) != RINGMEND_SUCCESS)
      ++failures;
    /* A mismatch, reported by the wait. */
    if (ringmend_iallreduce(world, a, a, rank == 0 ? 10 : 11, RINGMEND_FLOAT32, RINGMEND_SUM, &rq) !=
            RINGMEND_SUCCESS ||
        ringmend_wait(&rq, NULL) != RINGMEND_ERR_MISMATCH)
      ++failures;
    if (ringmend_wait(&rq, NULL) != RINGMEND_ERR_INVALID_ARGUMENT) ++failures; /* already freed */
  }
  {
    /* Subgroups: the even and the odd ranks, by split and by group. */
    ringmend_comm* half = NULL;
    ringmend_comm* pair = NULL;
    const int mates[2] = {rank - rank % 2, rank - rank % 2 + 1};
    float mine = (float)(rank + 1), sum = 0;
    if (ringmend_comm_split(world, rank % 2, rank, &half) != RINGMEND_SUCCESS || !half) ++failures;
    if (half &&
        (ringmend_allreduce(half, &mine, &sum, 1, RINGMEND_FLOAT32, RINGMEND_SUM, NULL) != RINGMEND_SUCCESS ||
         ringmend_comm_rank(half) != rank / 2))
      ++failures;
    float want = 0;
    for (int q = rank % 2; q < size; q += 2) want += (float)(q + 1);
    if (sum != want) ++failures;
    if (mates[1] < size) {
      if (ringmend_comm_group(world, mates, 2, &pair) != RINGMEND_SUCCESS || !pair ||
          ringmend_barrier(pair, NULL) != RINGMEND_SUCCESS || ringmend_comm_size(pair) != 2)
        ++failures;
      if (ringmend_comm_free(&pair) != RINGMEND_SUCCESS || pair) ++failures;
    }
    if (ringmend_comm_free(&half) != RINGMEND_SUCCESS || half) ++failures;
    if (ringmend_comm_free(&world) != RINGMEND_ERR_INVALID_ARGUMENT || !world)
      ++failures; /* not a subgroup */
  }
  printf("TEST %s rank %d: C API (ringmend %s)\n", failures ? "FAILED" : "PASSED", rank, ringmend_version());
  ringmend_finalize(rt);
  return failures ? 1 : 0;
}
