// A program outside the ringmend tree, built against an installed ringmend.
#include <cstdio>
#include <ringmend/ringmend.hpp>
#include <vector>

int main(int argc, char** argv) {
  ringmend::Runtime rt(&argc, &argv);
  auto& world = rt.world();
  std::vector<double> v{1.0, 2.0};
  auto r = world.allreduce(std::span<double>(v), ringmend::ReduceOp::Sum);
  const bool ok = v[0] == world.size() && v[1] == 2.0 * world.size() && r.contributors == world.size();
  std::printf("TEST %s rank %d: installed ringmend %s\n", ok ? "PASSED" : "FAILED", world.rank(),
              ringmend::version());
  return ok ? 0 : 1;
}
