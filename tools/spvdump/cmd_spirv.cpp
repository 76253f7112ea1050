// dis, reflect, glsl: looking inside a kernel's SPIR-V (SPIRV-Tools and SPIRV-Cross).
#include <algorithm>
#include <array>
#include <cstring>
#include <iostream>
#include <tuple>

#include <spirv_cross/spirv_cross.hpp>
#include <spirv_cross/spirv_glsl.hpp>

#include "cache/file_io.h"
#include "cache/format.h"
#include "codegen/codegen.h"
#include "codegen/fused.h"
#include "commands.h"
#include "json.h"
#include "lookup.h"
#include "text.h"

namespace spvdump {

namespace {

namespace codegen = mlx::core::vulkan::codegen;

// The SPIR-V a subcommand works on: a cached kernel, or a file (e.g. from gen -o). An
// argument ending in .spv or holding a '/' names a file (keys and hashes have neither), so
// a missing file is reported as such, not as an unknown kernel.
std::vector<uint32_t> load_spirv(const Args& args) {
  const std::string& what = args.positional()[0];
  if (what.ends_with(".spv") || what.find('/') != std::string::npos) {
    std::string error;
    auto bytes = cache::read_file(what, error);
    if (!bytes) {
      throw ToolError(error.empty() ? "no such file: " + what : error);
    }
    if (bytes->size() % 4 != 0) {
      throw ToolError(what + " is not SPIR-V (size is not a multiple of 4)");
    }
    std::vector<uint32_t> words(bytes->size() / 4);
    std::memcpy(words.data(), bytes->data(), bytes->size());
    if (auto problem = cache::spirv_problem(words)) {
      throw ToolError(what + " is not SPIR-V: " + *problem);
    }
    return words;
  }
  auto c = open_existing_cache(args);
  return resolve_entry(c, what, args.option("--device").value_or("")).spirv;
}

int run_dis(const Args& args) {
  std::cout << codegen::disassemble(load_spirv(args));
  return 0;
}

struct Binding {
  std::string kind;
  uint32_t set = 0;
  uint32_t binding = 0;
  std::string name;
  std::string access;  // read, write or read/write
};

struct Member {
  std::string name;
  uint32_t offset = 0;
  uint64_t size = 0;
};

struct SpecConstant {
  uint32_t constant_id = 0;
  std::string name;
  uint32_t default_value = 0;
};

struct Reflection {
  std::string entry_point;
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};
  std::array<std::string, 3> workgroup_spec{};  // "id N" where a dimension is a spec constant
  std::vector<Binding> bindings;
  uint64_t push_constant_bytes = 0;
  std::vector<Member> push_constants;
  std::vector<SpecConstant> spec_constants;
};

Reflection reflect(const std::vector<uint32_t>& words) {
  spirv_cross::Compiler comp(words);
  Reflection r;
  auto entries = comp.get_entry_points_and_stages();
  if (!entries.empty()) {
    r.entry_point = entries[0].name;
  }
  for (uint32_t i = 0; i < 3; ++i) {
    r.workgroup_size[i] = comp.get_execution_mode_argument(spv::ExecutionModeLocalSize, i);
  }
  spirv_cross::SpecializationConstant wg[3];
  comp.get_work_group_size_specialization_constants(wg[0], wg[1], wg[2]);
  for (int i = 0; i < 3; ++i) {
    if (wg[i].id != spirv_cross::ConstantID(0)) {
      r.workgroup_spec[i] = "spec constant " + std::to_string(wg[i].constant_id);
      r.workgroup_size[i] = comp.get_constant(wg[i].id).scalar();
    }
  }
  auto resources = comp.get_shader_resources();
  auto add = [&](const char* kind, const auto& list, bool buffer) {
    for (const auto& res : list) {
      Binding b;
      b.kind = kind;
      b.set = comp.get_decoration(res.id, spv::DecorationDescriptorSet);
      b.binding = comp.get_decoration(res.id, spv::DecorationBinding);
      b.name = res.name;
      b.access = "read/write";
      if (buffer) {
        auto flags = comp.get_buffer_block_flags(res.id);
        if (flags.get(spv::DecorationNonWritable)) {
          b.access = "read";
        } else if (flags.get(spv::DecorationNonReadable)) {
          b.access = "write";
        }
      }
      r.bindings.push_back(b);
    }
  };
  add("storage_buffer", resources.storage_buffers, true);
  add("uniform_buffer", resources.uniform_buffers, false);
  add("storage_image", resources.storage_images, false);
  add("sampled_image", resources.sampled_images, false);
  std::sort(r.bindings.begin(), r.bindings.end(), [](const Binding& a, const Binding& b) {
    return std::tie(a.set, a.binding) < std::tie(b.set, b.binding);
  });
  for (const auto& pc : resources.push_constant_buffers) {
    const auto& type = comp.get_type(pc.base_type_id);
    r.push_constant_bytes = comp.get_declared_struct_size(type);
    for (uint32_t i = 0; i < type.member_types.size(); ++i) {
      r.push_constants.push_back({comp.get_member_name(pc.base_type_id, i),
                                  comp.type_struct_member_offset(type, i),
                                  comp.get_declared_struct_member_size(type, i)});
    }
  }
  for (const auto& sc : comp.get_specialization_constants()) {
    const auto& constant = comp.get_constant(sc.id);
    r.spec_constants.push_back({sc.constant_id, comp.get_name(sc.id), constant.scalar()});
  }
  return r;
}

int run_reflect(const Args& args) {
  Reflection r = reflect(load_spirv(args));
  if (args.flag("--json")) {
    std::vector<std::string> bindings, members, specs;
    for (const auto& b : r.bindings) {
      bindings.push_back(JsonObject()
                             .add("kind", b.kind)
                             .add("set", uint64_t{b.set})
                             .add("binding", uint64_t{b.binding})
                             .add("name", b.name)
                             .add("access", b.access)
                             .str());
    }
    for (const auto& m : r.push_constants) {
      members.push_back(JsonObject()
                            .add("name", m.name)
                            .add("offset", uint64_t{m.offset})
                            .add("size", m.size)
                            .str());
    }
    for (const auto& s : r.spec_constants) {
      specs.push_back(JsonObject()
                          .add("constant_id", uint64_t{s.constant_id})
                          .add("name", s.name)
                          .add("default", uint64_t{s.default_value})
                          .str());
    }
    std::vector<std::string> wg;
    for (auto v : r.workgroup_size) {
      wg.push_back(std::to_string(v));
    }
    std::cout << JsonObject()
                     .add("entry_point", r.entry_point)
                     .add_raw("workgroup_size", json_array(wg))
                     .add_raw("bindings", json_array(bindings))
                     .add("push_constant_bytes", r.push_constant_bytes)
                     .add_raw("push_constants", json_array(members))
                     .add_raw("spec_constants", json_array(specs))
                     .str()
              << "\n";
    return 0;
  }
  std::cout << "entry point:    " << r.entry_point << "\nworkgroup size: ";
  for (int i = 0; i < 3; ++i) {
    std::cout << (i ? " x " : "") << r.workgroup_size[i];
    if (!r.workgroup_spec[i].empty()) {
      std::cout << " (" << r.workgroup_spec[i] << ")";
    }
  }
  std::cout << "\n\nbindings:\n";
  std::vector<std::vector<std::string>> rows = {{"  SET", "BINDING", "KIND", "ACCESS", "NAME"}};
  for (const auto& b : r.bindings) {
    rows.push_back(
        {"  " + std::to_string(b.set), std::to_string(b.binding), b.kind, b.access, b.name});
  }
  std::cout << format_table(rows);
  std::cout << "\npush constants: " << r.push_constant_bytes << " bytes\n";
  if (!r.push_constants.empty()) {
    rows = {{"  OFFSET", "SIZE", "NAME"}};
    for (const auto& m : r.push_constants) {
      rows.push_back({"  " + std::to_string(m.offset), std::to_string(m.size), m.name});
    }
    std::cout << format_table(rows);
  }
  std::cout << "\nspecialization constants:";
  if (r.spec_constants.empty()) {
    std::cout << " none\n";
  } else {
    rows = {{"  ID", "DEFAULT", "NAME"}};
    for (const auto& s : r.spec_constants) {
      rows.push_back(
          {"  " + std::to_string(s.constant_id), std::to_string(s.default_value), s.name});
    }
    std::cout << "\n" << format_table(rows);
  }
  return 0;
}

// For a cached fused kernel, the group it computes as a comment ("" otherwise): the
// decompiled GLSL has lost the emitter's names.
std::string fused_header(const Args& args) {
  const std::string& what = args.positional()[0];
  if (what.ends_with(".spv") || what.find('/') != std::string::npos) {
    return "";
  }
  auto c = open_existing_cache(args);
  auto e = resolve_entry(c, what, args.option("--device").value_or(""));
  if (!e.key.starts_with("fused:")) {
    return "";
  }
  return codegen::fused_comment(codegen::parse_fused(codegen::KernelKey::parse(e.key)));
}

int run_glsl(const Args& args) {
  std::cout << fused_header(args);
  spirv_cross::CompilerGLSL glsl(load_spirv(args));
  auto options = glsl.get_common_options();
  options.version = 450;
  options.es = false;
  options.vulkan_semantics = true;
  glsl.set_common_options(options);
  std::cout << glsl.compile();
  return 0;
}

std::string usage(const std::string& name, const std::string& what, bool json) {
  return "usage: spvdump " + name +
         " <key|hash-prefix|file.spv> [options]\n"
         "\n" +
         what +
         "\n"
         "\n"
         "options:\n"
         "  --device D       pick among devices (hash prefix or fingerprint text)\n" +
         (json ? "  --json           one JSON object\n" : "") + kDirHelp;
}

}  // namespace

std::vector<Command> spirv_commands() {
  std::vector<Command> out;
  Command dis{"dis",
              "SPIR-V disassembly of one kernel (SPIRV-Tools)",
              usage("dis", "Disassembles a kernel's SPIR-V with friendly names.", false),
              {{}, {"--device"}, 1, 1},
              run_dis};
  Command refl{"reflect",
               "bindings, push constants, spec constants, workgroup size",
               usage("reflect",
                     "Reflects a kernel's interface with SPIRV-Cross: entry point, workgroup "
                     "size,\ndescriptor bindings, push-constant layout and specialization "
                     "constants.",
                     true),
               {{"--json"}, {"--device"}, 1, 1},
               run_reflect};
  Command gl{"glsl",
             "SPIR-V cross-compiled back to GLSL (SPIRV-Cross)",
             usage("glsl",
                   "Decompiles a kernel's SPIR-V to GLSL 450 with SPIRV-Cross (what the "
                   "compiler made\nof it; 'show' prints the GLSL it was generated from). A fused "
                   "kernel's group\ncomes first, as a comment.",
                   false),
             {{}, {"--device"}, 1, 1},
             run_glsl};
  for (Command* c : {&dis, &refl, &gl}) {
    add_common(c->spec);
    out.push_back(std::move(*c));
  }
  return out;
}

}  // namespace spvdump
