// Internal helpers shared by codegen's sources; not part of the public interface.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// Generated at build time from templates/ (embed_templates.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_templates();

// The text of source line `line` of `file` in a rendered kernel, found by following the
// `#line N "file"` markers the template expander writes; "" when unknown. file "0" (or "")
// means the rendered text itself.
std::string rendered_source_line(const std::string& glsl, const std::string& file, int line);

// The value of key parameter `name`; throws std::invalid_argument naming `where` (the
// kernel) when it is missing.
const std::string& key_param(const KernelKey& key, const char* name, const std::string& where);

// render() for the elementwise families (elementwise.cpp) and the transpose copy
// (transpose.cpp).
KernelSource render_elementwise(const KernelKey& key, const DeviceCaps& caps);
KernelSource render_transpose(const KernelKey& key, const DeviceCaps& caps);

}  // namespace mlx::core::vulkan::codegen
