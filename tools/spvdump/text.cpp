#include "text.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace spvdump {

std::string format_time(int64_t unix_ms) {
  if (unix_ms <= 0) {
    return "-";
  }
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", ms);
  return buf;
}

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) {
        out += std::string(width[i] - row[i].size() + 2, ' ');
      }
    }
    out += "\n";
  }
  return out;
}

std::string key_family(const std::string& key) {
  return key.substr(0, key.find(':'));
}

bool key_has_dtype(const std::string& key, const std::string& dt) {
  size_t colon = key.find(':');
  if (colon == std::string::npos) {
    return false;
  }
  // Walk "k=v" pairs; compare each dot-separated piece of each value.
  std::string params = key.substr(colon + 1);
  size_t pos = 0;
  while (pos <= params.size()) {
    size_t comma = params.find(',', pos);
    std::string pair = params.substr(pos, comma == std::string::npos ? comma : comma - pos);
    if (size_t eq = pair.find('='); eq != std::string::npos) {
      std::string value = pair.substr(eq + 1);
      size_t p = 0;
      while (p <= value.size()) {
        size_t dot = value.find('.', p);
        if (value.substr(p, dot == std::string::npos ? dot : dot - p) == dt) {
          return true;
        }
        if (dot == std::string::npos) {
          break;
        }
        p = dot + 1;
      }
    }
    if (comma == std::string::npos) {
      break;
    }
    pos = comma + 1;
  }
  return false;
}

}  // namespace spvdump
