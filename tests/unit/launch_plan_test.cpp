#include "slurm/launch_plan.hpp"

#include <gtest/gtest.h>

using namespace ringmend::slurm;

namespace {
std::vector<NodeSlots> nodes(std::initializer_list<NodeSlots> l) { return l; }
const auto two_by_two = nodes({{"n1", 2}, {"n2", 2}});
std::string hosts(const Placement& p) { return host_argument(p) + " np " + std::to_string(p.ranks); }
PlacementRequest req(int ranks, int nodes = 0, int per = 0, bool over = false) {
  PlacementRequest r;
  r.ranks = ranks;
  r.nodes = nodes;
  r.ranks_per_node = per;
  r.oversubscribe = over;
  return r;
}
std::string error_of(const std::vector<NodeSlots>& n, const PlacementRequest& r) {
  try {
    auto p = place_in_allocation(n, r, "SLURM_TASKS_PER_NODE=2(x2)");
    return "placed " + hosts(p);
  } catch (const LaunchError& e) {
    return e.what();
  }
}
}  // namespace

TEST(Placement, DefaultUsesEverySlot) {
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(0), "")), "n1:2,n2:2 np 4");
  EXPECT_EQ(hosts(place_in_allocation(nodes({{"a", 2}, {"b", 2}, {"c", 2}, {"d", 1}}), req(0), "")),
            "a:2,b:2,c:2,d:1 np 7");
}

TEST(Placement, RanksFillNodesInOrder) {
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(3), "")), "n1:2,n2:1 np 3");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(1), "")), "n1:1 np 1");
}

TEST(Placement, RanksPerNode) {
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(0, 0, 1), "")), "n1:1,n2:1 np 2");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(3, 0, 2), "")), "n1:2,n2:1 np 3");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(2, 0, 2), "")), "n1:2 np 2");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(0, 1, 2), "")), "n1:2 np 2");
}

TEST(Placement, NodesSpreadRanksEvenly) {
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(0, 1), "")), "n1:2 np 2");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(2, 2), "")), "n1:1,n2:1 np 2");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(3, 2), "")), "n1:2,n2:1 np 3");
}

TEST(Placement, OversubscribeAllowsMoreRanksThanSlots) {
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(6, 0, 0, true), "")), "n1:3,n2:3 np 6");
  EXPECT_EQ(hosts(place_in_allocation(two_by_two, req(0, 0, 4, true), "")), "n1:4,n2:4 np 8");
}

TEST(Placement, ErrorsSayWhatIsWrongAndWhatToDo) {
  const auto more = error_of(two_by_two, req(5));
  EXPECT_NE(more.find("more ranks than slots: 5 ranks asked, the allocation has 4 task slots (n[1-2] with "
                      "2(x2) task slots per node"),
            std::string::npos)
      << more;
  EXPECT_NE(more.find("--oversubscribe"), std::string::npos) << more;
  EXPECT_NE(more.find("SLURM_TASKS_PER_NODE"), std::string::npos) << more;
  EXPECT_NE(error_of(two_by_two, req(0, 3)).find("--nodes 3: the allocation has 2 usable nodes"),
            std::string::npos);
  EXPECT_NE(error_of(two_by_two, req(0, 0, 3)).find("node n1 has 2 task slots"), std::string::npos);
  EXPECT_NE(error_of(two_by_two, req(6, 0, 2)).find("need 3 nodes"), std::string::npos);
  EXPECT_NE(error_of(two_by_two, req(2, 2, 2)).find("fills 1 node"), std::string::npos);
  EXPECT_NE(error_of(two_by_two, req(1, 2)).find("fewer ranks than --nodes"), std::string::npos);
  EXPECT_NE(error_of(nodes({{"n1", 1}, {"n2", 3}}), req(4, 2)).find("put 2 on n1"), std::string::npos);
  EXPECT_NE(error_of({}, req(0)).find("no node is left"), std::string::npos);
  try {
    place_in_allocation({{"n1", 2}}, req(4), "", {"n2"});
    FAIL();
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("left out: n2 (--exclude, a lost node, or the network check)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Placement, Locally) {
  EXPECT_EQ(place_locally(8, req(0)).ranks, 8);
  EXPECT_EQ(place_locally(8, req(3)).ranks, 3);
  EXPECT_EQ(place_locally(8, req(0, 0, 2)).ranks, 2);
  EXPECT_TRUE(place_locally(8, req(2)).hosts.empty());
  EXPECT_EQ(place_locally(2, req(4, 0, 0, true)).ranks, 4);
  EXPECT_EQ(place_locally(2, req(0, 1)).ranks, 2);
  auto error = [](int cpus, const PlacementRequest& r) {
    try {
      place_locally(cpus, r);
      return std::string("placed");
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(error(2, req(4)).find("more ranks than slots: 4 ranks asked, this machine has 2 CPUs"),
            std::string::npos);
  EXPECT_NE(error(2, req(0, 2)).find("needs a Slurm allocation"), std::string::npos);
  EXPECT_NE(error(8, req(4, 0, 2)).find("only this machine"), std::string::npos);
}

TEST(Command, FaultToleranceHostsAndPassThroughInOrder) {
  CommandOptions o;
  o.mpirun = "/opt/ompi/bin/mpirun";
  o.as_root = true;
  o.ft_args = {"--with-ft", "ulfm", "--mca", "pml", "ob1"};
  o.forward_env = {"RINGMEND_TIMEOUT"};
  o.extra = {"-x", "FOO=1", "--mca", "btl_tcp_if_include", "ib0"};
  o.program = {"./app", "--steps=3", "a b"};
  const auto p = place_in_allocation(two_by_two, req(0), "");
  EXPECT_EQ(
      shell_join(mpirun_command(p, o)),
      "/opt/ompi/bin/mpirun --allow-run-as-root --with-ft ulfm --mca pml ob1 --host n1:2,n2:2 --map-by slot "
      "--prtemca plm_slurm_args --overlap -np 4 -x RINGMEND_TIMEOUT -x FOO=1 --mca btl_tcp_if_include ib0 "
      "./app --steps=3 'a b'");
  o.as_root = false;
  o.ft_args.clear();
  o.forward_env.clear();
  o.extra.clear();
  o.cpus_per_task = 4;
  o.oversubscribe = true;
  EXPECT_EQ(shell_join(mpirun_command(p, o)),
            "/opt/ompi/bin/mpirun --host n1:2,n2:2 --map-by slot:PE=4 --prtemca plm_slurm_args --overlap -np "
            "4 --oversubscribe ./app --steps=3 'a b'");
  EXPECT_EQ(shell_join(mpirun_command(place_locally(4, req(2)), o)),
            "/opt/ompi/bin/mpirun -np 2 --oversubscribe ./app --steps=3 'a b'");
}

TEST(Command, SrunPlacesEveryTaskAndKeepsTheStepThroughLosses) {
  CommandOptions o;
  o.mpirun = "/usr/bin/srun";
  o.ft_args = {"--with-ft", "ulfm"};  // mpirun's: not srun's
  o.forward_env = {"RINGMEND_TIMEOUT"};
  o.program = {"./app", "a b"};
  const auto p = place_in_allocation(two_by_two, req(0), "");
  EXPECT_EQ(shell_join(srun_command(p, o)),
            "/usr/bin/srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n 4 -w n1,n1,n2,n2 -m arbitrary ./app "
            "'a b'");
  o.cpus_per_task = 2;
  o.oversubscribe = true;
  EXPECT_EQ(shell_join(srun_command(place_in_allocation(two_by_two, req(3), ""), o)),
            "/usr/bin/srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n 3 -w n1,n1,n2 -m arbitrary -c 2 "
            "--overcommit ./app 'a b'");
}

TEST(Command, ShellQuoting) {
  EXPECT_EQ(shell_quote("plain-word_1.2/x:y,z=3@%+"), "plain-word_1.2/x:y,z=3@%+");
  EXPECT_EQ(shell_quote("^han"), "'^han'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("a;b"), "'a;b'");
}

TEST(MpirunArgs, RanksAreCountedUpToEachProgram) {
  const auto is_program = [](const std::string& a) { return a == "./app" || a == "./other"; };
  EXPECT_EQ(ranks_in_mpirun_args({"--oversubscribe", "-np", "3", "./app", "-n", "7"}, is_program), 3);
  EXPECT_EQ(ranks_in_mpirun_args({"--np=4", "./app"}, is_program), 4);
  EXPECT_EQ(ranks_in_mpirun_args({"-n", "2", "./app", "-c", "9", ":", "-n", "3", "./other"}, is_program), 5);
  EXPECT_EQ(ranks_in_mpirun_args({"--host", "a,b", "./app"}, is_program), 0);
}
