// KernelKey's canonical text form and its parser.
#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Names are identifiers; values are any printable text without the separators, so the
// canonical form always parses back to the same key.
bool is_name(const std::string& s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) {
      return false;
    }
  }
  return true;
}

bool is_value(const std::string& s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (c <= ' ' || c > '~' || c == ',' || c == '=' || c == ':') {
      return false;
    }
  }
  return true;
}

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw std::invalid_argument("[KernelKey::parse] malformed key '" + text + "': " + why + ".");
}

}  // namespace

std::string KernelKey::canonical() const {
  if (!is_name(family)) {
    throw std::invalid_argument("[KernelKey::canonical] family '" + family +
                                "' must be a non-empty identifier.");
  }
  std::string out = family + ":";
  bool first = true;
  for (const auto& [name, value] : params) {  // std::map iterates sorted by name
    if (!is_name(name) || !is_value(value)) {
      throw std::invalid_argument("[KernelKey::canonical] parameter '" + name + "=" + value +
                                  "' of family " + family +
                                  " needs an identifier name and a value without ',', '=', "
                                  "':' or spaces.");
    }
    if (!first) {
      out += ',';
    }
    out += name + "=" + value;
    first = false;
  }
  return out;
}

KernelKey KernelKey::parse(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    malformed(text, "expected 'family:name=value,...'");
  }
  KernelKey key;
  key.family = text.substr(0, colon);
  if (!is_name(key.family)) {
    malformed(text, "the family must be a non-empty identifier");
  }
  std::string rest = text.substr(colon + 1);
  if (rest.empty()) {
    return key;
  }
  size_t pos = 0;
  while (true) {
    size_t comma = rest.find(',', pos);
    std::string item = rest.substr(pos, comma == std::string::npos ? comma : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      malformed(text, "parameter '" + item + "' has no '='");
    }
    std::string name = item.substr(0, eq);
    std::string value = item.substr(eq + 1);
    if (!is_name(name)) {
      malformed(text, "parameter name '" + name + "' is not an identifier");
    }
    if (!is_value(value)) {
      malformed(text, "parameter '" + name + "' has an empty or invalid value");
    }
    if (!key.params.emplace(name, value).second) {
      malformed(text, "parameter '" + name + "' appears twice");
    }
    if (comma == std::string::npos) {
      break;
    }
    pos = comma + 1;
  }
  return key;
}

const std::string& key_param(const KernelKey& key, const char* name, const std::string& where) {
  auto it = key.params.find(name);
  if (it == key.params.end()) {
    throw std::invalid_argument("[render] " + where + ": missing parameter '" + name + "'.");
  }
  return it->second;
}

}  // namespace mlx::core::vulkan::codegen
