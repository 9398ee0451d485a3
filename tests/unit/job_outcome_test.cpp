// Rank records and the verdict over a job (slurm/job_outcome.hpp).
#include "slurm/job_outcome.hpp"
#include "slurm/job_verdict.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

namespace ringmend::slurm {
namespace {

RankRecord rank(int member, RankRecord::End how, int code, const std::string& runtime_words = "") {
  RankRecord r;
  r.member = member;
  r.host = "node" + std::to_string(member / 2);
  r.pid = 1000 + member;
  r.start = 100.0;
  r.end = 102.5;
  r.how = how;
  r.code = code;
  // Through the line, as ringmend-run gets it.
  return take_record(rank_record(r, runtime_words))->record;
}

RankRecord finished(int member, int epoch = 0, int size = 2, int recoveries = 0) {
  return rank(member, RankRecord::End::Exited, 0,
              "finished=1 epoch=" + std::to_string(epoch) + " size=" + std::to_string(size) +
                  " recoveries=" + std::to_string(recoveries) + " lost=-");
}

std::string all(const Verdict& v) {
  std::string s;
  for (const auto& l : v.lines) s += l + "\n";
  return s;
}

JudgeOptions started(int n) {
  JudgeOptions o;
  o.ranks_started = n;
  o.job_start = 100.0;
  return o;
}

TEST(RankRecord, SurvivesItsLine) {
  const RankRecord r = rank(3, RankRecord::End::Signaled, SIGSEGV, "finished=1 epoch=2 size=5 not-a-word");
  EXPECT_EQ(r.member, 3);
  EXPECT_EQ(r.host, "node1");
  EXPECT_EQ(r.pid, 1003);
  EXPECT_DOUBLE_EQ(r.end, 102.5);
  EXPECT_EQ(r.how, RankRecord::End::Signaled);
  EXPECT_EQ(r.code, SIGSEGV);
  EXPECT_TRUE(r.runtime_finished());
  EXPECT_EQ(r.words.at("epoch"), "2");
  EXPECT_EQ(r.words.count("not-a-word"), 0u);
}

TEST(RankRecord, TextBeforeTheMarkerIsTheProgramsOwn) {
  RankRecord r;
  r.member = 0;
  const auto taken = take_record("partial output" + rank_record(r, ""));
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->text_before, "partial output");
  EXPECT_FALSE(take_record("an ordinary line\n"));
  EXPECT_FALSE(take_record(std::string(kRecordMarker) + " member=x status=exit:0"));
}

TEST(Judge, EveryRankFinished) {
  const Verdict v = judge({finished(1), finished(0)}, started(2));
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_NE(all(v).find("2 ranks started, 2 finished normally, 0 lost"), std::string::npos) << all(v);
}

TEST(Judge, RecoveredLossesAreASuccessUnlessFailOnLoss) {
  std::vector<RankRecord> records{finished(0, 1, 2, 1), rank(1, RankRecord::End::Signaled, SIGKILL),
                                  finished(2, 1, 2, 1)};
  const Verdict v = judge(records, started(3));
  EXPECT_EQ(v.exit_status, 0);
  const std::string text = all(v);
  EXPECT_NE(text.find("3 ranks started, 2 finished normally, 1 lost; 1 recovery, final size 2 (epoch 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("member 1 on node0: killed by SIGKILL, 2.50 s after the start"), std::string::npos)
      << text;
  JudgeOptions strict = started(3);
  strict.fail_on_loss = true;
  EXPECT_EQ(judge(records, strict).exit_status, 3);
}

TEST(Judge, SparesAreCountedApartFromTheRanks) {
  // Members 0-2 and spares 3-4: member 1 died, spare 3 replaced it, spare 4
  // was not needed; one more spare (5) died while waiting.
  std::vector<RankRecord> records{
      finished(0, 2, 3, 1),
      rank(1, RankRecord::End::Signaled, SIGKILL),
      finished(2, 2, 3, 1),
      rank(3, RankRecord::End::Exited, 0,
           "started=1 spare=1 admitted=1 finished=1 epoch=2 size=3 recoveries=0 lost=-"),
      rank(4, RankRecord::End::Exited, 0, "spare=1 spare_unused=1"),
      rank(5, RankRecord::End::Signaled, SIGKILL, "spare=1")};
  const Verdict v = judge(records, started(6));
  EXPECT_EQ(v.exit_status, 0);
  const std::string text = all(v);
  EXPECT_NE(text.find("6 ranks started (3 spares: 1 admitted, 1 not needed), 3 finished normally, 1 lost"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("spare 5 on node2: killed by SIGKILL before it was needed"), std::string::npos) << text;
  EXPECT_EQ(text.find("member 4"), std::string::npos) << text;
}

TEST(Judge, ReleasedMembersAreNeitherFinishedNorLost) {
  // Member 2 was released (it left and exited 0); member 3 was released too
  // but then exited 1: its own verdict, which the job passes on.
  const std::vector<RankRecord> records{
      finished(0, 1, 2, 0), finished(1, 1, 2, 0),
      rank(2, RankRecord::End::Exited, 0,
           "started=1 released=1 finished=1 epoch=0 size=4 recoveries=0 lost=-")};
  const Verdict v = judge(records, started(3));
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_NE(all(v).find("3 ranks started, 2 finished normally, 1 released, 0 lost"), std::string::npos)
      << all(v);
  auto failing = records;
  failing.push_back(rank(3, RankRecord::End::Exited, 1,
                         "started=1 released=1 finished=1 epoch=0 size=4 recoveries=0 lost=-"));
  EXPECT_EQ(judge(failing, started(4)).exit_status, 1);
}

// "normally" only when it is true: a rank whose application saw collective
// errors and exited 0 all the same is named, and the job's line says so.
TEST(Judge, ErrorsTheApplicationSawAreNamed) {
  const std::vector<RankRecord> records{
      finished(0, 1, 2, 0), rank(1, RankRecord::End::Exited, 0,
                                 "started=1 finished=1 epoch=1 size=2 recoveries=0 lost=- errors=3")};
  const Verdict v = judge(records, started(2));
  EXPECT_EQ(v.exit_status, 0);
  const std::string text = all(v);
  EXPECT_NE(text.find("1 finished normally, 1 finished after collective errors, 0 lost"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("member 1 on node0: finished, exit status 0, after 3 collective errors its application saw"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("exit status 0: every rank finished (1 rank after collective errors"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("every rank finished normally"), std::string::npos) << text;
}

// A member excluded as stuck is lost, and the summary says by whom.
TEST(Judge, MembersExcludedAsStuckAreNamed) {
  const std::vector<RankRecord> records{
      finished(0, 1, 2, 1), finished(1, 1, 2, 1),
      rank(2, RankRecord::End::Signaled, SIGKILL, "started=1 excluded_by=0 stuck_for=60.2"),
      rank(3, RankRecord::End::Signaled, SIGKILL, "started=1 excluded_by=launcher stuck_for=61.0")};
  const Verdict v = judge(records, started(4));
  EXPECT_EQ(v.exit_status, 0);
  const std::string text = all(v);
  EXPECT_NE(text.find("2 finished normally, 2 lost (2 of them excluded as stuck)"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("member 2 on node1: excluded as stuck (no progress for 60.2 s while member 0 waited for it) and killed"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("member 3 on node1: excluded as stuck (no progress for 61.0 s) by its launcher"),
            std::string::npos)
      << text;
}

// A straggler released (policy release) left the job and is named; one
// found under policy report stays and is named too.
TEST(Judge, StragglersAreNamed) {
  const std::vector<RankRecord> records{
      finished(0, 1, 3, 1), finished(1, 1, 3, 1),
      rank(2, RankRecord::End::Exited, 0, "straggler=0.612 released=1 finished=1 epoch=1 size=3"),
      rank(3, RankRecord::End::Exited, 0, "straggler=0.3 finished=1 epoch=1 size=3 recoveries=1 lost=-")};
  const Verdict v = judge(records, started(4));
  EXPECT_EQ(v.exit_status, 0);
  const std::string text = all(v);
  EXPECT_NE(text.find("3 finished normally, 1 released (1 as a straggler), 0 lost"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("member 2 on node1: released as a straggler (the others waited for it up to 61% of their time)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("member 3 on node1: a straggler (the others waited for it up to 30% of their time), kept"),
            std::string::npos)
      << text;
}

TEST(Judge, NoRankFinishedIsAFailure) {
  const Verdict v = judge({rank(0, RankRecord::End::Signaled, SIGSEGV, "started=1"),
                           rank(1, RankRecord::End::Signaled, SIGSEGV, "started=1")},
                          started(2));
  EXPECT_EQ(v.exit_status, 1);
  EXPECT_NE(all(v).find("crashed with SIGSEGV (a crash is probably a bug"), std::string::npos) << all(v);
  // The first non-zero exit status of a lost rank, when there is one.
  EXPECT_EQ(judge({rank(0, RankRecord::End::Exited, 4), rank(1, RankRecord::End::Exited, 4)}, started(2))
                .exit_status,
            4);
}

TEST(Judge, ASurvivorsOwnStatusIsTheJobs) {
  const Verdict v =
      judge({finished(0), rank(1, RankRecord::End::Exited, 5, "finished=1 epoch=0 size=2")}, started(2));
  EXPECT_EQ(v.exit_status, 5);
  EXPECT_NE(all(v).find("member 1 on node0: finished its work, then exited with status 5"), std::string::npos)
      << all(v);
}

TEST(Judge, AMissingRecordIsALoss) {
  const Verdict v = judge({finished(0, 1, 1, 1)}, started(2));
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_NE(all(v).find("member 1: no record of how it ended"), std::string::npos) << all(v);
}

TEST(Judge, WithoutAnyRecordNothingSaysTheJobSucceeded) {
  // Under fault tolerance mpirun exits 0 whatever happened: no record is no
  // evidence of success.
  JudgeOptions o = started(2);
  o.mpirun_status = 0;
  Verdict v = judge({}, o);
  EXPECT_EQ(v.exit_status, 1);
  EXPECT_NE(all(v).find("the outcome is unknown"), std::string::npos) << all(v);
  o.mpirun_status = 7;
  v = judge({}, o);
  EXPECT_EQ(v.exit_status, 7);
  EXPECT_NE(all(v).find("no rank reported how it ended"), std::string::npos) << all(v);
}

TEST(Judge, ALostNodeEndsTheJobWithItsOwnStatus) {
  // PRRTE's message when a node's daemon dies, as mpirun prints it.
  EXPECT_EQ(lost_daemon_node("  Remote daemon: [prterun-vm-7958@0,2] on node n2\n"), "n2");
  EXPECT_EQ(lost_daemon_node("  HNP daemon   : [prterun-vm-7958@0,0] on node vm"), std::nullopt);
  EXPECT_EQ(lost_daemon_node("Remote daemon: [x,1] on node "), std::nullopt);
  JudgeOptions o = started(4);
  o.member_hosts = {"n1", "n1", "n2", "n2"};
  o.lost_nodes = {"n2"};
  // The runtime ended the job: the ranks of n1 were killed, n2's said nothing.
  Verdict v = judge({rank(0, RankRecord::End::Signaled, SIGKILL, "started=1"),
                     rank(1, RankRecord::End::Signaled, SIGKILL, "started=1")},
                    o);
  EXPECT_EQ(v.exit_status, kExitNodeLost);
  EXPECT_NE(all(v).find("member 2 on n2: lost with its node"), std::string::npos) << all(v);
  EXPECT_NE(all(v).find("node n2 was lost"), std::string::npos) << all(v);
  EXPECT_NE(all(v).find("--exclude n2"), std::string::npos) << all(v);
  // Often not one record comes back.
  EXPECT_EQ(judge({}, o).exit_status, kExitNodeLost);
}

TEST(Judge, ACrashWhileMpiStartsIsNotAStartFailure) {
  // A crash is a bug: starting again would meet it again.
  const Verdict v = judge(
      {rank(0, RankRecord::End::Signaled, SIGSEGV), rank(1, RankRecord::End::Signaled, SIGSEGV)}, started(2));
  EXPECT_EQ(v.exit_status, 1);
}

TEST(Judge, TheShutdownIsTimedFromTheLastCall) {
  RankRecord a = rank(0, RankRecord::End::Exited, 0, "finished=1 epoch=0 size=2 shutdown_from=1000.250");
  RankRecord b = rank(1, RankRecord::End::Exited, 0, "finished=1 epoch=0 size=2 shutdown_from=1000.500");
  JudgeOptions o = started(2);
  o.job_end = 1000.75;
  const Verdict v = judge({a, b}, o);
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_NE(all(v).find("the job ended 0.25 s after the last rank's last call"), std::string::npos) << all(v);
}

TEST(Judge, TheWatchdogIsReported) {
  RankRecord r = rank(0, RankRecord::End::Exited, 0, "finished=1 epoch=0 size=1 finalize_timeout=1");
  const Verdict v = judge({r}, started(1));
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_NE(all(v).find("the shutdown watchdog ended it"), std::string::npos) << all(v);
}

TEST(Judge, ARecoveryEndedByItsWatchdogIsALossThatSaysSo) {
  // Member 2 killed; member 1's recovery then stuck in MPI, ended by its
  // watchdog (status 71); members 0 and 3 recovered without both.
  std::vector<RankRecord> records = {
      finished(0, 2, 2, 1), rank(1, RankRecord::End::Exited, 71, "started=1 recovery_timeout=1"),
      rank(2, RankRecord::End::Signaled, SIGKILL, "started=1"), finished(3, 2, 2, 1)};
  Verdict v = judge(records, started(4));
  EXPECT_EQ(v.exit_status, 0) << all(v);
  EXPECT_NE(all(v).find("member 1 on node0: stuck in a call to MPI during a recovery or a change of "
                        "membership; the recovery watchdog ended it"),
            std::string::npos)
      << all(v);
  EXPECT_NE(all(v).find("member 1 on node0: exited with status 71"), std::string::npos) << all(v);
  // Every survivor stuck: nobody finished, and the status says which end.
  records[0] = records[3] = records[1];
  records[0].member = 0;
  records[3].member = 3;
  v = judge(records, started(4));
  EXPECT_EQ(v.exit_status, 71) << all(v);
  EXPECT_NE(all(v).find("no rank finished normally"), std::string::npos) << all(v);
}

TEST(Judge, ADeathWhileMpiStartsIsAStartFailure) {
  // Open MPI failed MPI_Init on the others (status 14): nothing ran. The
  // Runtime had begun its start (it says so before MPI_Init).
  std::vector<RankRecord> records = {rank(0, RankRecord::End::Exited, 14, "runtime=1"),
                                     rank(1, RankRecord::End::Signaled, SIGKILL, "runtime=1"),
                                     rank(2, RankRecord::End::Exited, 14, "runtime=1")};
  Verdict v = judge(records, started(3));
  EXPECT_EQ(v.exit_status, kExitStartFailed);
  EXPECT_NE(all(v).find("the job did not start"), std::string::npos) << all(v);
  // The watchdog ended the others' start-up.
  records[0] = rank(0, RankRecord::End::Exited, 70, "runtime=1 start_timeout=1");
  records[2] = rank(2, RankRecord::End::Exited, 70, "runtime=1 start_timeout=1");
  v = judge(records, started(3));
  EXPECT_EQ(v.exit_status, kExitStartFailed);
  EXPECT_NE(all(v).find("the start-up watchdog ended it"), std::string::npos) << all(v);
  // Once a rank completed its start-up, a later failure is a failed run.
  records[0] = rank(0, RankRecord::End::Exited, 1, "started=1");
  EXPECT_EQ(judge(records, started(3)).exit_status, 1);
}

TEST(Judge, AnMpiInitThatFailedAfterAPeersDeathIsALossOfTheJobThatWentOn) {
  // Member 2 killed while MPI started; member 0's MPI_Init then failed
  // (returned to its Runtime, which said so); the others started and
  // finished without both.
  const std::vector<RankRecord> records = {
      rank(0, RankRecord::End::Exited, 4, "runtime=1 mpi_init_failed=1"), finished(1, 0, 2, 1),
      rank(2, RankRecord::End::Signaled, SIGKILL, "runtime=1"), finished(3, 0, 2, 1)};
  const Verdict v = judge(records, started(4));
  EXPECT_EQ(v.exit_status, 0) << all(v);
  EXPECT_NE(all(v).find("2 finished normally, 2 lost"), std::string::npos) << all(v);
  EXPECT_NE(all(v).find("member 0 on node0: its MPI_Init failed; it exited with status 4"), std::string::npos)
      << all(v);
  EXPECT_NE(all(v).find("can make MPI_Init fail on others"), std::string::npos) << all(v);
  // Without a death at start-up nothing blames one.
  const Verdict alone = judge({records[0], records[1], finished(2, 0, 3, 1), records[3]}, started(4));
  EXPECT_EQ(alone.exit_status, 0) << all(alone);
  EXPECT_EQ(all(alone).find("can make MPI_Init fail on others"), std::string::npos) << all(alone);
}

TEST(Judge, AStepSlurmsPmixPluginEndedIsARerunHoweverFarTheOthersGot) {
  // slurmstepd's line when a task still connected to srun's PMIx server dies.
  EXPECT_TRUE(pmix_plugin_ends_step(
      "slurmstepd-n3: error:  mpi/pmix_v4: _errhandler: n3 [2]: pmixp_client_v2.c:211: Error handler "
      "invoked: status = -61, source = [slurm.pmix.43.0:5]"));
  EXPECT_FALSE(
      pmix_plugin_ends_step("slurmstepd-n1: error: *** STEP 43.0 ON n1 CANCELLED AT 2026-12-01 ***"));
  // Member 2 died inside srun's PMIx; the others had started (and run their
  // first calls) when Slurm killed them all.
  const std::vector<RankRecord> records = {rank(0, RankRecord::End::Signaled, SIGKILL, "runtime=1 started=1"),
                                           rank(1, RankRecord::End::Signaled, SIGKILL, "runtime=1 started=1"),
                                           rank(2, RankRecord::End::Signaled, SIGKILL, "runtime=1")};
  JudgeOptions o = started(3);
  EXPECT_NE(judge(records, o).exit_status, kExitStartFailed) << all(judge(records, o));
  o.step_ended_by_pmix = true;
  const Verdict v = judge(records, o);
  EXPECT_EQ(v.exit_status, kExitStartFailed) << all(v);
  EXPECT_NE(all(v).find("Slurm ended the step"), std::string::npos) << all(v);
  // A rank that finished first makes it a job that ran: judged as such.
  const Verdict ran = judge({finished(0, 0, 3), records[1], records[2]}, o);
  EXPECT_EQ(ran.exit_status, 0) << all(ran);
}

TEST(Judge, AStepSlurmsPmixPluginEndedBeforeAnyStartIsWordedAsSlurmsEnd) {
  // Every task killed by Slurm before any had started: no MPI was starting
  // (srun), so the words are Slurm's end of the step, not MPI's start.
  const std::vector<RankRecord> records = {rank(0, RankRecord::End::Signaled, SIGKILL, "runtime=1"),
                                           rank(1, RankRecord::End::Signaled, SIGKILL, "runtime=1"),
                                           rank(2, RankRecord::End::Signaled, SIGKILL, "runtime=1")};
  JudgeOptions o = started(3);
  const Verdict mpi = judge(records, o);
  EXPECT_EQ(mpi.exit_status, kExitStartFailed) << all(mpi);
  EXPECT_NE(all(mpi).find("while MPI started"), std::string::npos) << all(mpi);
  o.step_ended_by_pmix = true;
  const Verdict v = judge(records, o);
  EXPECT_EQ(v.exit_status, kExitStartFailed) << all(v);
  EXPECT_NE(all(v).find("Slurm ended the step"), std::string::npos) << all(v);
  EXPECT_EQ(all(v).find("while MPI started"), std::string::npos) << all(v);
}

TEST(Judge, AProgramWithoutTheRuntimeIsNotTakenForAFailedStart) {
  // Plain MPI under ringmend-run: mpirun ended every rank after one died.
  // Nothing says that MPI was starting; the ranks are simply lost.
  const std::vector<RankRecord> records = {rank(0, RankRecord::End::Signaled, SIGKILL),
                                           rank(1, RankRecord::End::Signaled, SIGKILL),
                                           rank(2, RankRecord::End::Signaled, SIGKILL)};
  const Verdict v = judge(records, started(3));
  EXPECT_NE(v.exit_status, 0);
  EXPECT_NE(v.exit_status, kExitStartFailed);
  EXPECT_NE(all(v).find("none reported reaching ringmend's Runtime"), std::string::npos) << all(v);
  EXPECT_EQ(all(v).find("did not start"), std::string::npos) << all(v);
}

}  // namespace
}  // namespace ringmend::slurm
