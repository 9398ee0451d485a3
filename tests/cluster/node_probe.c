/* Prints where each rank runs: its world rank, the Slurm node it was started
 * on (SLURMD_NODENAME, SLURM_NODEID), the number of ranks sharing its node
 * according to MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), and its pid.
 * With --expect=A,B (ranks per node, in node order) it checks the layout, a
 * node named by SLURMD_NODENAME, else by the host name (nodes emulated on one
 * machine, tests/cluster/run_on_emulated_nodes.sh, differ only in that):
 * rank 0 prints "TEST PASSED"/"TEST FAILED" for the whole job.
 *
 *   node_probe [--expect=3,1] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, local;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  MPI_Comm_size(shared, &local);
  const char* node = getenv("SLURMD_NODENAME");
  const char* nodeid = getenv("SLURM_NODEID");
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  printf("rank %d of %d: node %s (SLURM_NODEID %s), %d ranks share it, host %s, pid %ld\n", rank, size,
         node ? node : "?", nodeid ? nodeid : "?", local, host, (long)getpid());
  fflush(stdout);

  const char* expect = NULL;
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], "--expect=", 9) == 0) expect = argv[i] + 9;
  int failed = 0;
  if (expect) {
    /* Gather each rank's node name and shared-memory size on rank 0. */
    char name[64] = "";
    snprintf(name, sizeof name, "%.63s", node ? node : host); /* names longer than 63 are cut */
    char* names = rank == 0 ? calloc((size_t)size, sizeof name) : NULL;
    int* locals = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    MPI_Gather(name, sizeof name, MPI_CHAR, names, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Gather(&local, 1, MPI_INT, locals, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      /* Expected: ranks 0..A-1 on the first node, the next B on a second, ... */
      int first = 0, nodes = 0;
      const char* p = expect;
      char seen[16][64];
      while (*p) {
        const int count = atoi(p);
        if (count <= 0 || first + count > size || nodes == 16) {
          failed = 1;
          break;
        }
        const char* n0 = names + (size_t)first * sizeof name;
        if (!*n0) {
          fprintf(stderr, "node_probe: rank %d has no node name\n", first);
          failed = 1;
        }
        for (int k = 0; k < nodes; ++k)
          if (strcmp(seen[k], n0) == 0) {
            fprintf(stderr, "node_probe: node %s appears twice\n", n0);
            failed = 1;
          }
        snprintf(seen[nodes++], 64, "%s", n0);
        for (int r = first; r < first + count; ++r) {
          const char* nr = names + (size_t)r * sizeof name;
          if (strcmp(nr, n0) != 0 || locals[r] != count) {
            fprintf(stderr, "node_probe: rank %d is on %s with %d local ranks; expected %s with %d\n", r, nr,
                    locals[r], n0, count);
            failed = 1;
          }
        }
        first += count;
        p = strchr(p, ',');
        if (!p) break;
        ++p;
      }
      if (first != size) {
        fprintf(stderr, "node_probe: layout %s covers %d ranks, the job has %d\n", expect, first, size);
        failed = 1;
      }
      printf("TEST %s layout %s over %d nodes\n", failed ? "FAILED" : "PASSED", expect, nodes);
      free(names);
      free(locals);
    }
  }
  MPI_Comm_free(&shared);
  MPI_Finalize();
  return failed;
}
