#include "topo/location.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "topo/hwloc_handle.hpp"

using namespace ringmend::topo;

namespace {

// tests/data/topo/2pkg-2gpu-2nic.xml: two packages, each with one NUMA node,
// one L3 and 4 cores of 2 PUs (core c holds PUs 2c and 2c+1), and behind
// each package's host bridge a GPU (CUDA "cudaP" + NVML "nvmlP") and an
// InfiniBand card ("mlx5_P" + "ibP"); package 0 also has an Ethernet port
// "eno1"; a VGA "card0" hangs off a host bridge of the machine itself.
const std::string kXml = std::string(RINGMEND_TEST_DATA_DIR) + "/topo/2pkg-2gpu-2nic.xml";
constexpr const char* kSynthetic = "pack:2 numa:2 l3:2 core:4 pu:1";

Topology load(TopologySource source, const std::string& what,
              hwloc_type_filter_e io = HWLOC_TYPE_FILTER_KEEP_ALL) {
  std::string error;
  Topology topo = load_topology(source, what, io, error);
  EXPECT_TRUE(topo) << error;
  return topo;
}

Bitmap pus(std::initializer_list<unsigned> list) {
  Bitmap set(hwloc_bitmap_alloc());
  for (unsigned pu : list) hwloc_bitmap_set(set.get(), pu);
  return set;
}

hwloc_const_cpuset_t cpuset_of(hwloc_topology_t topo, hwloc_obj_type_t type, unsigned index) {
  return hwloc_get_obj_by_type(topo, type, index)->cpuset;
}

Location expected(std::int32_t package, std::int32_t numa, std::int32_t l3, std::int32_t core,
                  const char* gpu = "", const char* nic = "") {
  Location l;
  l.package = package;
  l.numa = numa;
  l.l3 = l3;
  l.core = core;
  std::strcpy(l.gpu, gpu);
  std::strcpy(l.nic, nic);
  return l;
}

}  // namespace

TEST(Location, EachCoreOfASyntheticMachine) {
  const Topology topo = load(TopologySource::Synthetic, kSynthetic);
  ASSERT_TRUE(topo);
  ASSERT_EQ(hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_CORE), 32);
  for (int c = 0; c < 32; ++c)
    EXPECT_EQ(locate(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_CORE, static_cast<unsigned>(c))),
              expected(c / 16, c / 8, c / 4, c))
        << "core " << c;
}

TEST(Location, BindingOverSeveralCoresKeepsOnlyWhatContainsItAll) {
  const Topology topo = load(TopologySource::Synthetic, kSynthetic);
  ASSERT_TRUE(topo);
  EXPECT_EQ(locate(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_L3CACHE, 1)), expected(0, 0, 1, -1));
  EXPECT_EQ(locate(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_PACKAGE, 1)), expected(1, -1, -1, -1));
  EXPECT_EQ(locate(topo.get(), pus({7, 8}).get()), expected(0, -1, -1, -1));  // two L3s, two NUMA nodes
}

TEST(Location, BindingAcrossTheWholeMachineIsUnknown) {
  const Topology topo = load(TopologySource::Synthetic, kSynthetic);
  ASSERT_TRUE(topo);
  EXPECT_EQ(locate(topo.get(), hwloc_topology_get_topology_cpuset(topo.get())), Location{});
  // PUs the machine does not have.
  EXPECT_EQ(locate(topo.get(), pus({0, 100}).get()), Location{});
}

TEST(Location, NoTopologyOrNoBindingNeverCrashes) {
  const Topology topo = load(TopologySource::Synthetic, kSynthetic);
  ASSERT_TRUE(topo);
  const Bitmap empty(hwloc_bitmap_alloc());
  EXPECT_EQ(locate(nullptr, nullptr), Location{});
  EXPECT_EQ(locate(nullptr, pus({0}).get()), Location{});
  EXPECT_EQ(locate(topo.get(), nullptr), Location{});
  EXPECT_EQ(locate(topo.get(), empty.get()), Location{});
}

TEST(Location, TopologiesThatDoNotLoadSayWhy) {
  std::string error;
  EXPECT_FALSE(load_topology(TopologySource::Xml, "", HWLOC_TYPE_FILTER_KEEP_ALL, error));
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;
  EXPECT_FALSE(load_topology(TopologySource::Xml, kXml + ".missing", HWLOC_TYPE_FILTER_KEEP_ALL, error));
  EXPECT_NE(error.find(".missing"), std::string::npos) << error;
  EXPECT_FALSE(load_topology(TopologySource::Xml, RINGMEND_TEST_DATA_DIR, HWLOC_TYPE_FILTER_KEEP_ALL, error));
  EXPECT_FALSE(load_topology(TopologySource::Synthetic, "pack:2 bogus:3", HWLOC_TYPE_FILTER_KEEP_ALL, error));
  EXPECT_NE(error.find("bogus"), std::string::npos) << error;
  EXPECT_FALSE(load_topology(TopologySource::Synthetic, "", HWLOC_TYPE_FILTER_KEEP_ALL, error));
}

TEST(Location, LocateSelfNeverThrows) {
  const Location me = locate_self();
  EXPECT_EQ(describe(me).rfind("pkg ", 0), 0u) << describe(me);
  // An unbound process is located by the CPU it last ran on: its core is known.
  const Topology machine = load(TopologySource::ThisMachine, {});
  ASSERT_TRUE(machine);
  const Bitmap binding(hwloc_bitmap_alloc());
  if (hwloc_get_cpubind(machine.get(), binding.get(), 0) == 0 &&
      hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(machine.get()), binding.get())) {
    EXPECT_GE(me.core, 0) << describe(me);
  }
}

TEST(Location, EachPuGetsTheGpuAndNicOfItsPackage) {
  for (auto io : {HWLOC_TYPE_FILTER_KEEP_ALL, HWLOC_TYPE_FILTER_KEEP_IMPORTANT}) {
    const Topology topo = load(TopologySource::Xml, kXml, io);
    ASSERT_TRUE(topo);
    ASSERT_EQ(hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_PU), 16);
    for (unsigned pu = 0; pu < 16; ++pu) {
      const int p = static_cast<int>(pu / 8);
      const std::string gpu = "cuda" + std::to_string(p), nic = "mlx5_" + std::to_string(p);
      EXPECT_EQ(locate(topo.get(), pus({pu}).get()),
                expected(p, p, p, static_cast<int>(pu / 2), gpu.c_str(), nic.c_str()))
          << "PU " << pu << " (I/O filter " << io << ")";
    }
  }
}

TEST(Location, NearestDeviceRule) {
  const Topology topo = load(TopologySource::Xml, kXml);
  ASSERT_TRUE(topo);
  // A whole package: its own devices; the CUDA name over the NVML one of the
  // same card, the RDMA device over its IPoIB interface and over eno1.
  EXPECT_EQ(locate(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_PACKAGE, 0)),
            expected(0, 0, 0, -1, "cuda0", "mlx5_0"));
  EXPECT_EQ(locate(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_PACKAGE, 1)),
            expected(1, 1, 1, -1, "cuda1", "mlx5_1"));
  // Across both packages: only card0, attached to the machine, is as near to
  // all of the binding; the NICs are equally near, the first one wins.
  EXPECT_EQ(locate(topo.get(), pus({7, 8}).get()), expected(-1, -1, -1, -1, "card0", "mlx5_0"));
  EXPECT_EQ(locate(topo.get(), hwloc_topology_get_topology_cpuset(topo.get())),
            expected(-1, -1, -1, -1, "card0", "mlx5_0"));
}

TEST(Location, FarDevicesByCommonAncestor) {
  // tests/data/topo/4pkg-2groups-far-devices.xml: two groups of two
  // single-core packages; "cuda0" and "mlx5_0" on package 0, "cuda1" on
  // package 3, nothing on packages 1 and 2.
  const Topology topo =
      load(TopologySource::Xml, std::string(RINGMEND_TEST_DATA_DIR) + "/topo/4pkg-2groups-far-devices.xml");
  ASSERT_TRUE(topo);
  const char* gpu_of_package[] = {"cuda0", "cuda0", "cuda1", "cuda1"};
  for (unsigned p = 0; p < 4; ++p)
    EXPECT_EQ(locate(topo.get(), pus({p}).get()),
              expected(static_cast<int>(p), 0, -1, static_cast<int>(p), gpu_of_package[p], "mlx5_0"))
        << "package " << p;
}

TEST(Location, NoIoDevicesNoNames) {
  const Topology topo = load(TopologySource::Xml, kXml, HWLOC_TYPE_FILTER_KEEP_NONE);
  ASSERT_TRUE(topo);
  EXPECT_EQ(locate(topo.get(), pus({9}).get()), expected(1, 1, 1, 4));
}

TEST(Location, Describe) {
  EXPECT_EQ(describe(expected(0, 1, 1, 5, "cuda0", "mlx5_0")),
            "pkg 0 numa 1 l3 1 core 5 gpu cuda0 nic mlx5_0");
  EXPECT_EQ(describe(expected(1, -1, -1, -1, "", "eth0")), "pkg 1 numa ? l3 ? core ? nic eth0");
  EXPECT_EQ(describe(Location{}), "pkg ? numa ? l3 ? core ?");
}

TEST(Location, TravelsAsRawBytes) {
  Location sent = expected(1, 2, 3, 4, "rsmi0", "hsn0");
  unsigned char wire[sizeof(Location)];
  std::memcpy(wire, &sent, sizeof sent);
  Location received;
  std::memcpy(&received, wire, sizeof received);
  EXPECT_EQ(received, sent);
  // A name that fills its field (no NUL) from a peer is read to its end only.
  std::memset(received.gpu, 'x', sizeof received.gpu);
  EXPECT_EQ(describe(received), "pkg 1 numa 2 l3 3 core 4 gpu " + std::string(24, 'x') + " nic hsn0");
}

TEST(Location, UcxNetDeviceIsTheNearestNicWhenThereAreSeveral) {
  const Topology topo = load(TopologySource::Xml, kXml);
  ASSERT_TRUE(topo);
  EXPECT_EQ(ucx_net_device(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_PACKAGE, 0)), "mlx5_0:1");
  EXPECT_EQ(ucx_net_device(topo.get(), cpuset_of(topo.get(), HWLOC_OBJ_PACKAGE, 1)), "mlx5_1:1");
  // One NIC or none: nothing to choose.
  const Topology synthetic = load(TopologySource::Synthetic, kSynthetic);
  EXPECT_EQ(ucx_net_device(synthetic.get(), cpuset_of(synthetic.get(), HWLOC_OBJ_CORE, 0)), "");
  EXPECT_EQ(ucx_net_device(nullptr, nullptr), "");
}

TEST(Location, UcxNetDeviceFollowsTheGpu) {
  // cuda0 (0000:01:00.0) hangs off package 0 and mlx5_0 too; cuda1
  // (0000:81:00.0) and mlx5_1 off package 1: the GPU's NIC, wherever the
  // process's CPUs are.
  const Topology topo = load(TopologySource::Xml, kXml);
  ASSERT_TRUE(topo);
  EXPECT_EQ(ucx_net_device_near_pci(topo.get(), "0000:01:00.0"), "mlx5_0:1");
  EXPECT_EQ(ucx_net_device_near_pci(topo.get(), "0000:81:00.0"), "mlx5_1:1");
  EXPECT_EQ(ucx_net_device_near_pci(topo.get(), "0000:ee:00.0"), "");  // not in this machine
  EXPECT_EQ(ucx_net_device_near_pci(topo.get(), ""), "");
  EXPECT_EQ(ucx_net_device_near_pci(nullptr, "0000:01:00.0"), "");
}

TEST(Location, RailDeviceByLocalRank) {
  const std::vector<std::string> two{"eth1", "eth2"};
  EXPECT_EQ(rail_device(two, 0), "eth1");
  EXPECT_EQ(rail_device(two, 1), "eth2");
  EXPECT_EQ(rail_device(two, 2), "eth1");   // more local ranks than NICs: NIC i mod n
  EXPECT_EQ(rail_device(two, -1), "eth1");  // no local rank known
  EXPECT_EQ(rail_device({}, 3), "");
  // As many processes on the node as NICs, or more: one NIC each.
  EXPECT_EQ(rail_device(two, 1, 2), "eth2");
  EXPECT_EQ(rail_device(two, 3, 4), "eth2");
}

TEST(Location, FewerRanksThanNicsStripeOverTheirShare) {
  const std::vector<std::string> two{"eth1", "eth2"};
  EXPECT_EQ(rail_device(two, 0, 1), "eth1,eth2");  // one rank per node: both NICs
  const std::vector<std::string> four{"mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_3:1"};
  EXPECT_EQ(rail_device(four, 0, 2), "mlx5_0:1,mlx5_2:1");
  EXPECT_EQ(rail_device(four, 1, 2), "mlx5_1:1,mlx5_3:1");
  EXPECT_EQ(rail_device(four, 0, 3), "mlx5_0:1,mlx5_3:1");  // 4 NICs, 3 ranks: the first takes two
  EXPECT_EQ(rail_device(four, 2, 3), "mlx5_2:1");
  EXPECT_EQ(rail_device(four, -1, 1), "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
  EXPECT_EQ(rail_device(two, 0, 0), "eth1");  // local size unknown: one NIC
  Location l;
  set_nic(l, rail_device(four, 0, 1));  // 35 characters: the field holds them
  EXPECT_EQ(nic_name(l), "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
}

TEST(Location, SetNicShowsInTheDescriptionAndIsCutToTheField) {
  Location l;
  set_nic(l, "eth2");
  EXPECT_EQ(describe(l), "pkg ? numa ? l3 ? core ? nic eth2");
  set_nic(l, std::string(80, 'x'));
  EXPECT_EQ(std::string(l.nic), std::string(sizeof(l.nic) - 1, 'x'));
  set_nic(l, "ib0");  // a shorter name leaves nothing of the longer one
  EXPECT_EQ(std::string(l.nic), "ib0");
}
