#include "slurm/hostlist.hpp"

#include <gtest/gtest.h>

using namespace ringmend::slurm;
using Names = std::vector<std::string>;

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("n[001-004,010],gpu[1-2]"),
            (Names{"n001", "n002", "n003", "n004", "n010", "gpu1", "gpu2"}));
  EXPECT_EQ(expand_hostlist("node"), Names{"node"});
  EXPECT_EQ(expand_hostlist("n[5]"), Names{"n5"});
  EXPECT_EQ(expand_hostlist("n[9-11]"), (Names{"n9", "n10", "n11"}));
  // The width is the lower bound's, as in Slurm.
  EXPECT_EQ(expand_hostlist("n[08-11]"), (Names{"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(expand_hostlist("n[8-011]"), (Names{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_hostlist("n[00-1]"), (Names{"n00", "n01"}));
  EXPECT_EQ(expand_hostlist("n[098-100]"), (Names{"n098", "n099", "n100"}));
  EXPECT_EQ(expand_hostlist("[1-2]"), (Names{"1", "2"}));
}

TEST(Hostlist, SeveralGroupsExpandAsTheirProduct) {
  EXPECT_EQ(expand_hostlist("a[1-2]b[3-4]"), (Names{"a1b3", "a1b4", "a2b3", "a2b4"}));
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[01-02]"),
            (Names{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
  // Text after a group (which Slurm itself does not accept) is kept.
  EXPECT_EQ(expand_hostlist("n[1-2]-ib"), (Names{"n1-ib", "n2-ib"}));
}

TEST(Hostlist, SeparatorsAndEmptyEntries) {
  EXPECT_EQ(expand_hostlist("a,,b,"), (Names{"a", "b"}));
  EXPECT_EQ(expand_hostlist(" a  b\tc\n"), (Names{"a", "b", "c"}));
  EXPECT_TRUE(expand_hostlist("").empty());
  EXPECT_TRUE(expand_hostlist(" , ").empty());
  EXPECT_EQ(expand_hostlist("n1,n[1-2]"), (Names{"n1", "n1", "n2"}));  // duplicates are kept
  EXPECT_EQ(expand_hostlist("host-01.cluster_a"), Names{"host-01.cluster_a"});
}

namespace {
// The error for `input`: its position (from 1) and a fragment of its text.
void expect_error(const std::string& input, std::size_t position, const std::string& fragment) {
  try {
    auto v = expand_hostlist(input);
    ADD_FAILURE() << "accepted '" << input << "' (" << v.size() << " names)";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.position(), position) << input << ": " << e.what();
    EXPECT_NE(e.problem().find(fragment), std::string::npos) << input << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("hostlist"), std::string::npos);
  }
}
}  // namespace

TEST(Hostlist, MalformedInputIsAClearError) {
  expect_error("n[1-2", 2, "not closed");
  expect_error("n[", 2, "not closed");
  expect_error("n[]", 3, "empty range");
  expect_error("n[1,,2]", 5, "empty range");
  expect_error("n[1,]", 5, "empty range");
  expect_error("n[a-b]", 3, "expected a number");
  expect_error("n[3-1]", 3, "decreases");
  expect_error("n[010-9]", 3, "decreases");
  expect_error("n[1-3-4]", 6, "one '-'");
  expect_error("n[1-]", 5, "upper bound");
  expect_error("n[-1]", 3, "expected a number");
  expect_error("n[[1]]", 3, "expected a number");
  expect_error("n[1[2]]", 4, "do not nest");
  expect_error("n]1[", 2, "without a matching");
  expect_error("n[1-2]]", 7, "without a matching");
  expect_error("n[ 1-2]", 3, "a space");
  expect_error("n[1 ,2]", 4, "a space");
  expect_error("n:1", 2, "':' cannot appear");
  expect_error("n\x01", 2, "byte 0x01");
  expect_error("n[1234567890123456789]", 3, "18 digits");
}

TEST(Hostlist, RefusesToExpandTooMuch) {
  expect_error("n[1-99999999]", 1, "more than");
  expect_error("a[1-2000]b[1-2000]", 1, "more than");
  HostlistLimits small;
  small.max_hosts = 3;
  EXPECT_EQ(expand_hostlist("n[1-3]", small).size(), 3u);
  EXPECT_THROW(expand_hostlist("n[1-3],m", small), ParseError);
  EXPECT_THROW(expand_hostlist(std::string(300, 'a')), ParseError);
  EXPECT_EQ(expand_hostlist(std::string(255, 'a')).size(), 1u);
}

TEST(Hostlist, ErrorMessagesShowTheInputSafely) {
  try {
    expand_hostlist(std::string("n[1-2\"\xff") + std::string(500, 'x'));
    FAIL();
  } catch (const ParseError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("\\\""), std::string::npos) << w;
    EXPECT_NE(w.find("\\xff"), std::string::npos) << w;
    EXPECT_LT(w.size(), 300u) << w;
  }
}

TEST(Hostlist, CompressFoldsRunsAndKeepsOrder) {
  EXPECT_EQ(compress_hostlist({"n001", "n002", "n003", "n004", "n010", "gpu1", "gpu2"}),
            "n[001-004,010],gpu[1-2]");
  EXPECT_EQ(compress_hostlist({"n1"}), "n1");
  EXPECT_EQ(compress_hostlist({"n9", "n10", "n11"}), "n[9-11]");
  EXPECT_EQ(compress_hostlist({"n08", "n9"}), "n08,n9");  // widths differ
  EXPECT_EQ(compress_hostlist({"n2", "n1"}), "n2,n1");    // order is kept
  EXPECT_EQ(compress_hostlist({"n1", "n1"}), "n1,n1");
  EXPECT_EQ(compress_hostlist({"login", "n1", "n2"}), "login,n[1-2]");
  EXPECT_EQ(compress_hostlist({}), "");
}

TEST(Hostlist, CompressThenExpandGivesTheSameList) {
  for (const char* list : {"n[001-004,010],gpu[1-2]", "a[1-2]b[3-4]", "n[8-011]", "n[099-101],n[1-3],n[2]",
                           "x,y,z1,z3,z2", "[0-20]", "n[1-2]-ib[5-6]"}) {
    const auto hosts = expand_hostlist(list);
    EXPECT_EQ(expand_hostlist(compress_hostlist(hosts)), hosts) << list << " -> " << compress_hostlist(hosts);
  }
}

TEST(Counts, ExpandsSlurmCountLists) {
  EXPECT_EQ(expand_counts("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_counts("16(x2)"), (std::vector<int>{16, 16}));
  EXPECT_EQ(expand_counts("4"), (std::vector<int>{4}));
  EXPECT_EQ(expand_counts("1,2,3"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(expand_counts("0"), (std::vector<int>{0}));
  EXPECT_EQ(compress_counts({2, 2, 2, 1}), "2(x3),1");
  EXPECT_EQ(compress_counts({5}), "5");
}

TEST(Counts, MalformedCountListsAreClearErrors) {
  for (const char* bad : {"", "2(x3", "2(3)", "(x3)", "2(x0)", "2,,1", "2,", "a", "2 1", "-1", "2(x)",
                          "1234567890", "2(x3)(x2)"}) {
    try {
      auto v = expand_counts(bad);
      ADD_FAILURE() << "accepted '" << bad << "' (" << v.size() << " entries)";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("count list"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(expand_counts("1(x99999999)"), ParseError);
}
