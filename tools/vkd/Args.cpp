#include "tools/vkd/Args.h"

#include <cerrno>
#include <cstdlib>

namespace vkd::cli {
namespace {

// "options: --input, --output-dir, ..." (the CLI tests compare it with each command's help).
std::string option_list(const std::vector<OptionSpec>& specs) {
  std::string s = "options:";
  for (const OptionSpec& spec : specs) s += (s.back() == ':' ? " " : ", ") + spec.name;
  return s;
}

}  // namespace

bool ParsedArgs::has(const std::string& name) const {
  for (const auto& o : options) {
    if (o.first == name) return true;
  }
  return false;
}

std::optional<std::string> ParsedArgs::last(const std::string& name) const {
  std::optional<std::string> v;
  for (const auto& o : options) {
    if (o.first == name) v = o.second;
  }
  return v;
}

std::vector<std::string> ParsedArgs::all(const std::string& name) const {
  std::vector<std::string> v;
  for (const auto& o : options) {
    if (o.first == name) v.push_back(o.second);
  }
  return v;
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs) {
  ParsedArgs out;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (!spec) throw UsageError("unknown option '" + name + "' (" + option_list(specs) + ")");
    if (!spec->takes_value) {
      if (eq != std::string::npos) throw UsageError("option '" + name + "' takes no value");
      out.options.emplace_back(name, "");
    } else if (eq != std::string::npos) {
      out.options.emplace_back(name, a.substr(eq + 1));
    } else {
      if (i + 1 >= args.size()) throw UsageError("option '" + name + "' needs a value");
      out.options.emplace_back(name, args[++i]);
    }
  }
  return out;
}

long long parse_int_option(const std::string& option, const std::string& value, long long min,
                           long long max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    throw UsageError(option + " needs a whole number in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + value + "'");
  }
  return v;
}

}  // namespace vkd::cli
