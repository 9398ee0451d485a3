// ringmend's defaults for UCX's variables: set only when unset, and set to
// stripe over several NICs when the process is given more than one.
#include "transport/ucx_environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using ringmend::transport::set_ucx_environment_defaults;

namespace {

constexpr const char* kVariables[] = {"UCX_TLS", "UCX_MAX_EAGER_LANES", "UCX_MAX_RNDV_RAILS", "UCX_TCP_TX_SEG_SIZE",
                                      "UCX_TCP_RX_SEG_SIZE"};

// Each test starts from none of them set and leaves none behind.
class UcxEnvironment : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : kVariables) ::unsetenv(v);
  }
  static std::string get(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "(unset)";
  }
};

TEST_F(UcxEnvironment, OneDeviceKeepsLargeSegmentsAndOneLane) {
  set_ucx_environment_defaults("eth1");
  EXPECT_EQ(get("UCX_TLS"), "^sm");
  EXPECT_EQ(get("UCX_TCP_TX_SEG_SIZE"), "2m");
  EXPECT_EQ(get("UCX_TCP_RX_SEG_SIZE"), "2m");
  EXPECT_EQ(get("UCX_MAX_EAGER_LANES"), "(unset)");
}

TEST_F(UcxEnvironment, SeveralDevicesAreStripedOver) {
  set_ucx_environment_defaults("eth1,eth2");
  EXPECT_EQ(get("UCX_MAX_EAGER_LANES"), "2");
  EXPECT_EQ(get("UCX_MAX_RNDV_RAILS"), "2");
  EXPECT_EQ(get("UCX_TCP_TX_SEG_SIZE"), "64k");
  EXPECT_EQ(get("UCX_TCP_RX_SEG_SIZE"), "64k");
  clear();
  set_ucx_environment_defaults("a,b,c,d,e,f");  // UCX stripes over at most 4
  EXPECT_EQ(get("UCX_MAX_EAGER_LANES"), "4");
}

TEST_F(UcxEnvironment, TheUsersSettingsStand) {
  ::setenv("UCX_MAX_EAGER_LANES", "1", 1);
  ::setenv("UCX_TCP_TX_SEG_SIZE", "1m", 1);
  set_ucx_environment_defaults("eth1,eth2");
  EXPECT_EQ(get("UCX_MAX_EAGER_LANES"), "1");
  EXPECT_EQ(get("UCX_TCP_TX_SEG_SIZE"), "1m");
  EXPECT_EQ(get("UCX_TCP_RX_SEG_SIZE"), "1m");  // never smaller than the send segment
}

}  // namespace
