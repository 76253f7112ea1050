// gen: render and compile one kernel from its key, without a device or a cache.
#include <fstream>
#include <iostream>
#include <map>

#include "cache/hash.h"
#include "codegen/codegen.h"
#include "commands.h"
#include "json.h"
#include "lookup.h"
#include "text.h"

namespace spvdump {

namespace {

namespace codegen = mlx::core::vulkan::codegen;

uint32_t parse_uint(const std::string& name, const std::string& value) {
  bool digits = !value.empty() && value.size() <= 9;
  for (char c : value) {
    digits = digits && c >= '0' && c <= '9';
  }
  if (!digits) {
    throw UsageError("gen: --caps " + name + "=" + value + " is not a whole number");
  }
  return static_cast<uint32_t>(std::stoul(value));
}

// "subgroup_size=64,shader_float16=1,...": the DeviceCaps fields by name.
codegen::DeviceCaps parse_caps(const std::string& text, const std::string& fingerprint) {
  codegen::DeviceCaps caps;
  caps.fingerprint = fingerprint;
  std::map<std::string, bool*> bools = {{"shader_float16", &caps.shader_float16},
                                        {"shader_int8", &caps.shader_int8},
                                        {"shader_int16", &caps.shader_int16},
                                        {"shader_int64", &caps.shader_int64},
                                        {"storage_8bit", &caps.storage_8bit},
                                        {"storage_16bit", &caps.storage_16bit},
                                        {"bfloat16", &caps.bfloat16},
                                        {"cooperative_matrix", &caps.cooperative_matrix},
                                        {"cooperative_matrix_khr", &caps.cooperative_matrix_khr},
                                        {"cooperative_matrix_bf16", &caps.cooperative_matrix_bf16},
                                        {"coop_f16_n8", &caps.coop_f16_n8},
                                        {"coop_bf16_n8", &caps.coop_bf16_n8},
                                        {"subgroup_shuffle", &caps.subgroup_shuffle},
                                        {"integer_dot_product", &caps.integer_dot_product},
                                        {"f16_hw_convert", &caps.f16_hw_convert},
                                        {"fma_fused", &caps.fma_fused},
                                        {"coop_acc_nv_layout", &caps.coop_acc_nv_layout}};
  std::map<std::string, uint32_t*> numbers = {
      {"subgroup_size", &caps.subgroup_size},
      {"max_workgroup_invocations", &caps.max_workgroup_invocations},
      {"max_shared_memory", &caps.max_shared_memory},
      {"compute_units", &caps.compute_units},
      {"fused_vector_steps", &caps.fused_vector_steps}};
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "1" : item.substr(eq + 1);
    if (auto b = bools.find(name); b != bools.end()) {
      if (value != "0" && value != "1") {
        throw UsageError("gen: --caps " + name + " takes 0 or 1");
      }
      *b->second = value == "1";
    } else if (auto n = numbers.find(name); n != numbers.end()) {
      *n->second = parse_uint(name, value);
    } else {
      std::string known;
      for (const auto& [k, _] : bools) {
        known += " " + k;
      }
      for (const auto& [k, _] : numbers) {
        known += " " + k;
      }
      throw UsageError("gen: unknown capability '" + name + "'; known:" + known);
    }
  }
  return caps;
}

int run_gen(const Args& args) {
  codegen::KernelKey key = codegen::KernelKey::parse(args.positional()[0]);
  std::string fingerprint = args.option("--fingerprint").value_or("");
  codegen::DeviceCaps caps = parse_caps(args.option("--caps").value_or(""), fingerprint);
  codegen::KernelSource source = codegen::render(key, caps);
  int level = codegen::optimizer_level_for(key.family);
  if (auto opt = args.option("--opt")) {
    if (*opt != "0" && *opt != "1" && *opt != "2") {
      throw UsageError("gen: --opt takes 0, 1 or 2");
    }
    level = std::stoi(*opt);
  }
  codegen::SpirvModule module = codegen::compile(key, source, level);
  uint64_t hash = codegen::kernel_hash(key, source, caps, level);

  if (auto out = args.option("-o")) {
    std::ofstream f(*out, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(module.words.data()),
            static_cast<std::streamsize>(module.words.size() * 4));
    if (!f.flush()) {
      throw ToolError("cannot write " + *out);
    }
  }
  std::string spec;
  for (const auto& [id, value] : source.spec_constants) {
    spec += (spec.empty() ? "" : ", ") + std::to_string(id) + "=" + std::to_string(value);
  }
  std::string wg = std::to_string(source.workgroup_size[0]) + " x " +
                   std::to_string(source.workgroup_size[1]) + " x " +
                   std::to_string(source.workgroup_size[2]);
  if (args.flag("--json")) {
    std::vector<std::string> wg_json;
    for (auto v : source.workgroup_size) {
      wg_json.push_back(std::to_string(v));
    }
    JsonObject o;
    o.add("key", key.canonical())
        .add("hash", cache::to_hex(hash))
        .add("fingerprint", fingerprint)
        .add("template", source.template_name)
        .add("template_hash", cache::to_hex(source.template_hash))
        .add_raw("defines", json_string_array(source.defines))
        .add("num_buffers", uint64_t{source.num_buffers})
        .add("push_constant_bytes", uint64_t{source.push_constant_bytes})
        .add_raw("workgroup_size", json_array(wg_json))
        .add("optimizer_level", level)
        .add("glslang_ms", module.glslang_ms)
        .add("optimize_ms", module.optimize_ms)
        .add("spirv_words", uint64_t{module.words.size()})
        .add("shared_memory_bytes",
             uint64_t{codegen::workgroup_memory_bytes(module.words, source.spec_constants)})
        .add("compiler_version", codegen::compiler_version());
    if (args.flag("--glsl")) {
      o.add("glsl", source.glsl);
    }
    std::cout << o.str() << "\n";
    return 0;
  }
  std::cout << format_table({
      {"key:", key.canonical()},
      {"hash:", cache::to_hex(hash) + (fingerprint.empty() ? "  (no --fingerprint: matches no "
                                                             "device's cache entry)"
                                                           : "")},
      {"template:", source.template_name + " (hash " + cache::to_hex(source.template_hash) + ")"},
      {"buffers:", std::to_string(source.num_buffers)},
      {"push constants:", std::to_string(source.push_constant_bytes) + " bytes"},
      {"workgroup size:", wg},
      {"spec constants:", spec.empty() ? "none" : spec},
      {"optimizer level:", std::to_string(level)},
      {"glslang ms:", format_ms(module.glslang_ms)},
      {"optimize ms:", format_ms(module.optimize_ms)},
      {"SPIR-V:", std::to_string(module.words.size()) + " words"},
      {"shared memory:",
       std::to_string(codegen::workgroup_memory_bytes(module.words, source.spec_constants)) +
           " bytes"},
      {"compiler:", codegen::compiler_version()},
  });
  std::cout << "defines:\n";
  for (const auto& d : source.defines) {
    std::cout << "  #define " << d << "\n";
  }
  if (args.flag("--glsl")) {
    std::cout << "--- GLSL ---\n" << source.glsl << (source.glsl.ends_with("\n") ? "" : "\n");
  }
  if (args.flag("--dis")) {
    std::cout << "--- SPIR-V ---\n" << codegen::disassemble(module.words);
  }
  return 0;
}

}  // namespace

std::vector<Command> gen_commands() {
  Command gen{"gen",
              "render and compile a kernel from its key (no cache, no device)",
              "usage: spvdump gen <key> [options]\n"
              "\n"
              "Renders the kernel a key describes, compiles it with glslang (and the "
              "optimizer),\nand prints what the runtime would get: template, defines, "
              "buffers, push-constant\nsize, workgroup size, compile times, SPIR-V and shared "
              "memory sizes and the\ncache hash.\nExample: spvdump gen 'binary:idx=32,in=f32.f32,"
              "layout=cc,op=Add,out=f32' --glsl\n"
              "\n"
              "options:\n"
              "  --caps LIST      device capabilities, e.g. "
              "subgroup_size=64,shader_float16=1\n"
              "                   (default: the portable baseline)\n"
              "  --fingerprint FP device fingerprint folded into the hash\n"
              "  --opt N          optimizer level 0, 1 or 2 (default: the family's)\n"
              "  --glsl           print the rendered GLSL\n"
              "  --dis            print the SPIR-V disassembly\n"
              "  -o FILE          write the SPIR-V binary to FILE\n"
              "  --json           one JSON object (with --glsl: includes the GLSL)\n",
              {{"--json", "--glsl", "--dis"}, {"--caps", "--fingerprint", "--opt", "-o"}, 1, 1},
              run_gen};
  return {gen};
}

}  // namespace spvdump
