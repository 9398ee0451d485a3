#include "bench/bench_cli.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>

namespace ringmend::bench {

std::optional<std::size_t> parse_bytes(std::string_view text) {
  unsigned long long v = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || p == begin) return std::nullopt;
  std::string_view suffix(p, static_cast<std::size_t>(end - p));
  int shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    return std::nullopt;
  if (shift > 0 && v > (std::numeric_limits<unsigned long long>::max() >> shift)) return std::nullopt;
  return static_cast<std::size_t>(v << shift);
}

std::optional<ringmend::DataType> parse_type(std::string_view name) {
  using ringmend::DataType;
  constexpr std::pair<std::string_view, DataType> kNames[] = {
      {"float", DataType::Float32}, {"double", DataType::Float64}, {"int", DataType::Int32},
      {"long", DataType::Int64},    {"half", DataType::Float16},   {"bfloat16", DataType::BFloat16}};
  for (const auto& [text, type] : kNames)
    if (name == text) return type;
  return std::nullopt;
}

bool parse_size_range(std::string_view text, std::size_t& min_bytes, std::size_t& max_bytes) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    auto hi = parse_bytes(text);
    if (!hi) return false;
    max_bytes = *hi;
    return true;
  }
  auto lo = parse_bytes(text.substr(0, colon));
  auto hi = parse_bytes(text.substr(colon + 1));
  if (!lo || !hi) return false;
  min_bytes = *lo;
  max_bytes = *hi;
  return true;
}

CLI::Validator count_check(int least) {
  CLI::Validator range = CLI::Range(least, kMaxCount);
  range.description("");
  return range;
}

CLI::Validator byte_size_check(std::size_t least, std::size_t most) {
  const std::string range = size_text(least) + " to " + size_text(most);
  return CLI::Validator(
      [least, most, range](std::string& text) -> std::string {
        const auto bytes = parse_bytes(text);
        if (!bytes) return "'" + text + "' is not a size (bytes, or with K, M or G)";
        if (*bytes < least || *bytes > most) return "'" + text + "' is not from " + range;
        return {};
      },
      "in [" + size_text(least) + " - " + size_text(most) + "]");
}

std::string size_text(std::size_t bytes) {
  for (const auto& [suffix, shift] : {std::pair{"G", 30}, {"M", 20}, {"K", 10}})
    if (bytes != 0 && bytes % (std::size_t{1} << shift) == 0) return std::to_string(bytes >> shift) + suffix;
  return std::to_string(bytes);
}

namespace {

// "4,8,16": whole numbers, no empty item; nullopt for anything else.
std::optional<std::vector<int>> parse_int_list(std::string_view text) {
  std::vector<int> values;
  for (std::size_t start = 0;;) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    int v = 0;
    const char* first = text.data() + start;
    const char* last = text.data() + comma;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || end != last || first == last) return std::nullopt;
    values.push_back(v);
    if (comma == text.size()) return values;
    start = comma + 1;
  }
}

// --help is read in a terminal: no line longer than this.
constexpr std::size_t kHelpWidth = 80;

// Breaks every line of `text` longer than `width` at its last spaces.
std::string wrap(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n') line_start = out.size();
    if (out.size() - line_start <= width) continue;
    const std::size_t space = out.rfind(' ', out.size() - 1);
    if (space == std::string::npos || space < line_start) continue;  // one long word: left as it is
    out[space] = '\n';
    line_start = space + 1;
  }
  return out;
}

// The usage line first, then what the program does, its options (their
// descriptions wrapped beside the names) and the notes.
class HelpFormatter final : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    return make_usage(app, std::move(name)) + "\n" + make_description(app) + make_groups(app, mode) + "\n" +
           make_footer(app);
  }
  std::string make_description(const CLI::App* app) const override {
    return wrap(app->get_description(), kHelpWidth) + "\n";
  }
  std::string make_footer(const CLI::App* app) const override {
    return app->get_footer().empty() ? std::string() : wrap(app->get_footer(), kHelpWidth) + "\n";
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(opt->get_description(), kHelpWidth - get_column_width());
  }
};

}  // namespace

Cli::Cli(std::string program, std::string description, std::string footer)
    : program_(std::move(program)), app_(std::move(description), program_) {
  if (!footer.empty()) app_.footer(std::move(footer));
  // As the hand-written parsers did: an option given twice takes the later value
  // (a script may append an override).
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto formatter = std::make_shared<HelpFormatter>();
  formatter->column_width(30);
  app_.formatter(formatter);
}

CLI::Option* Cli::add_message_sizes(std::size_t& min_bytes, std::size_t& max_bytes, std::size_t least_min) {
  auto check = [&min_bytes, least_min](std::string& text) -> std::string {
    std::size_t lo = min_bytes, hi = 0;
    if (!parse_size_range(text, lo, hi)) return "'" + text + "' is not [MIN:]MAX (bytes, or with K, M or G)";
    if (lo < least_min) return "'" + text + "': MIN is less than " + std::to_string(least_min);
    if (lo > hi) return "'" + text + "': MIN is larger than MAX";
    return {};
  };
  auto store = [&min_bytes, &max_bytes](const std::string& text) {
    parse_size_range(text, min_bytes, max_bytes);
  };
  return app_
      .add_option_function<std::string>("-m,--message-size", store,
                                        "sizes in bytes from MIN to MAX, doubling; K, M, G: x1024")
      ->type_name("[MIN:]MAX")
      ->default_str(size_text(min_bytes) + ":" + size_text(max_bytes))
      ->check(CLI::Validator(check, ""));
}

CLI::Option* Cli::add_int_list(const std::string& names, std::vector<int>& values, int lo, int hi,
                               std::size_t count, const std::string& what) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  auto check = [lo, hi, count, range](std::string& text) -> std::string {
    const auto list = parse_int_list(text);
    if (!list) return "'" + text + "' is not a list of whole numbers N,N,...";
    if (count != 0 && list->size() != count)
      return "'" + text + "' is not " + std::to_string(count) + " numbers";
    for (int v : *list)
      if (v < lo || v > hi) return "'" + text + "': " + std::to_string(v) + " is not from " + range;
    return {};
  };
  auto store = [&values](const std::string& text) { values = *parse_int_list(text); };
  return app_.add_option_function<std::string>(names, store, what + " (each " + range + ")")
      ->check(CLI::Validator(check, ""));
}

CLI::Option* Cli::add_count(const std::string& names, int& value, int least, int most,
                            const std::string& what) {
  const CLI::Validator range = most == kMaxCount ? count_check(least) : CLI::Range(least, most);
  return app_.add_option(names, value, what)->type_name("N")->check(range)->capture_default_str();
}

CLI::Option* Cli::add_name(const std::string& names, std::string& value,
                           const std::vector<std::string>& choices, const std::string& what) {
  return app_.add_option(names, value, what)
      ->type_name("NAME")
      ->check(CLI::IsMember(choices))
      ->capture_default_str();
}

CLI::Option* Cli::add_byte_size(const std::string& names, std::size_t& bytes, std::size_t least,
                                std::size_t most, const std::string& what) {
  auto store = [&bytes](const std::string& text) { bytes = *parse_bytes(text); };
  return app_.add_option_function<std::string>(names, store, what)
      ->type_name("SIZE")
      ->default_str(size_text(bytes))
      ->check(byte_size_check(least, most));
}

CLI::Option* Cli::add_file(const std::string& names, std::string& path, const std::string& what) {
  return app_.add_option(names, path, what)
      ->type_name("FILE")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string { return text.empty() ? "needs a file name" : ""; }, ""));
}

CLI::Option* Cli::add_step_factor(std::size_t& factor) {
  if (CLI::Option* sizes = app_.get_option_no_throw("--message-size"))
    sizes->description("sizes in bytes from MIN to MAX, growing by --step-factor; K, M, G: x1024");
  return app_.add_option("--step-factor", factor, "each size is the one before times F")
      ->type_name("F")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
}

CLI::Option* Cli::add_full(bool& full) {
  return app_.add_flag("-f,--full", full, "Min/Max Latency and Iterations columns too");
}

CLI::Option* Cli::add_validation(bool& validate) {
  return app_.add_flag("-c,--validation", validate,
                       "check every size's result (#wrong: elements that differ from the expected sum)");
}

CLI::Option* Cli::add_type(ringmend::DataType& type, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, ringmend::DataType>> choices;
  for (const auto& name : names) choices.emplace_back(name, *parse_type(name));
  return add_choice("-T,--type", type, std::move(choices), "element type (sum of these)")
      ->default_str("float");
}

CLI::Option* Cli::add_impl(std::string& impl, const std::vector<std::string>& choices) {
  return add_name("--impl", impl, choices, "what to time");
}

CLI::Option* Cli::add_timeout(int& seconds, const std::string& what) {
  return add_count("--timeout", seconds, 1, kMaxCount, what)->type_name("SECONDS");
}

CLI::Option* Cli::add_json(std::string& path) {
  return add_file("--json", path, "write every row and the run's metadata to FILE (bench/README.md)");
}

void Cli::add_check(std::function<std::string()> check) { checks_.push_back(std::move(check)); }

void Cli::parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
    for (const auto& check : checks_)
      if (std::string problem = check(); !problem.empty()) throw CLI::ValidationError(problem);
  } catch (const CLI::CallForHelp&) {
    std::cout << app_.help() << std::flush;
    std::exit(0);
  } catch (const CLI::ExtrasError&) {
    // CLI11 says "not expected"; name the argument as a misspelled flag would be named.
    const std::string first = app_.remaining().empty() ? "?" : app_.remaining().front();
    std::fprintf(stderr, "%s: %s '%s' (--help for usage)\n", program_.c_str(),
                 first.starts_with('-') ? "unknown option" : "unexpected argument", first.c_str());
    std::exit(2);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (--help for usage)\n", program_.c_str(), e.what());
    std::exit(2);
  }
}

}  // namespace ringmend::bench
