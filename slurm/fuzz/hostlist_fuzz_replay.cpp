// Runs the fuzz target without libFuzzer: every file named (or every file in
// a directory named), then a fixed number of pseudo-random inputs built from
// the characters that matter to the parsers. Part of the unit tests, so the
// target is exercised with the project's own compiler and warnings too.
//
//   hostlist_fuzz_replay [--random=N] FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void feed(const std::string& s) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::size_t feed_path(const std::filesystem::path& p) {
  if (std::filesystem::is_directory(p)) {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(p)) n += feed_path(e.path());
    return n;
  }
  std::ifstream in(p, std::ios::binary);
  feed(std::string(std::istreambuf_iterator<char>(in), {}));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  long random = 20000;
  std::size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--random=", 9) == 0)
      random = std::atol(argv[i] + 9);
    else
      files += feed_path(argv[i]);
  }
  // Inputs near the grammar find more than uniform bytes do.
  const std::string alphabet = "n0123456789[]-,() x\t.:_a0\xff";
  std::mt19937_64 rng(12345);
  for (long i = 0; i < random; ++i) {
    const std::size_t len = rng() % 24;
    std::string s;
    for (std::size_t k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    feed(s);
  }
  std::printf("hostlist_fuzz_replay: %zu files and %ld random inputs, no failure\n", files, random);
  return 0;
}
