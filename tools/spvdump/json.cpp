#include "json.h"

#include <cmath>
#include <cstdio>

namespace spvdump {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

JsonObject& JsonObject::add(const std::string& key, const std::string& value) {
  return add_raw(key, json_string(value));
}

JsonObject& JsonObject::add(const std::string& key, const char* value) {
  return add_raw(key, json_string(value));
}

JsonObject& JsonObject::add(const std::string& key, uint64_t value) {
  return add_raw(key, std::to_string(value));
}

JsonObject& JsonObject::add(const std::string& key, int64_t value) {
  return add_raw(key, std::to_string(value));
}

JsonObject& JsonObject::add(const std::string& key, int value) {
  return add_raw(key, std::to_string(value));
}

JsonObject& JsonObject::add(const std::string& key, double value) {
  if (!std::isfinite(value)) {
    return add_raw(key, "null");  // JSON has no inf/nan
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", value);
  return add_raw(key, buf);
}

JsonObject& JsonObject::add(const std::string& key, bool value) {
  return add_raw(key, value ? "true" : "false");
}

JsonObject& JsonObject::add_raw(const std::string& key, const std::string& json) {
  fields_.push_back(json_string(key) + ":" + json);
  return *this;
}

std::string JsonObject::str() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    out += (i ? "," : "") + fields_[i];
  }
  return out + "}";
}

std::string json_array(const std::vector<std::string>& items_json) {
  std::string out = "[";
  for (size_t i = 0; i < items_json.size(); ++i) {
    out += (i ? "," : "") + items_json[i];
  }
  return out + "]";
}

std::string json_string_array(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) {
    quoted.push_back(json_string(s));
  }
  return json_array(quoted);
}

}  // namespace spvdump
