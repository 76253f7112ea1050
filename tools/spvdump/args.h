// A small command-line parser: --flag, --option value, --option=value, positionals, and
// "--" to end options. Usage mistakes throw UsageError, which main turns into exit code 2.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace spvdump {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ArgSpec {
  std::set<std::string> flags;    // e.g. "--json"
  std::set<std::string> options;  // take a value, e.g. "--family"
  size_t min_positional = 0;
  size_t max_positional = 0;
};

class Args {
 public:
  // Parses args (after the subcommand name) against spec; "--help"/"-h" is always a flag.
  Args(const std::string& command, const std::vector<std::string>& args, const ArgSpec& spec);

  bool flag(const std::string& name) const;
  std::optional<std::string> option(const std::string& name) const;
  const std::vector<std::string>& positional() const {
    return positional_;
  }

 private:
  std::set<std::string> flags_;
  std::map<std::string, std::string> options_;
  std::vector<std::string> positional_;
};

}  // namespace spvdump
