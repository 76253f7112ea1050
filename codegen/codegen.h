// The kernel generator's public interface. codegen knows nothing about arrays or Vulkan
// objects: it turns a KernelKey plus device capabilities into GLSL, then SPIR-V.
// The Vulkan backend (mlx/backend/vulkan) builds keys, calls these, and makes pipelines.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlx::core::vulkan::codegen {

// What the device can do; part of every kernel's identity (the "capability path").
struct DeviceCaps {
  uint32_t subgroup_size = 32;
  // Subgroup basic + shuffle operations in compute shaders (the row kernels' trees).
  bool subgroup_shuffle = false;
  bool shader_float16 = false;  // arithmetic in f16
  bool shader_int8 = false;
  bool shader_int16 = false;
  bool shader_int64 = false;
  bool storage_8bit = false;   // 8-bit types in storage buffers
  bool storage_16bit = false;  // 16-bit types in storage buffers
  bool bfloat16 = false;       // VK_KHR_shader_bfloat16
  // Four-way 8-bit dot products (shaderIntegerDotProduct, Vulkan 1.3): qmv's X8 path.
  bool integer_dot_product = false;
  // f16 <-> f32 through GLSL's unpackHalf2x16/packHalf2x16 (one instruction each) instead of
  // the exact bit-manipulating routines (~10-20 instructions): only on drivers whose
  // conversions were verified exact (round to nearest even, subnormals kept) by
  // tests/gpu_diff ("f16 conversions are exact at every rounding boundary").
  bool f16_hw_convert = false;
  // fma() is one rounding, so f32 division may correct its quotient with fused multiply-adds
  // (include/div.glsl, m_div_fma) instead of integer arithmetic: only on drivers verified
  // by tests/gpu_diff ("f32 division on the GPU is correctly rounded"). Vulkan lets fma be
  // a multiply and an add; lavapipe's is.
  bool fma_fused = false;
  // Cooperative matrices with a 16x16x16 subgroup multiply into f32: VK_NV_cooperative_matrix
  // with f16 A/B (templates/gemm_coop.glsl as compiled), VK_KHR_cooperative_matrix with f16
  // A/B, and the KHR extension with bf16 A/B (VK_KHR_shader_bfloat16). The KHR kernels are
  // the NV module rewritten (codegen/coop_rewrite.h).
  bool cooperative_matrix = false;
  bool cooperative_matrix_khr = false;
  bool cooperative_matrix_bf16 = false;
  // A 16x16 f32 accumulator's elements sit in a 32-lane subgroup as NVIDIA's driver lays
  // them out (element i of lane t: row t / 4 + 8 (i / 4), column 2 (t % 4) + i % 2 +
  // 8 ((i / 2) % 2); read back on an H100), so the prefill attention's softmax runs on them
  // in registers (COOP_REG_SOFTMAX, templates/include/sdpa_coop.glsl). Set by the runtime for
  // NVIDIA's driver, verified by tests/gpu_diff's attention tests on an H100 (the kernel also
  // checks it and yields NaN if it is wrong).
  bool coop_acc_nv_layout = false;
  // The f16 cooperative path (KHR where enabled, else NV) also multiplies 16x8x16 into f32
  // per subgroup: qmvc's transposed fragments (templates/qmv_coop.glsl, FRAG_N8).
  bool coop_f16_n8 = false;
  // The same for bf16 A/B on VK_KHR_cooperative_matrix.
  bool coop_bf16_n8 = false;
  uint32_t max_workgroup_invocations = 128;
  uint32_t max_shared_memory = 16384;
  // Multiprocessors / compute units where the driver reports them (VK_NV_shader_sm_builtins,
  // VK_AMD_shader_core_properties), else 0: the GEMM's tile rule counts waves of workgroups
  // with it (codegen/matmul.cpp, gemm_tile).
  uint32_t compute_units = 0;
  // Vector steps per invocation of a fused kernel (templates/fused.glsl's EPT): the
  // runtime's per-device tuning (mlx/backend/vulkan/device_tuning.h); MLX_VK_FUSED_EPT
  // overrides it.
  uint32_t fused_vector_steps = 1;
  // vendor:device:driver_version:pipelineCacheUUID:driver name/info, set by the runtime.
  std::string fingerprint;
};

// A kernel's identity: family plus ordered parameters. Buffer identity and shapes that only
// change push-constant values are never part of a key.
struct KernelKey {
  std::string family;                         // "unary", "binary", "copy", ...
  std::map<std::string, std::string> params;  // e.g. {"op","Add"},{"in","f16"},{"layout","vv"}

  // "family:k1=v1,k2=v2" (params sorted by name). parse() is its inverse and throws
  // std::invalid_argument on malformed text.
  std::string canonical() const;
  static KernelKey parse(const std::string& text);
  bool operator==(const KernelKey&) const = default;
};

// A rendered kernel: the full GLSL (template with #defines injected after #version) and
// what the runtime needs to build a pipeline for it.
struct KernelSource {
  std::string template_name;         // "unary.glsl"
  std::string glsl;                  // complete source, ready for glslang
  std::vector<std::string> defines;  // the injected "NAME VALUE" lines, for inspection
  uint64_t template_hash = 0;        // xxHash64 of the template text (and its includes)
  uint32_t num_buffers = 0;          // storage buffers at bindings 0..num_buffers-1, set 0
  uint32_t push_constant_bytes = 0;  // size of the push-constant block
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};
  // Specialization constants (constant_id -> value), e.g. workgroup size.
  std::map<uint32_t, uint32_t> spec_constants;
  // After compilation, rewrite SPV_NV_cooperative_matrix into the KHR extension (with bf16
  // A/B fragments when coop_khr_bf16): codegen/coop_rewrite.h.
  bool coop_khr = false;
  bool coop_khr_bf16 = false;
};

// The numbers of one dispatch of a rendered kernel. Every family's launch planner returns
// one; the runtime pushes the constants, uploads `meta` and dispatches `groups`.
struct Launch {
  std::vector<uint8_t> push_constants;  // exactly source.push_constant_bytes long
  // Extra read-only data (e.g. shapes/strides of an N-d path); when non-empty the runtime
  // uploads it and binds it as the LAST storage buffer (binding num_buffers - 1).
  std::vector<uint8_t> meta;
  std::array<uint32_t, 3> groups{1, 1, 1};  // vkCmdDispatch group counts
};

// One row per kernel family: how its keys render and at which SPIRV-Tools level they
// compile. A new family is a template, a key + render in codegen, and one row of this
// table (codegen/families.cpp).
struct Family {
  std::string name;  // the key's family ("unary", "transpose", ...)
  KernelSource (*render)(const KernelKey& key, const DeviceCaps& caps);
  int optimizer_level;  // 0: none, 1: size/cleanup passes, 2: performance passes
};
const std::vector<Family>& families();
// The row of `name`; throws std::invalid_argument listing the known families.
const Family& family(const std::string& name);

// Renders a key into GLSL (its family's row). Throws std::invalid_argument naming the key for an
// unknown family or a bad parameter, and std::runtime_error when the device cannot run the kernel.
KernelSource render(const KernelKey& key, const DeviceCaps& caps);

struct SpirvModule {
  std::vector<uint32_t> words;
  double glslang_ms = 0;    // GLSL -> SPIR-V
  double optimize_ms = 0;   // SPIRV-Tools passes (0 when not run)
  int optimizer_level = 0;  // 0: none, 1: size/cleanup passes, 2: performance passes
};

// Compiles with the glslang library in-process (thread-safe; the process is initialized
// once). Throws std::runtime_error with the key, the error and the failing GLSL line.
SpirvModule compile(const KernelKey& key, const KernelSource& source);
// The same at an explicit optimizer level (0, 1 or 2), for measurements and tools.
SpirvModule compile(const KernelKey& key, const KernelSource& source, int optimizer_level);

// The optimizer level used for a family: its row of families() (chosen from measurements,
// see docs/codegen.md).
int optimizer_level_for(const std::string& family);

// The kernel's cache identity: xxHash64 over the canonical key, the template hash, the
// defines, the compiler versions, the optimizer level and the device fingerprint.
uint64_t kernel_hash(const KernelKey& key, const KernelSource& source, const DeviceCaps& caps,
                     int optimizer_level);

// Compiler versions (glslang, SPIRV-Tools) folded into every hash.
std::string compiler_version();

// Where templates come from: embedded at build time, or MLX_VK_TEMPLATE_DIR when set (a
// file found there wins; templates missing from that directory stay the embedded ones).
// Throws std::invalid_argument for an unknown name.
std::string template_text(const std::string& name);

// Names of the embedded templates ("binary.glsl", "include/math.glsl", ...).
std::vector<std::string> template_names();

// The generic half of render(): loads a template, expands its #includes (each file once,
// marked with #line so errors name the original file and line) and injects
// "#define <d>" for each "NAME VALUE" in `defines` right after #version. Fills
// template_name, glsl, defines and template_hash; the rest is left for the family.
KernelSource render_template(const std::string& template_name,
                             const std::vector<std::string>& defines);

// Validates SPIR-V for Vulkan 1.2: "" when valid, else the validator's message.
std::string validate_spirv(const std::vector<uint32_t>& words);

// Human-readable SPIR-V (for spvdump and error reports).
std::string disassemble(const std::vector<uint32_t>& words);

// Bytes of the module's Workgroup-storage (shared) variables: arrays, vectors, scalars
// and structs of them (packed), array lengths from constants or from specialization
// constants (`spec_values`: constant_id -> value, else the module's defaults) through
// integer arithmetic. A length it cannot evaluate counts 0, so the result is a lower
// bound. The runtime compares it with the device's limit.
uint32_t workgroup_memory_bytes(const std::vector<uint32_t>& words,
                                const std::map<uint32_t, uint32_t>& spec_values = {});

}  // namespace mlx::core::vulkan::codegen
