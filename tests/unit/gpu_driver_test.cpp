// The GPU layer asks CUDA about pointers only once the program has loaded the
// CUDA driver: a host-only program never initialises CUDA (gpu/cuda_runtime.hpp).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gpu/cuda_runtime.hpp"

namespace ringmend::gpu {
namespace {

TEST(GpuDriver, AskedOnlyOnceTheProgramLoadedIt) {
  // Nothing in this program has loaded the driver: no pointer is GPU memory,
  // and CUDA is not asked (no GPU needed to run this).
  int host = 0;
  EXPECT_FALSE(driver_loaded());
  EXPECT_EQ(device_of(&host), -1);
  EXPECT_FALSE(driver_loaded());
  EXPECT_FALSE(context_made());
  EXPECT_EQ(device_of(&host, Recognise::InAnyContext), -1);
  EXPECT_EQ(gpu_in_use_pci_bus_id(), "");
  // The program loads "the driver" (a library of that name): seen from the
  // next tick of the coarse clock on (4 ms at most; a GPU pointer takes far
  // longer to exist), and remembered.
  void* driver = dlopen(RINGMEND_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(driver_loaded());
  EXPECT_TRUE(driver_loaded());
  // Whether it has a context cannot be asked of it (none of the driver's
  // entry points): assumed, so pointers are asked about from now on.
  EXPECT_TRUE(context_made());
  // (It has none of the driver's entry points: no context, no GPU in use.)
  EXPECT_EQ(gpu_in_use_pci_bus_id(), "");
}

}  // namespace
}  // namespace ringmend::gpu
