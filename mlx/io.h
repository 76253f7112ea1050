// Reading and writing arrays in files: the safetensors format, with MLX's names and
// signatures (docs/io.md). MLX's io::Reader / io::Writer overloads, .npy and GGUF are not
// here yet.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core {

using SafetensorsLoad =
    std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, std::string>>;

// The tensors of a .safetensors file and its "__metadata__" strings. The file is
// memory-mapped and each tensor copied once into its array's buffer, so the arrays are
// evaluated, usable on every device, and independent of the file once this returns.
// Malformed contents throw std::invalid_argument, an unreadable file std::runtime_error;
// both messages start with "[load_safetensors]" and name the file (and the tensor).
SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s = {});

// Evaluates the arrays and writes them, row-major, with `metadata` as "__metadata__".
// Appends ".safetensors" to `file` when it does not end with it, as MLX does.
void save_safetensors(std::string file, std::unordered_map<std::string, array>,
                      std::unordered_map<std::string, std::string> metadata = {});

}  // namespace mlx::core
