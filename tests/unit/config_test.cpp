#include <gtest/gtest.h>

#include <cstdlib>

#include "ringmend/core/error.hpp"
#include "ringmend/core/options.hpp"

using namespace ringmend;

TEST(Config, SizesWithSuffixes) {
  EXPECT_EQ(parse_size("X", "4096"), 4096u);
  EXPECT_EQ(parse_size("X", "64K"), 65536u);
  EXPECT_EQ(parse_size("X", "1M"), 1048576u);
  EXPECT_EQ(parse_size("X", "2GiB"), 2147483648u);
}

TEST(Config, BadSizesNameTheVariable) {
  for (const char* v : {"", "0", "-1", "12Q", "K", "1.5M", "99999999999999999999999"}) {
    try {
      parse_size("RINGMEND_CHUNK_BYTES", v);
      FAIL() << "accepted '" << v << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::BadEnvironment);
      EXPECT_NE(std::string(e.what()).find("RINGMEND_CHUNK_BYTES"), std::string::npos);
    }
  }
}

TEST(Config, SecondsAndBooleans) {
  EXPECT_DOUBLE_EQ(parse_seconds("T", "2.5"), 2.5);
  EXPECT_THROW(parse_seconds("T", "-1"), Error);
  EXPECT_THROW(parse_seconds("T", "soon"), Error);
  EXPECT_THROW(parse_seconds("T", "inf"), Error);
  EXPECT_TRUE(parse_bool("B", "yes"));
  EXPECT_FALSE(parse_bool("B", "0"));
  EXPECT_THROW(parse_bool("B", "maybe"), Error);
}

TEST(Config, EnvironmentIsValidated) {
  ::setenv("RINGMEND_CHUNK_BYTES", "1K", 1);  // below the 4K minimum
  EXPECT_THROW(Options{}.resolve(), Error);
  ::setenv("RINGMEND_CHUNK_BYTES", "128K", 1);
  ::setenv("RINGMEND_TIMEOUT", "30", 1);
  Settings c = Options{}.resolve();
  EXPECT_EQ(c.chunk_bytes, 131072u);
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 30);
  ::unsetenv("RINGMEND_CHUNK_BYTES");
  ::unsetenv("RINGMEND_TIMEOUT");
}

TEST(Config, HangDetection) {
  EXPECT_DOUBLE_EQ(Options{}.resolve().hang_timeout_seconds, 60);
  EXPECT_EQ(Options{}.resolve().hang_policy, HangPolicy::Exclude);
  ::setenv("RINGMEND_HANG_TIMEOUT", "0", 1);
  ::setenv("RINGMEND_HANG_POLICY", "fail", 1);
  Settings c = Options{}.resolve();
  EXPECT_DOUBLE_EQ(c.hang_timeout_seconds, 0);
  EXPECT_EQ(c.hang_policy, HangPolicy::Fail);
  ::setenv("RINGMEND_HANG_POLICY", "kill", 1);
  try {
    Options{}.resolve();
    ADD_FAILURE() << "RINGMEND_HANG_POLICY=kill accepted";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("RINGMEND_HANG_POLICY='kill' is not valid: expected exclude or fail"),
        std::string::npos)
        << e.what();
  }
  ::setenv("RINGMEND_HANG_POLICY", "exclude", 1);
  ::setenv("RINGMEND_HANG_TIMEOUT", "-1", 1);
  EXPECT_THROW(Options{}.resolve(), Error);
  ::unsetenv("RINGMEND_HANG_TIMEOUT");
  ::unsetenv("RINGMEND_HANG_POLICY");
}

TEST(Config, Stragglers) {
  const Settings d = Options{}.resolve();
  EXPECT_EQ(d.straggler_policy, StragglerPolicy::Off);
  EXPECT_EQ(d.straggler_window, 100u);
  EXPECT_DOUBLE_EQ(d.straggler_fraction, 0.25);
  ::setenv("RINGMEND_STRAGGLER_POLICY", "release", 1);
  ::setenv("RINGMEND_STRAGGLER_WINDOW", "20", 1);
  ::setenv("RINGMEND_STRAGGLER_FRACTION", "0.5", 1);
  const Settings c = Options{}.resolve();
  EXPECT_EQ(c.straggler_policy, StragglerPolicy::Release);
  EXPECT_EQ(c.straggler_window, 20u);
  EXPECT_DOUBLE_EQ(c.straggler_fraction, 0.5);
  for (const auto& [name, value] : {std::pair{"RINGMEND_STRAGGLER_POLICY", "exclude"},
                                    {"RINGMEND_STRAGGLER_WINDOW", "1"},
                                    {"RINGMEND_STRAGGLER_FRACTION", "1.5"},
                                    {"RINGMEND_STRAGGLER_FRACTION", "0"},
                                    {"RINGMEND_STRAGGLER_FRACTION", "25%"}}) {
    const char* before = std::getenv(name);
    const std::string kept = before ? before : "";
    ::setenv(name, value, 1);
    try {
      Options{}.resolve();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::BadEnvironment);
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    ::setenv(name, kept.c_str(), 1);
  }
  Options code;
  code.straggler_fraction = 2;
  code.read_environment = false;
  EXPECT_THROW(code.resolve(), Error);
  ::unsetenv("RINGMEND_STRAGGLER_POLICY");
  ::unsetenv("RINGMEND_STRAGGLER_WINDOW");
  ::unsetenv("RINGMEND_STRAGGLER_FRACTION");
}

TEST(Config, Spares) {
  EXPECT_EQ(Options{}.resolve().spares, 0u);
  EXPECT_EQ(Options{}.resolve().spare_policy, SparePolicy::Replace);
  ::setenv("RINGMEND_SPARES", "2", 1);
  ::setenv("RINGMEND_SPARE_POLICY", "shrink", 1);
  Settings c = Options{}.resolve();
  EXPECT_EQ(c.spares, 2u);
  EXPECT_EQ(c.spare_policy, SparePolicy::Shrink);
  ::setenv("RINGMEND_SPARE_POLICY", "grow", 1);
  try {
    Options{}.resolve();
    ADD_FAILURE() << "RINGMEND_SPARE_POLICY=grow accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::BadEnvironment);
    EXPECT_NE(std::string(e.what()).find("replace or shrink"), std::string::npos) << e.what();
  }
  ::setenv("RINGMEND_SPARES", "two", 1);
  ::unsetenv("RINGMEND_SPARE_POLICY");
  EXPECT_THROW(Options{}.resolve(), Error);
  ::unsetenv("RINGMEND_SPARES");
}

TEST(Config, SubgroupRecovery) {
  EXPECT_EQ(Options{}.resolve().subgroup_recovery, SubgroupRecovery::Call);
  ::setenv("RINGMEND_SUBGROUP_RECOVERY", "step", 1);
  EXPECT_EQ(Options{}.resolve().subgroup_recovery, SubgroupRecovery::Step);
  Options code;
  code.subgroup_recovery = SubgroupRecovery::Call;  // the code's choice comes first
  EXPECT_EQ(code.resolve().subgroup_recovery, SubgroupRecovery::Call);
  ::setenv("RINGMEND_SUBGROUP_RECOVERY", "restart", 1);
  try {
    Options{}.resolve();
    ADD_FAILURE() << "RINGMEND_SUBGROUP_RECOVERY=restart accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::BadEnvironment);
    EXPECT_NE(std::string(e.what()).find("call or step"), std::string::npos) << e.what();
  }
  ::unsetenv("RINGMEND_SUBGROUP_RECOVERY");
}

TEST(Config, SharedMemorySettings) {
  ::setenv("RINGMEND_SHM", "0", 1);
  ::setenv("RINGMEND_SHM_CHUNK_BYTES", "1M", 1);
  ::setenv("RINGMEND_SMALL_BYTES", "4K", 1);
  ::setenv("RINGMEND_DEBUG", "topo", 1);
  Settings c = Options{}.resolve();
  EXPECT_FALSE(c.shm);
  EXPECT_EQ(c.shm_chunk_bytes, std::size_t{1} << 20);
  EXPECT_EQ(c.small_bytes, 4096u);
  EXPECT_TRUE(c.debug_topo);
  for (auto [name, value] :
       {std::pair{"RINGMEND_SHM_CHUNK_BYTES", "1K"}, std::pair{"RINGMEND_SHM_CHUNK_BYTES", "1G"},
        std::pair{"RINGMEND_SMALL_BYTES", "2M"}, std::pair{"RINGMEND_DEBUG", "topo,net"},
        std::pair{"RINGMEND_SHM", "perhaps"}}) {
    ::setenv(name, value, 1);
    try {
      Options{}.resolve();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    ::unsetenv(name);
  }
  for (const char* name :
       {"RINGMEND_SHM", "RINGMEND_SHM_CHUNK_BYTES", "RINGMEND_SMALL_BYTES", "RINGMEND_DEBUG"})
    ::unsetenv(name);
}

TEST(Config, UcxWorkersAhead) {
  EXPECT_TRUE(Options{}.resolve().ucx_workers_ahead);
  ::setenv("RINGMEND_UCX_WORKERS_AHEAD", "0", 1);
  EXPECT_FALSE(Options{}.resolve().ucx_workers_ahead);
  Options o;
  o.ucx_workers_ahead = true;  // code comes first
  EXPECT_TRUE(o.resolve().ucx_workers_ahead);
  ::setenv("RINGMEND_UCX_WORKERS_AHEAD", "maybe", 1);
  try {
    Options{}.resolve();
    ADD_FAILURE() << "RINGMEND_UCX_WORKERS_AHEAD=maybe accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RINGMEND_UCX_WORKERS_AHEAD"), std::string::npos) << e.what();
  }
  ::unsetenv("RINGMEND_UCX_WORKERS_AHEAD");
}

TEST(Config, CodeComesBeforeTheEnvironment) {
  ::setenv("RINGMEND_CHUNK_BYTES", "128K", 1);
  ::setenv("RINGMEND_SHM_DEPTH", "8", 1);
  Options o;
  o.chunk_bytes = 64 * 1024;
  Settings s = o.resolve();
  EXPECT_EQ(s.chunk_bytes, 65536u);  // set in code
  EXPECT_EQ(s.shm_depth, 8u);        // from the environment
  o.read_environment = false;
  s = o.resolve();
  EXPECT_EQ(s.shm_depth, Settings{}.shm_depth);  // the one default
  ::unsetenv("RINGMEND_CHUNK_BYTES");
  ::unsetenv("RINGMEND_SHM_DEPTH");
}

// The pipeline is measured unless its shape is asked for (code or
// environment); asking for tuning as well wins; the buffers always fit the
// fixed shape.
TEST(Config, APinnedPipelineIsNotTuned) {
  Options o;
  o.read_environment = false;
  EXPECT_TRUE(o.resolve().shm_tune);
  o.shm_chunk_bytes = 1 << 20;
  o.shm_depth = 4;
  Settings s = o.resolve();
  EXPECT_FALSE(s.shm_tune);
  EXPECT_EQ(s.shm_buffer_bytes, std::size_t{4} << 20);  // raised from 2 MiB to fit 1 MiB x 4
  o.shm_tune = true;
  EXPECT_TRUE(o.resolve().shm_tune);
  Options e;
  ::setenv("RINGMEND_SHM_DEPTH", "2", 1);
  EXPECT_FALSE(e.resolve().shm_tune);
  ::setenv("RINGMEND_SHM_TUNE", "1", 1);
  EXPECT_TRUE(e.resolve().shm_tune);
  ::unsetenv("RINGMEND_SHM_DEPTH");
  ::unsetenv("RINGMEND_SHM_TUNE");
}

TEST(Config, BadValuesInCodeNameTheField) {
  Options o;
  o.shm_p2p_slots = 1;
  try {
    o.resolve();
    FAIL() << "accepted shm_p2p_slots = 1";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("shm_p2p_slots"), std::string::npos) << e.what();
  }
  ::setenv("RINGMEND_SHM_DEPTH", "0", 1);
  EXPECT_THROW(Options{}.resolve(), Error);
  ::unsetenv("RINGMEND_SHM_DEPTH");
}

TEST(Config, RailDevices) {
  EXPECT_TRUE(Options{}.resolve().rail_devices.empty());
  EXPECT_EQ(parse_device_list("D", "eth1,eth2"), (std::vector<std::string>{"eth1", "eth2"}));
  EXPECT_EQ(parse_device_list("D", "mlx5_0:1"), (std::vector<std::string>{"mlx5_0:1"}));
  for (const char* v : {"", ",", "eth1,", ",eth1", "eth1,,eth2", "eth 1", "eth1;eth2",
                        "a_device_name_of_24_char", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"}) {
    try {
      parse_device_list("RINGMEND_RAIL_DEVICES", v);
      FAIL() << "accepted '" << v << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::BadEnvironment);
      EXPECT_NE(std::string(e.what()).find("RINGMEND_RAIL_DEVICES"), std::string::npos);
    }
  }
  ::setenv("RINGMEND_RAIL_DEVICES", "eth1,eth2", 1);
  EXPECT_EQ(Options{}.resolve().rail_devices, (std::vector<std::string>{"eth1", "eth2"}));
  Options in_code;
  in_code.rail_devices = std::vector<std::string>{"ib0"};  // code wins over the environment
  EXPECT_EQ(in_code.resolve().rail_devices, (std::vector<std::string>{"ib0"}));
  in_code.rail_devices = std::vector<std::string>{"bad name"};
  EXPECT_THROW(in_code.resolve(), Error);
  ::setenv("RINGMEND_RAIL_DEVICES", "eth1,,eth2", 1);
  EXPECT_THROW(Options{}.resolve(), Error);
  ::unsetenv("RINGMEND_RAIL_DEVICES");
}
