#include "weights.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

namespace qwen3 {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error(std::string("[qwen3] cannot open ") + path.string());
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("[qwen3] ") + path.string() +
                                ": not valid JSON: " + e.what());
  }
}

void load_file_into(const fs::path& file, Weights& out) {
  auto [arrays, metadata] = mx::load_safetensors(file.string());
  for (auto& [name, a] : arrays) {
    out.insert_or_assign(name, a);
  }
}

std::string shard_name(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

}  // namespace

Weights load_weights(const std::string& model_dir) {
  fs::path dir(model_dir);
  Weights out;
  fs::path single = dir / "model.safetensors";
  fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(single)) {
    load_file_into(single, out);
    return out;
  }
  if (!fs::exists(index)) {
    throw std::runtime_error(std::string("[qwen3] ") + model_dir +
                             " has neither model.safetensors nor model.safetensors.index.json");
  }
  json j = read_json(index);
  if (!j.contains("weight_map") || !j.at("weight_map").is_object()) {
    throw std::invalid_argument(std::string("[qwen3] ") + index.string() +
                                ": no \"weight_map\" object");
  }
  std::map<std::string, std::vector<std::string>> by_file;
  for (const auto& [name, file] : j.at("weight_map").items()) {
    if (!file.is_string()) {
      throw std::invalid_argument(std::string("[qwen3] ") + index.string() + ": entry '" + name +
                                  "' is not a file name");
    }
    by_file[file.get<std::string>()].push_back(name);
  }
  for (const auto& [file, names] : by_file) {
    Weights shard;
    load_file_into(dir / file, shard);
    for (const auto& name : names) {
      auto it = shard.find(name);
      if (it == shard.end()) {
        throw std::invalid_argument(std::string("[qwen3] ") + index.string() + " puts tensor '" +
                                    name + "' in " + file + ", which does not hold it");
      }
      out.insert_or_assign(name, it->second);
    }
  }
  return out;
}

const mx::array& get_tensor(const Weights& weights, const std::string& name,
                            const std::string& where) {
  auto it = weights.find(name);
  if (it == weights.end()) {
    throw std::invalid_argument(std::string("[qwen3] missing tensor '") + name + "' in " + where);
  }
  return it->second;
}

void save_weights(const std::string& model_dir, const Weights& weights, size_t max_shard_bytes) {
  fs::create_directories(model_dir);
  fs::path dir(model_dir);
  std::vector<std::string> names;
  size_t total = 0;
  for (const auto& [name, a] : weights) {
    names.push_back(name);
    total += a.nbytes();
  }
  std::sort(names.begin(), names.end());
  std::unordered_map<std::string, std::string> metadata{{"format", "mlx"}};
  if (max_shard_bytes == 0 || total <= max_shard_bytes) {
    mx::save_safetensors((dir / "model.safetensors").string(), weights, metadata);
    return;
  }
  std::vector<std::vector<std::string>> shards(1);
  size_t in_shard = 0;
  for (const auto& name : names) {
    if (in_shard >= max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(name);
    in_shard += weights.at(name).nbytes();
  }
  json weight_map = json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string file = shard_name(i, shards.size());
    Weights part;
    for (const auto& name : shards[i]) {
      part.insert_or_assign(name, weights.at(name));
      weight_map[name] = file;
    }
    mx::save_safetensors((dir / file).string(), part, metadata);
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  std::ofstream out(dir / "model.safetensors.index.json");
  out << index.dump(2) << "\n";
  if (!out) {
    throw std::runtime_error(std::string("[qwen3] cannot write ") +
                             (dir / "model.safetensors.index.json").string());
  }
}

}  // namespace qwen3
