// Just enough JSON output for --json listings: objects, arrays, strings, numbers, bools.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spvdump {

std::string json_string(const std::string& s);

// Builds one object: obj.add("key", value)...; str() gives "{...}".
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value);
  JsonObject& add(const std::string& key, uint64_t value);
  JsonObject& add(const std::string& key, int64_t value);
  JsonObject& add(const std::string& key, int value);
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add_raw(const std::string& key, const std::string& json);
  std::string str() const;

 private:
  std::vector<std::string> fields_;
};

std::string json_array(const std::vector<std::string>& items_json);
std::string json_string_array(const std::vector<std::string>& items);

}  // namespace spvdump
