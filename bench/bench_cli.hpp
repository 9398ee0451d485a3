// The command lines of the benchmarks (CLI11): the flags they share, so that
// one meaning has one flag in every program, and one way to fail.
//
// Every rank parses the same argv before MPI starts (or before the first
// collective), so a bad flag makes every rank exit with the same error and
// none is left waiting for the others.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmend/core/types.hpp"

namespace ringmend::bench {

// "4096", "64K", "4M", "1G" (powers of 1024). Empty optional on bad input.
std::optional<std::size_t> parse_bytes(std::string_view text);

// OSU's -m [MIN:]MAX. Returns false on bad input; MIN keeps its value when
// only MAX is given.
bool parse_size_range(std::string_view text, std::size_t& min_bytes, std::size_t& max_bytes);

// -T's type names: float, double, int, long, half, bfloat16.
std::optional<ringmend::DataType> parse_type(std::string_view name);

// Counts (-i, -x, -W, --timeout...) stop here: anything larger is a typo.
inline constexpr int kMaxCount = 1'000'000'000;

// A CLI11 check of a count from `least` to kMaxCount (the limit left out of
// --help: it only catches typos).
CLI::Validator count_check(int least);

// A CLI11 check of a byte count: "4096", "64K", "4M", "1G" (powers of 1024)
// from `least` to `most` bytes.
CLI::Validator byte_size_check(std::size_t least, std::size_t most);

// "64K" for 65536: the shortest text parse_bytes reads back.
std::string size_text(std::size_t bytes);

class Cli {
 public:
  // `description` heads --help (what the program measures), `footer` ends it.
  Cli(std::string program, std::string description, std::string footer = {});

  CLI::App& app() { return app_; }

  // -m, --message-size [MIN:]MAX: the sizes of the sweep (MIN keeps its value
  // when only MAX is given); MIN must be at least `least_min`.
  CLI::Option* add_message_sizes(std::size_t& min_bytes, std::size_t& max_bytes, std::size_t least_min);

  // -i, --iterations N (at least 1) and -x, --warmup N (at least 0): a count,
  // or an optional one where unset means a default by size.
  template <class Count>
  CLI::Option* add_iterations(Count& iters, const std::string& what) {
    return app_.add_option("-i,--iterations", iters, what)->type_name("N")->check(count_check(1));
  }
  template <class Count>
  CLI::Option* add_warmup(Count& warmup, const std::string& what) {
    return app_.add_option("-x,--warmup", warmup, what)->type_name("N")->check(count_check(0));
  }

  // The kinds of value an option of one program takes, each shown in --help
  // with its default: a count N from `least` to `most`; a name, one of
  // `choices`; a size in bytes ("64K") from `least` to `most`; a file name.
  CLI::Option* add_count(const std::string& names, int& value, int least, int most, const std::string& what);
  CLI::Option* add_name(const std::string& names, std::string& value, const std::vector<std::string>& choices,
                        const std::string& what);
  CLI::Option* add_byte_size(const std::string& names, std::size_t& bytes, std::size_t least,
                             std::size_t most, const std::string& what);
  CLI::Option* add_file(const std::string& names, std::string& path, const std::string& what);

  // --step-factor F: sizes grow by F (at least 2) instead of doubling.
  CLI::Option* add_step_factor(std::size_t& factor);

  // A list of whole numbers "A,B,..." in [lo, hi]; `count` of them, or any
  // number but none when `count` is 0.
  CLI::Option* add_int_list(const std::string& names, std::vector<int>& values, int lo, int hi,
                            std::size_t count, const std::string& what);

  // -f, --full: the Min/Max Latency and Iterations columns.
  CLI::Option* add_full(bool& full);
  // -c, --validation: check every result (#wrong).
  CLI::Option* add_validation(bool& validate);
  // -T, --type NAME: the element type, one of `names` (parse_type's:
  // float, double, int, long, half, bfloat16).
  CLI::Option* add_type(ringmend::DataType& type, const std::vector<std::string>& names);
  // --impl NAME: what to time, one of `choices`.
  CLI::Option* add_impl(std::string& impl, const std::vector<std::string>& choices);
  // --timeout SECONDS (at least 1).
  CLI::Option* add_timeout(int& seconds, const std::string& what);
  // --json FILE: the result file (bench/README.md, "JSON files").
  CLI::Option* add_json(std::string& path);

  // An option whose value is one of the names in `choices`, stored as its
  // paired value (an enum).
  template <class T>
  CLI::Option* add_choice(const std::string& names, T& value, std::vector<std::pair<std::string, T>> choices,
                          const std::string& what) {
    std::vector<std::string> keys;
    for (const auto& choice : choices) keys.push_back(choice.first);
    auto store = [&value, choices](const std::string& name) {
      for (const auto& [key, v] : choices)
        if (key == name) value = v;
    };
    return app_.add_option_function<std::string>(names, store, what)
        ->type_name("NAME")
        ->check(CLI::IsMember(keys));
  }

  // A check across options, run once all are read: returns what is wrong
  // ("" when all is well); parse() reports it as it reports a bad flag.
  void add_check(std::function<std::string()> check);

  // --help: the usage on stdout, exit status 0. A bad flag or value: one line
  // "PROGRAM: what (--help for usage)" on stderr, exit status 2. Returns
  // only when the command line is good.
  void parse(int argc, char** argv);

 private:
  std::string program_;
  CLI::App app_;
  std::vector<std::function<std::string()>> checks_;
};

}  // namespace ringmend::bench
