/* The MPI baseline of the allreduce benchmark: MPI_Allreduce alone, in
 * plain C, so that it builds with any MPI's compiler wrapper (Open MPI's
 * mpicc, MPICH's mpicc.mpich) and runs under that MPI's own launcher in its
 * default configuration, as a user who gives up fault tolerance would run
 * it. It times exactly as ringmend_allreduce does (bench/bench_util.hpp:
 * osu_allreduce's method and counts: warm-up calls, a barrier, then the
 * timed calls; the average over ranks of each rank's mean), so that its
 * rows stand beside ringmend's in one table (bench/run_standard.sh).
 *
 *   mpi_allreduce --impl NAME [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-c] [--json FILE]
 *
 * --impl names the column in the JSON ("openmpi_default", "mpich"). -c
 * checks every size's result (inputs rank+1, float sum n(n+1)/2, exact)
 * and the exit status is 1 when an element is wrong. Sizes double from MIN
 * to MAX bytes (K, M suffixes), in whole floats. The JSON file has the
 * schema of ringmend_allreduce's (bench/README.md, "JSON files"), with
 * fewer keys in "run".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage_error(int rank, const char* what) {
  if (rank == 0)
    fprintf(stderr,
            "mpi_allreduce: %s\nusage: mpi_allreduce --impl NAME [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-c] "
            "[--json FILE]\n",
            what);
  MPI_Finalize();
  exit(2);
}

/* A size with an optional K/M/G suffix; 0 when it is not one. */
static size_t parse_size(const char* s) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  if (*end == 'K' || *end == 'k') v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
  else if (*end == 'G' || *end == 'g') v <<= 30, ++end;
  return *end == '\0' ? (size_t)v : 0;
}

static int parse_count(const char* s) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  return end != s && *end == '\0' && v > 0 && v < 100000000 ? (int)v : -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  const char* impl = NULL;
  const char* json_path = NULL;
  size_t min_bytes = 4, max_bytes = 1 << 20;
  int iters = -1, warmup = -1, validate = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--impl") == 0 && next) {
      impl = next, ++i;
    } else if (strcmp(a, "--json") == 0 && next) {
      json_path = next, ++i;
    } else if (strcmp(a, "-m") == 0 && next) {
      const char* colon = strchr(next, ':');
      char lo[64];
      if (!colon || (size_t)(colon - next) >= sizeof lo) usage_error(rank, "-m wants MIN:MAX");
      memcpy(lo, next, (size_t)(colon - next));
      lo[colon - next] = '\0';
      min_bytes = parse_size(lo), max_bytes = parse_size(colon + 1), ++i;
      if (min_bytes == 0 || max_bytes < min_bytes) usage_error(rank, "-m wants MIN:MAX, 0 < MIN <= MAX");
    } else if (strcmp(a, "-i") == 0 && next) {
      if ((iters = parse_count(next)) < 0) usage_error(rank, "-i wants a positive count");
      ++i;
    } else if (strcmp(a, "-x") == 0 && next) {
      if ((warmup = parse_count(next)) < 0) usage_error(rank, "-x wants a positive count");
      ++i;
    } else if (strcmp(a, "-c") == 0) {
      validate = 1;
    } else {
      char what[256];
      snprintf(what, sizeof what, "unknown or incomplete option '%s'", a);
      usage_error(rank, what);
    }
  }
  if (!impl) usage_error(rank, "--impl NAME is required (it names the column)");

  FILE* json = NULL;
  if (json_path && rank == 0 && !(json = fopen(json_path, "w"))) {
    fprintf(stderr, "mpi_allreduce: cannot write '%s'\n", json_path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const size_t max_count = max_bytes / sizeof(float) ? max_bytes / sizeof(float) : 1;
  float* in = malloc(max_count * sizeof(float));
  float* out = malloc(max_count * sizeof(float));
  if (!in || !out) MPI_Abort(MPI_COMM_WORLD, 2);
  for (size_t i = 0; i < max_count; ++i) in[i] = (float)(rank + 1), out[i] = 0;
  const float expect = (float)n * (float)(n + 1) / 2;
  const double busbw_factor = 2.0 * (n - 1) / n;

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(version, &len);
  for (char* c = version; *c; ++c)
    if (*c == '\n' || *c == '"' || *c == '\\' || *c == '\t') *c = ' ';
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  if (json) {
    char date[32];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    /* null: osu_allreduce's counts by size (each row gives its own) */
    char iters_text[16] = "null", warmup_text[16] = "null";
    if (iters > 0) snprintf(iters_text, sizeof iters_text, "%d", iters);
    if (warmup > 0) snprintf(warmup_text, sizeof warmup_text, "%d", warmup);
    fprintf(json,
            "{\"benchmark\": \"allreduce\", \"run\": {\"program\": \"mpi_allreduce\", \"date\": \"%s\", "
            "\"hostname\": \"%s\", \"ranks\": %d, \"mpi_library_version\": \"%s\"}, \"parameters\": "
            "{\"min_bytes\": %zu, \"max_bytes\": %zu, \"iterations\": %s, \"warmup\": %s, "
            "\"type\": \"float32\", \"op\": \"sum\", \"impl\": \"%s\", \"validate\": %s, "
            "\"busbw_factor\": %.17g}, \"rows\": [",
            date, host, n, version, min_bytes, max_bytes, iters_text, warmup_text, impl,
            validate ? "true" : "false", busbw_factor);
  }
  if (rank == 0)
    printf("# mpi_allreduce (%s), %d ranks: %s\n# %10s %16s %12s %8s\n", impl, n, version, "size", "avg us",
           "busbw GB/s", "wrong");

  long wrong_total = 0;
  int first_row = 1;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
    const size_t size = count * sizeof(float);
    const int it = iters > 0 ? iters : size <= 8192 ? 1000 : 100;
    const int wu = warmup > 0 ? warmup : size <= 8192 ? 200 : 20;
    long wrong = 0;
    if (validate) {
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      for (size_t i = 0; i < count; ++i) wrong += out[i] != expect;
      long all = 0;
      MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      wrong = all;
      wrong_total += wrong;
    }
    for (int i = 0; i < wu; ++i) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < it; ++i) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double mine = (MPI_Wtime() - t0) * 1e6 / it;
    double sum = 0, lo = 0, hi = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double avg = sum / n;
      const double algbw = avg > 0 ? (double)size / (avg * 1e3) : 0;
      const double busbw = algbw * busbw_factor;
      printf("  %10zu %16.2f %12.3f %8ld\n", size, avg, busbw, wrong);
      if (json) {
        char wrong_text[32] = "null";
        if (validate) snprintf(wrong_text, sizeof wrong_text, "%ld", wrong);
        fprintf(json,
                "%s{\"size\": %zu, \"count\": %zu, \"type\": \"float32\", \"op\": \"sum\", \"impl\": \"%s\", "
                "\"avg_latency_us\": %.6f, \"min_latency_us\": %.6f, \"max_latency_us\": %.6f, "
                "\"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f, \"wrong\": %s, \"iterations\": %d, "
                "\"warmup\": %d}",
                first_row ? "" : ", ", size, count, impl, avg, lo, hi, algbw, busbw, wrong_text, it, wu);
      }
      first_row = 0;
    }
    if (size >= max_bytes) break;
  }
  if (json) {
    fprintf(json, "]}\n");
    fclose(json);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return wrong_total == 0 ? 0 : 1;
}
