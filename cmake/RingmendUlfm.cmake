# Does the MPI found by FindMPI have ULFM (the MPIX_ fault-tolerance calls)?
# Open MPI 5 built with --with-ft=ulfm defines OMPI_HAVE_MPI_EXT_FTMPI in
# <mpi-ext.h>. Point CMake at another MPI with -DMPI_HOME=... or
# -DMPIEXEC_EXECUTABLE=.../mpirun (the standard FindMPI hints).
include(CheckCSourceCompiles)
include(CMakePushCheckState)

cmake_push_check_state(RESET)
set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
set(CMAKE_REQUIRED_QUIET ON)
check_c_source_compiles([=[
#include <mpi.h>
#include <mpi-ext.h>
#if !defined(OMPI_HAVE_MPI_EXT_FTMPI) || !OMPI_HAVE_MPI_EXT_FTMPI
#error "no ULFM"
#endif
int main(void) {
  MPI_Comm c = MPI_COMM_WORLD, n;
  int flag = 1;
  MPIX_Comm_revoke(c);
  MPIX_Comm_shrink(c, &n);
  MPIX_Comm_agree(c, &flag);
  return 0;
}
]=] RINGMEND_HAVE_ULFM)
cmake_pop_check_state()

get_filename_component(_ringmend_mpi_dir "${MPIEXEC_EXECUTABLE}" DIRECTORY)
if(RINGMEND_HAVE_ULFM)
  message(STATUS "ringmend: MPI has ULFM fault tolerance (OMPI_HAVE_MPI_EXT_FTMPI): ${_ringmend_mpi_dir}")
elseif(RINGMEND_REQUIRE_ULFM)
  message(FATAL_ERROR
    "ringmend: the MPI found (${MPIEXEC_EXECUTABLE}, MPI ${MPI_C_VERSION}) has no ULFM "
    "fault tolerance (OMPI_HAVE_MPI_EXT_FTMPI is not set in <mpi-ext.h>).\n"
    "ringmend needs Open MPI >= 5.0 configured with --with-ft=ulfm. Either\n"
    "  * run scripts/bootstrap.sh, which builds one, and pass\n"
    "      -DMPI_HOME=<prefix it prints>   (or -DMPIEXEC_EXECUTABLE=<prefix>/bin/mpirun), or\n"
    "  * load your site's Open MPI 5 module built with ULFM, or\n"
    "  * configure with -DRINGMEND_REQUIRE_ULFM=OFF to build without fault tolerance\n"
    "    (a rank failure then ends the job with a clear error).")
else()
  message(WARNING "ringmend: MPI has no ULFM; building WITHOUT fault tolerance "
    "(RINGMEND_REQUIRE_ULFM=OFF). A rank failure will end the job.")
endif()
set(RINGMEND_HAVE_ULFM ${RINGMEND_HAVE_ULFM})
