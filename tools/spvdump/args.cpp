#include "args.h"

namespace spvdump {

Args::Args(const std::string& command, const std::vector<std::string>& args, const ArgSpec& spec) {
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      flags_.insert("--help");
      continue;
    }
    std::string name = a;
    std::optional<std::string> value;
    if (auto eq = a.find('='); eq != std::string::npos && a.starts_with("--")) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (spec.flags.count(name)) {
      if (value) {
        throw UsageError(command + ": " + name + " takes no value");
      }
      flags_.insert(name);
    } else if (spec.options.count(name)) {
      if (!value) {
        if (i + 1 >= args.size()) {
          throw UsageError(command + ": " + name + " needs a value");
        }
        value = args[++i];
      }
      options_[name] = *value;
    } else {
      throw UsageError(command + ": unknown option " + name);
    }
  }
  if (flags_.count("--help")) {
    return;  // help needs no positionals
  }
  if (positional_.size() < spec.min_positional) {
    throw UsageError(command + ": missing argument");
  }
  if (positional_.size() > spec.max_positional) {
    throw UsageError(command + ": unexpected argument '" + positional_[spec.max_positional] + "'");
  }
}

bool Args::flag(const std::string& name) const {
  return flags_.count(name) > 0;
}

std::optional<std::string> Args::option(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) {
    return std::nullopt;
  }
  return it->second;
}

}  // namespace spvdump
