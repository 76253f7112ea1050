// GLSL -> SPIR-V with the glslang C API in-process, then the SPIRV-Tools optimizer and (in
// debug builds) the validator.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <glslang/build_info.h>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include "codegen/codegen.h"
#include "codegen/coop_rewrite.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Bump when compile() changes in a way that changes its output for the same input.
constexpr int kCodegenVersion = 1;
constexpr spv_target_env kTargetEnv = SPV_ENV_VULKAN_1_2;

void initialize_glslang() {
  // glslang's process state is set up once and kept for the life of the process; after
  // that, shaders compile concurrently (each thread has its own pool allocator).
  static std::once_flag once;
  std::call_once(once, [] {
    if (!glslang_initialize_process()) {
      throw std::runtime_error("[vulkan] glslang_initialize_process failed.");
    }
  });
}

struct ShaderDeleter {
  void operator()(glslang_shader_t* s) const {
    glslang_shader_delete(s);
  }
};
struct ProgramDeleter {
  void operator()(glslang_program_t* p) const {
    glslang_program_delete(p);
  }
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Appends the source text of each "ERROR: file:line:" in glslang's log.
std::string with_source_lines(const std::string& log, const std::string& glsl) {
  std::string out = log;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) {
    out.pop_back();
  }
  out += "\nsource:";
  static const std::regex location(R"((?:ERROR|WARNING): ([^:\s]+):(\d+):)");
  std::set<std::pair<std::string, int>> shown;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), location);
       it != std::sregex_iterator() && shown.size() < 5; ++it) {
    std::string file = (*it)[1].str();
    int line = std::stoi((*it)[2].str());
    if (!shown.emplace(file, line).second) {
      continue;
    }
    std::string text = rendered_source_line(glsl, file, line);
    if (!text.empty()) {
      out += "\n  " + file + ":" + std::to_string(line) + ": " + text;
    }
  }
  return out;
}

[[noreturn]] void compile_error(const KernelKey& key, const KernelSource& source, const char* stage,
                                const std::string& log) {
  throw std::runtime_error("[vulkan] kernel " + key.canonical() + " (template " +
                           source.template_name + ") failed to " + stage + ":\n" +
                           with_source_lines(log, source.glsl));
}

bool validation_enabled() {
#ifndef NDEBUG
  return true;
#else
  const char* v = std::getenv("MLX_VK_VALIDATE_SPIRV");
  return v && *v && std::string(v) != "0";
#endif
}

void optimize(std::vector<uint32_t>& words, int level, const KernelKey& key) {
  spvtools::Optimizer opt(kTargetEnv);
  std::string messages;
  opt.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                             const char* m) { messages += std::string(m) + "\n"; });
  if (level == 1) {
    opt.RegisterSizePasses();
  } else {
    opt.RegisterPerformancePasses();
  }
  std::vector<uint32_t> out;
  if (!opt.Run(words.data(), words.size(), &out)) {
    throw std::runtime_error("[vulkan] kernel " + key.canonical() +
                             ": SPIRV-Tools optimizer failed: " + messages);
  }
  words = std::move(out);
}

}  // namespace

std::string compiler_version() {
  return "mlxvk-codegen " + std::to_string(kCodegenVersion) + "; glslang " +
         std::to_string(GLSLANG_VERSION_MAJOR) + "." + std::to_string(GLSLANG_VERSION_MINOR) + "." +
         std::to_string(GLSLANG_VERSION_PATCH) + GLSLANG_VERSION_FLAVOR + "; SPIRV-Tools " +
         spvSoftwareVersionString() + "; target vulkan1.2/spv1.5";
}

SpirvModule compile(const KernelKey& key, const KernelSource& source) {
  return compile(key, source, optimizer_level_for(key.family));
}

SpirvModule compile(const KernelKey& key, const KernelSource& source, int optimizer_level) {
  if (optimizer_level < 0 || optimizer_level > 2) {
    throw std::invalid_argument("[compile] optimizer level must be 0, 1 or 2, got " +
                                std::to_string(optimizer_level) + ".");
  }
  initialize_glslang();
  SpirvModule module;
  module.optimizer_level = optimizer_level;
  auto start = std::chrono::steady_clock::now();

  glslang_input_t input{};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  input.client_version = GLSLANG_TARGET_VULKAN_1_2;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_5;
  input.code = source.glsl.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.force_default_version_and_profile = false;
  input.forward_compatible = false;
  input.messages = static_cast<glslang_messages_t>(
      GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();

  std::unique_ptr<glslang_shader_t, ShaderDeleter> shader(glslang_shader_create(&input));
  if (!shader) {
    compile_error(key, source, "create a glslang shader", "");
  }
  if (!glslang_shader_preprocess(shader.get(), &input)) {
    compile_error(key, source, "preprocess", glslang_shader_get_info_log(shader.get()));
  }
  if (!glslang_shader_parse(shader.get(), &input)) {
    compile_error(key, source, "compile", glslang_shader_get_info_log(shader.get()));
  }
  std::unique_ptr<glslang_program_t, ProgramDeleter> program(glslang_program_create());
  glslang_program_add_shader(program.get(), shader.get());
  if (!glslang_program_link(program.get(), input.messages)) {
    compile_error(key, source, "link", glslang_program_get_info_log(program.get()));
  }
  glslang_spv_options_t options{};
  options.disable_optimizer = true;  // SPIRV-Tools runs below, at the family's level
  glslang_program_SPIRV_generate_with_options(program.get(), GLSLANG_STAGE_COMPUTE, &options);
  module.words.resize(glslang_program_SPIRV_get_size(program.get()));
  glslang_program_SPIRV_get(program.get(), module.words.data());
  if (const char* m = glslang_program_SPIRV_get_messages(program.get()); m && *m) {
    compile_error(key, source, "generate SPIR-V", m);
  }
  module.glslang_ms = ms_since(start);

  if (optimizer_level > 0) {
    start = std::chrono::steady_clock::now();
    optimize(module.words, optimizer_level, key);
    module.optimize_ms = ms_since(start);
  }
  if (validation_enabled()) {
    if (std::string error = validate_spirv(module.words); !error.empty()) {
      throw std::runtime_error("[vulkan] kernel " + key.canonical() +
                               " produced invalid SPIR-V: " + error);
    }
  }
  // After validation: this SPIRV-Tools predates SPV_KHR_cooperative_matrix and bfloat16.
  if (source.coop_khr) {
    module.words = coop_nv_to_khr(module.words, source.coop_khr_bf16);
  }
  return module;
}

std::string validate_spirv(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(kTargetEnv);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                               const char* m) { messages += std::string(m) + "\n"; });
  if (words.empty()) {
    return "empty module";
  }
  if (tools.Validate(words.data(), words.size(), spvtools::ValidatorOptions())) {
    return "";
  }
  return messages.empty() ? "invalid module" : messages;
}

std::string disassemble(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(kTargetEnv);
  std::string text;
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                               const char* m) { messages += std::string(m) + "\n"; });
  if (!tools.Disassemble(
          words, &text,
          SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT)) {
    throw std::runtime_error("[vulkan] cannot disassemble SPIR-V: " + messages);
  }
  return text;
}

}  // namespace mlx::core::vulkan::codegen
