/* A child of rank 0 connects to the node's PMIx server (mpirun here) in
 * rank 0's name but as another user, which the server must turn away;
 * then every rank finishes normally, and mpirun must end. Open MPI 5.0.7's
 * PMIx, turning a client away after it had made the client's peer, freed
 * the rank's record while it was still listed, and mpirun then hung for
 * good in its own finalize (scripts/patches/
 * openpmix-5.0.7-ptl-rejected-client-double-release.patch). A rank killed
 * during its PMIx handshake takes the same path; another user's
 * credential takes it every time. Run as root (it changes user). */
#include <mpi.h>
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int as_stranger(void) {
  /* nobody:nogroup */
  if (setgid(65534) != 0 || setuid(65534) != 0) {
    perror("pmix_rejected_client: cannot become another user");
    return 2;
  }
  pmix_proc_t me;
  const pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  printf("another user's PMIx_Init: %s\n", PMIx_Error_string(rc));
  fflush(stdout);
  return rc == PMIX_SUCCESS ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--as-stranger") == 0) return as_stranger();
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      execl("/proc/self/exe", argv[0], "--as-stranger", (char*)NULL);
      _exit(3);
    }
    int status = -1;
    if (child > 0) waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      printf("the PMIx server turned another user's client away\n");
    else
      printf("the other user's client was not turned away as expected (status %d)\n", status);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d finished\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
