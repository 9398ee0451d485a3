// How a process started after the job began (a joiner: a later `srun` step
// in the same allocation, with RINGMEND_JOIN=1) finds the job and is
// admitted to its native group.
//
// The job's processes publish their records (group.hpp, PeerRecord) and the
// job's key in a rendezvous directory, one file each, written at start-up
// and removed when they leave. A joiner reads them, asks every process it
// can reach to admit it (JOIN, with its own record), and waits until a
// member welcomes it into a view that names it (WELCOME: that view's
// records). Any live member serves: the directory is no single point of
// failure, and a record of a dead process only costs a refused connection.
// A member that gets a JOIN answers with its current view (so the joiner
// can ask the others too) and asks for a view change that admits it
// (docs/membership.md, "Joiners").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "membership/native/group.hpp"

namespace ringmend::membership::native {

// The job's rendezvous directory: RINGMEND_RENDEZVOUS_DIR, else
// $HOME/.ringmend/jobs/<SLURM_JOB_ID> (steps of one allocation share it;
// $HOME is shared by a cluster's nodes); empty outside Slurm.
std::string rendezvous_dir();

// Writes this process's record and the job's key as <dir>/<id> (created
// with its directory; replaced atomically). Throws std::runtime_error.
void publish_record(const std::string& dir, const PeerRecord& record, std::uint64_t job_key);
// Removes it (a normal end); silent.
void withdraw_record(const std::string& dir, MemberId id);
// Where it is (for a process that must remove it on its way out).
std::string record_path(const std::string& dir, MemberId id);

// Joins the job whose records are in `dir`: the group of the view that
// admitted this process. Its id is random, above every id a launcher gives
// (2^30 and up). Throws std::runtime_error when no record is there, no
// member can be reached, or no view admits it within `timeout_seconds`.
std::unique_ptr<Group> join_running_job(const GroupSettings& settings, const std::string& interface,
                                        const std::string& dir, double timeout_seconds);

}  // namespace ringmend::membership::native
