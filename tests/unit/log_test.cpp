// The log (core/log.hpp): levels, the line's fields, the application's sink,
// and RINGMEND_LOG through Options.
#include "ringmend/core/log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "ringmend/core/error.hpp"
#include "ringmend/core/options.hpp"

namespace ringmend {
namespace {

// Takes the lines for one test, and gives the log back as it was.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level) {
    set_log_level(level);
    set_log_sink([this](LogLevel l, const std::string& line) { lines.emplace_back(l, line); });
  }
  ~LogCapture() {
    set_log_sink({});
    set_log_level(LogLevel::Info);
    set_log_place(-1, 0);
  }
  std::vector<std::pair<LogLevel, std::string>> lines;
};

TEST(Log, LevelsFilter) {
  LogCapture capture(LogLevel::Warn);
  log(LogLevel::Error, "e");
  log(LogLevel::Warn, "w");
  log(LogLevel::Info, "i");
  log(LogLevel::Debug, "d");
  ASSERT_EQ(capture.lines.size(), 2u);
  EXPECT_EQ(capture.lines[0].first, LogLevel::Error);
  EXPECT_EQ(capture.lines[1].first, LogLevel::Warn);
  EXPECT_FALSE(log_enabled(LogLevel::Info));
}

TEST(Log, ALineSaysWhenWhereAndWho) {
  LogCapture capture(LogLevel::Debug);
  log(LogLevel::Info, "before the first epoch");
  set_log_place(7, 3);
  log(LogLevel::Debug, "in epoch 3");
  ASSERT_EQ(capture.lines.size(), 2u);
  const std::string pid = std::to_string(::getpid());
  const std::regex first("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z ringmend INFO  " +
                         std::regex_replace(node_name(), std::regex("[.\\-]"), "\\$&") + ":" + pid +
                         ": before the first epoch$");
  EXPECT_TRUE(std::regex_match(capture.lines[0].second, first)) << capture.lines[0].second;
  EXPECT_NE(capture.lines[1].second.find(" ringmend DEBUG "), std::string::npos) << capture.lines[1].second;
  EXPECT_NE(capture.lines[1].second.find(":" + pid + " member 7 epoch 3: in epoch 3"), std::string::npos)
      << capture.lines[1].second;
}

TEST(Log, LevelFromOptionsAndEnvironment) {
  Options o;
  o.read_environment = false;
  EXPECT_EQ(o.resolve().log_level, LogLevel::Info);
  o.verbose = true;
  EXPECT_EQ(o.resolve().log_level, LogLevel::Debug);
  o.log_level = LogLevel::Warn;
  EXPECT_EQ(o.resolve().log_level, LogLevel::Warn);
  EXPECT_EQ(parse_log_level("RINGMEND_LOG", "error"), LogLevel::Error);
  try {
    parse_log_level("RINGMEND_LOG", "loud");
    FAIL() << "accepted 'loud'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::BadEnvironment);
    EXPECT_NE(std::string(e.what()).find("RINGMEND_LOG='loud'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ringmend
