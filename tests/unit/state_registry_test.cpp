// The registered state a joiner receives (runtime/state_registry.hpp).
#include "runtime/state_registry.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ringmend/core/error.hpp"

namespace ringmend {
namespace {

std::vector<std::byte> bytes_of(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  return {b, b + n};
}

TEST(StateRegistry, DescriptionRoundTrips) {
  StateRegistry survivor;
  std::int64_t step = 42;
  std::vector<float> model{1.5f, 2.5f, 3.5f};
  survivor.add("step", &step, sizeof step);
  survivor.add("model", model.data(), model.size() * sizeof(float));
  survivor.add(
      "text", [] { return std::vector<std::byte>(5, std::byte{7}); }, [](std::span<const std::byte>) {});
  const auto parts = survivor.parts();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].bytes, 5u);
  const auto d = StateRegistry::parse(StateRegistry::describe(parts, 17));
  EXPECT_EQ(d.next_seq, 17u);
  ASSERT_EQ(d.entries.size(), 3u);
  EXPECT_EQ(d.entries[0].first, "step");
  EXPECT_EQ(d.entries[0].second, sizeof step);
  EXPECT_EQ(d.entries[1].first, "model");
  EXPECT_EQ(d.entries[1].second, 3 * sizeof(float));
  EXPECT_EQ(d.entries[2].second, 5u);
  // A truncated or foreign description is an error, not a crash.
  auto truncated = StateRegistry::describe(parts, 17);
  truncated.resize(truncated.size() - 3);
  EXPECT_THROW(StateRegistry::parse(truncated), Error);
  EXPECT_THROW(StateRegistry::parse(std::vector<std::byte>(16)), Error);
}

TEST(StateRegistry, AJoinerRestoresWhenItRegisters) {
  StateRegistry joiner;
  const std::int64_t sent_step = 9;
  joiner.stage("step", ReceivedBytes::copy_of(bytes_of(&sent_step, sizeof sent_step)));
  joiner.stage("blob", ReceivedBytes::copy_of(std::vector<std::byte>(3, std::byte{1})));
  EXPECT_EQ(joiner.unclaimed().size(), 2u);
  std::int64_t step = 0;
  joiner.add("step", &step, sizeof step);
  EXPECT_EQ(step, 9);
  std::size_t loaded = 0;
  joiner.add(
      "blob", [] { return std::vector<std::byte>{}; },
      [&](std::span<const std::byte> b) { loaded = b.size(); });
  EXPECT_EQ(loaded, 3u);
  EXPECT_TRUE(joiner.unclaimed().empty());
}

TEST(StateRegistry, BadRegistrationsAreInvalidArguments) {
  StateRegistry r;
  int x = 0;
  r.add("x", &x, sizeof x);
  const auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return Errc::Internal;
  };
  EXPECT_EQ(code_of([&] { r.add("x", &x, sizeof x); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { r.add("", &x, sizeof x); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { r.add("null", nullptr, 4); }), Errc::InvalidArgument);
  // A joiner whose buffer differs in size from the survivors'.
  StateRegistry joiner;
  joiner.stage("model", ReceivedBytes::copy_of(std::vector<std::byte>(8)));
  std::int32_t small = 0;
  EXPECT_EQ(code_of([&] { joiner.add("model", &small, sizeof small); }), Errc::InvalidArgument);
  EXPECT_TRUE(r.remove("x"));
  EXPECT_FALSE(r.remove("x"));
}

TEST(ReceivedBytes, HoldsWhatIsWrittenSmallAndLargeAndMoves) {
  for (std::size_t n : {std::size_t{0}, std::size_t{100}, std::size_t{3} << 20}) {
    ReceivedBytes b(n);
    ASSERT_EQ(b.size(), n);
    for (std::size_t i = 0; i < n; ++i) b.data()[i] = static_cast<std::byte>(i * 7);
    ReceivedBytes moved(std::move(b));
    EXPECT_EQ(b.size(), 0u);
    ReceivedBytes assigned;
    assigned = std::move(moved);
    ASSERT_EQ(assigned.size(), n);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += assigned.bytes()[i] != static_cast<std::byte>(i * 7);
    EXPECT_EQ(wrong, 0u) << n << " bytes";
  }
}

}  // namespace
}  // namespace ringmend
