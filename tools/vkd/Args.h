// Command-line options of the vkd commands, and the error that carries an exit code to main().
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vkd::cli {

// Thrown by the commands; main() prints "vkd <command>: <message>" on stderr and returns
// `exit_code` (2: bad usage or bad input, 1: runtime failure). A message may span lines.
class CliError : public std::runtime_error {
 public:
  CliError(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// A usage mistake (unknown option, missing value, ...): exit code 2, and main() adds the usage.
class UsageError : public CliError {
 public:
  explicit UsageError(const std::string& message) : CliError(2, message) {}
};

struct OptionSpec {
  std::string name;  // "--input"
  bool takes_value = false;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  // in command-line order

  bool has(const std::string& name) const;
  std::optional<std::string> last(const std::string& name) const;  // the last one given wins
  std::vector<std::string> all(const std::string& name) const;
};

// "--name VALUE" and "--name=VALUE"; "--" ends the options. Throws UsageError; for an unknown
// option the message lists every option of `specs` ("unknown option '--x' (options: --a, --b)").
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs);

// A whole decimal number in [min, max], else UsageError naming the option.
long long parse_int_option(const std::string& option, const std::string& value, long long min,
                           long long max);

}  // namespace vkd::cli
