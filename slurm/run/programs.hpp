// The programs a launch runs, found and checked before anything starts:
// mpirun (Open MPI 5 with ULFM, or srun), the FT arguments, ringmend-rank,
// ringmend-netcheck and the user's program; and running a helper command
// with its output captured. Every failure is a Fatal saying what to do.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ringmend::slurm::run {

bool executable_file(const std::string& path);
// The first executable `name` in PATH's directories; empty when none.
std::string on_path(const std::string& name);
std::string real_path(const std::string& path);
// The directory of this executable (the installed layout is relative to it).
std::string self_directory();
int local_cpus();

// In a child after fork(): runs the command (no shell); if that fails, says
// why and exits with `status`.
[[noreturn]] void exec_command(const std::vector<std::string>& cmd, int status);

struct Captured {
  int status = -1;  // exit status; -1: could not run or timed out
  std::string output;
};
// Runs argv (no shell) with stdout and stderr captured, for at most `seconds`.
Captured capture(const std::vector<std::string>& args, double seconds);

// The lines of a settings file (the FT arguments, --exclude-file), trimmed,
// without blank lines and '#' comments; nullopt when it cannot be opened.
std::optional<std::vector<std::string>> read_lines_file(const std::string& path);

struct Mpirun {
  std::string path;
  std::string from;     // where the choice came from, for messages
  std::string version;  // "5.0.7"
};
// --mpirun, else MPIEXEC, else the one ringmend was built with, else PATH's.
Mpirun find_mpirun(const std::string& given);
// Open MPI, and with `need_ulfm` version 5+ built with the ftmpi extension.
void check_mpirun(Mpirun& m, bool need_ulfm, bool verbose);

struct FtArgs {
  std::vector<std::string> args;
  std::string source;
};
// The one list of FT arguments: RINGMEND_FT_ARGS_FILE, the installed file
// (so that a site can adapt it without rebuilding), in the build tree the
// source file, else the copy compiled in from that same file.
FtArgs fault_tolerance_args(const std::string& self_dir);

std::string find_netcheck(const std::string& self_dir);
// ringmend-rank, which starts each rank and reports how it ended.
std::string find_rank_launcher(const std::string& self_dir);
// The user's program exists and can run (a path, or a name on PATH).
void check_program(const std::string& program);

// The runtime's settings (RINGMEND_TIMEOUT, RINGMEND_FAULT, ...) to forward
// with -x; the variables that describe the installation stay out.
std::vector<std::string> ringmend_variables();

}  // namespace ringmend::slurm::run
