/* Rank 0 calls MPI_Abort on MPI_COMM_SELF right after MPI_Init; under
 * fault tolerance only that process ends. The others then end one after
 * the other (rank r after r * 150 ms), each saying so first. Every one of
 * them must be seen to finish: an mpirun that counts the aborted process
 * twice (Open MPI 5.0.7's PRRTE, without
 * scripts/patches/prrte-5.0.7-count-failed-proc-once.patch) takes the job
 * for ended one process early and kills the last. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) MPI_Abort(MPI_COMM_SELF, 3);
  usleep((useconds_t)rank * 150000u);
  printf("rank %d finished\n", rank);
  fflush(stdout);
  /* Not MPI_Finalize: the process that aborted is still a member of
   * MPI_COMM_WORLD; what is tested is mpirun's count, not the finalize. */
  _exit(0);
}
