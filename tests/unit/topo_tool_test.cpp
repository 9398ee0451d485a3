#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "topo/hwloc_handle.hpp"
#include "topo/tool/simulate.hpp"

using namespace ringmend::topo;

namespace {

using Ranks = std::vector<int>;

Topology synthetic(const char* description) {
  std::string error;
  Topology topo = load_topology(TopologySource::Synthetic, description, HWLOC_TYPE_FILTER_KEEP_ALL, error);
  EXPECT_TRUE(topo) << error;
  return topo;
}

struct ToolRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

ToolRun tool(const std::string& args) {
  ToolRun run;
  const std::string command = std::string("'") + RINGMEND_TOPO_TOOL + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) run.out.append(buf, n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

const std::string kXml = std::string(RINGMEND_TEST_DATA_DIR) + "/topo/2pkg-2gpu-2nic.xml";

}  // namespace

TEST(Simulate, RanksFillNodesInBlocksAndCoresRoundRobin) {
  const Topology topo = synthetic("pack:2 core:2 pu:2");
  ASSERT_TRUE(topo);
  const Simulation sim = simulate(topo.get(), 11, 2, {});
  EXPECT_EQ(sim.node_key, (Ranks{0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6}));
  EXPECT_EQ(sim.core, (Ranks{0, 1, 2, 3, 0, 1, 0, 1, 2, 3, 0}));
  ASSERT_EQ(sim.where.size(), 11u);
  EXPECT_EQ(sim.where[2].package, 1);
  EXPECT_EQ(sim.where[2].core, 2);
}

TEST(Simulate, BindListAndMachinesWithoutCores) {
  const Topology topo = synthetic("pack:2 core:2 pu:2");
  ASSERT_TRUE(topo);
  const Ranks bind{3, 0, 2};
  const Simulation sim = simulate(topo.get(), 3, 1, bind);
  EXPECT_EQ(sim.core, bind);
  EXPECT_EQ(sim.where[0].core, 3);
  const Topology pus = synthetic("pack:2 pu:3");
  ASSERT_TRUE(pus);
  const Simulation by_pu = simulate(pus.get(), 4, 1, {});
  EXPECT_EQ(by_pu.where[3].package, 1);
  EXPECT_EQ(by_pu.where[3].core, -1);
}

TEST(Simulate, BadRequestsThrow) {
  const Topology topo = synthetic("pack:2 core:2 pu:2");
  ASSERT_TRUE(topo);
  EXPECT_THROW(simulate(topo.get(), 0, 1, {}), std::invalid_argument);
  EXPECT_THROW(simulate(topo.get(), 2, 3, {}), std::invalid_argument);
  EXPECT_THROW(simulate(topo.get(), 2, 0, {}), std::invalid_argument);
  EXPECT_THROW(simulate(topo.get(), 2, 1, Ranks{0}), std::invalid_argument);
  EXPECT_THROW(simulate(topo.get(), 2, 1, Ranks{0, 4}), std::invalid_argument);
  EXPECT_THROW(simulate(topo.get(), 1, 1, Ranks{-1}), std::invalid_argument);
}

TEST(TopoTool, SimulatesASyntheticMachine) {
  const ToolRun run = tool("--synthetic 'pack:2 numa:2 l3:2 core:4 pu:1' --ranks 8 --nodes 2");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("8 rank(s) on 2 node(s), 4 rail(s)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("node 1: leader rank 4 (world 4), 4 rank(s)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rail 3: 3 7"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ring: 0 1 2 3 4 5 6 7"), std::string::npos) << run.out;
}

TEST(TopoTool, RailDevicesGoToLocalRanks) {
  const ToolRun run = tool("--synthetic 'pack:1 core:2 pu:1' --ranks 6 --nodes 3 --rail-devices eth1,eth2");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("rail devices: local rank i of a node uses NIC i mod 2: 0 -> eth1 1 -> eth2"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  local 1: rank 3 (world 3)  pkg 0 numa 0 l3 ? core 1 nic eth2\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("rail 0: 0 2 4  nic eth1\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rail 1: 1 3 5  nic eth2\n"), std::string::npos) << run.out;
  const ToolRun none = tool("--synthetic 'pack:1 core:2 pu:1' --ranks 2");
  EXPECT_NE(none.out.find("rail devices: none named"), std::string::npos) << none.out;
  EXPECT_EQ(tool("--synthetic 'pack:1 core:2 pu:1' --ranks 2 --rail-devices ''").status, 2);
}

TEST(TopoTool, RailDevicesFollowTheJobsRule) {
  // What a job refuses (core/options.cpp), the tool refuses, saying why.
  const ToolRun spaced = tool("--synthetic 'pack:1 core:2 pu:1' --ranks 2 --rail-devices 'eth1,eth 2'");
  EXPECT_EQ(spaced.status, 2) << spaced.out;
  EXPECT_NE(spaced.out.find("--rail-devices"), std::string::npos) << spaced.out;
  EXPECT_NE(spaced.out.find("at most 23"), std::string::npos) << spaced.out;
  std::string seventeen;
  for (int i = 0; i < 17; ++i) seventeen += (i ? "," : "") + std::string("eth") + std::to_string(i);
  const ToolRun many = tool("--synthetic 'pack:1 core:2 pu:1' --ranks 2 --rail-devices " + seventeen);
  EXPECT_EQ(many.status, 2) << many.out;
  ::setenv("RINGMEND_RAIL_DEVICES", "eth1,,eth2", 1);  // the tool inherits it
  const ToolRun from_env = tool("--synthetic 'pack:1 core:2 pu:1' --ranks 2");
  ::unsetenv("RINGMEND_RAIL_DEVICES");
  EXPECT_EQ(from_env.status, 2) << from_env.out;
  EXPECT_NE(from_env.out.find("RINGMEND_RAIL_DEVICES"), std::string::npos) << from_env.out;
}

TEST(TopoTool, OneRankPerNodeStripesOverEveryNic) {
  const ToolRun run = tool("--synthetic 'pack:1 core:2 pu:1' --ranks 2 --nodes 2 --rail-devices eth1,eth2");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("rail 0: 0 1  nic eth1,eth2\n"), std::string::npos) << run.out;
}

TEST(TopoTool, XmlWithBindList) {
  const ToolRun run = tool("--xml '" + kXml + "' --bind 7,0");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("GPUs: cuda0 (Package 0)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("  local 0: rank 1 (world 1)  pkg 0 numa 0 l3 0 core 0 gpu cuda0 nic mlx5_0\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  local 1: rank 0 (world 0)  pkg 1 numa 1 l3 1 core 7 gpu cuda1 nic mlx5_1\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("ring: 1 0"), std::string::npos) << run.out;
}

TEST(TopoTool, ThisMachineAndHelp) {
  ToolRun run = tool("");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("this process: pkg "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("machine: "), std::string::npos) << run.out;
  run = tool("--help");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("Usage: ringmend-topo [OPTIONS]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--synthetic DESC"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Exit status: 0 on success"), std::string::npos) << run.out;
}

TEST(TopoTool, BadArgumentsExitWithTwoAndSayWhy) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"--synthetic 'pack:2 bogus:3' --ranks 2", "not a valid synthetic topology"},
      {"--synthetic ''", "needs a non-empty value"},
      {"--xml /nonexistent/topology.xml --ranks 2", "cannot read the XML file '/nonexistent/topology.xml'"},
      {"--xml '" + std::string(RINGMEND_TEST_DATA_DIR) + "' --ranks 2", "XML"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks 0", "--ranks: Value 0 not in range 1 to 1048576"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks -3", "--ranks: Value -3 not in range 1 to 1048576"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks abc", "--ranks: Value abc not in range"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks 99999999999", "--ranks: Value 99999999999 not in range"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks 2000000",
       "--ranks: Value 2000000 not in range 1 to 1048576"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks 2 --nodes 3", "number of nodes"},
      {"--synthetic 'pack:2 core:2 pu:1' --nodes 2", "--nodes needs --ranks (or --bind)"},
      {"--synthetic 'pack:2 core:2 pu:1' --bind 0,9", "core 9 does not exist"},
      {"--synthetic 'pack:2 core:2 pu:1' --bind 0,,1", "--bind: '0,,1' is not a list of core numbers"},
      {"--synthetic 'pack:2 core:2 pu:1' --ranks 3 --bind 0,1", "bind list has 2 core(s) for 3 rank(s)"},
      {"--synthetic 'pack:2 core:2 pu:1' --xml x.xml", "--synthetic excludes --xml"},
      {"--ranks", "--ranks: 1 required N:INT in [1 - 1048576] missing"},
      {"--frobnicate", "ringmend-topo: unknown option '--frobnicate' (--help for usage)"},
  };
  for (const auto& c : cases) {
    const ToolRun run = tool(c.args);
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.out;
    EXPECT_NE(run.out.find(c.message), std::string::npos) << c.args << "\n" << run.out;
  }
}
