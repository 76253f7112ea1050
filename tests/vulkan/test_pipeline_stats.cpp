// Compiler statistics (pipeline_stats.h): with capture on, a freshly built kernel reports
// what the driver made of it, where the device has VK_KHR_pipeline_executable_properties.
// The kernels are built through the library from keys no other test uses (binary
// Subtract, Maximum, Minimum and Remainder on u16, decode attention, single-row quantized
// products), so each build here is the kernel's first in the process.
#include "vk_test.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "codegen/attention.h"
#include "codegen/elementwise.h"
#include "codegen/matmul.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/pipeline_stats.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
using namespace vk_test;

namespace {

vk::codegen::KernelKey u16_binary_key(const std::string& op) {
  vk::codegen::ElementwiseGeometry g;
  g.shape = {37};
  g.in_strides = {{1}, {1}};
  g.in_offsets = {0, 0};
  return vk::codegen::elementwise_key("binary", op, {"u16", "u16"}, "u16", g);
}

// Builds the key's pipeline and returns its statistics, or nothing when the library had
// it already (built earlier in the process, its statistics not captured).
std::optional<std::vector<vk::PipelineStat>> build_fresh(const vk::codegen::KernelKey& key) {
  auto& lib = vk::kernel_library();
  size_t builds = lib.builds();
  const auto& k = lib.get(key);
  INFO("kernel " << key.canonical());
  REQUIRE(k.pipeline != VK_NULL_HANDLE);
  if (lib.builds() == builds) {
    return std::nullopt;
  }
  return vk::pipeline_stats(key.canonical());
}

// The same for a key that must be new to this process.
std::vector<vk::PipelineStat> build_and_read(const vk::codegen::KernelKey& key) {
  auto stats = build_fresh(key);
  INFO("kernel " << key.canonical());
  REQUIRE(stats.has_value());
  return *stats;
}

// The driver's local (scratch) memory statistic of a kernel: NVIDIA's "Local Memory Size"
// (2^36 for a kernel that keeps everything in registers), "Scratch" on RADV and ANV.
// Empty when the driver reports none.
std::string local_memory(const std::vector<vk::PipelineStat>& stats) {
  for (const auto& s : stats) {
    std::string n = s.name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
    if (n.find("local memory") != std::string::npos || n.find("scratch") != std::string::npos) {
      return s.value;
    }
  }
  return {};
}

// Capture on for a test's builds, back as it was after.
struct CaptureOn {
  bool was = vk::pipeline_stats_enabled();
  CaptureOn() {
    vk::set_pipeline_stats(true);
  }
  ~CaptureOn() {
    vk::set_pipeline_stats(was);
  }
};

// The local memory a plain kernel reports (binary `op` on u16, a key only the calling test
// uses), against which kernels with register arrays are checked; empty, with a message,
// where the device reports no such statistic (nothing to check there). Capture must be on.
std::string local_memory_baseline(const std::string& op) {
  if (!vk::device().has_pipeline_executable_info()) {
    MESSAGE(vk::device().name() << " reports no compiler statistics; nothing to check.");
    return {};
  }
  std::string base = local_memory(build_and_read(u16_binary_key(op)));
  if (base.empty()) {
    MESSAGE(vk::device().name() << " reports no local memory statistic; nothing to check.");
  }
  return base;
}

// The float dtypes the device's kernels take.
std::vector<std::string> float_dtypes() {
  std::vector<std::string> dtypes{"f32"};
  if (vk::device().caps().storage_16bit) {
    dtypes.insert(dtypes.end(), {"f16", "bf16"});
  }
  return dtypes;
}

// The local memory the key's kernel reports (capture on), or nothing, with a message, when
// another test built it first.
std::optional<std::string> captured_local_memory(const vk::codegen::KernelKey& key) {
  auto stats = build_fresh(key);
  if (!stats) {
    MESSAGE("already built without capture in this process: " << key.canonical());
    return std::nullopt;
  }
  return local_memory(*stats);
}

}  // namespace

// Decode attention's vector kernels hold q, K, V and the accumulators in arrays that must
// stay in registers: a compiler that leaves a loop over them rolled puts all of them in
// local memory, which made these kernels 2x slower on an H200 (docs/attention.md,
// "Transposed team sums and unrolled loops"). Checked against a plain binary kernel's value,
// on devices that report the statistic.
TEST_CASE("decode attention kernels keep their arrays out of local memory") {
  VK_REQUIRE_DEVICE();
  CaptureOn capture;
  std::string base = local_memory_baseline("Minimum");
  if (base.empty()) {
    return;
  }
  const auto& caps = vk::device().caps();
  int checked = 0;
  for (const auto& dt : float_dtypes()) {
    for (int64_t groups : {1, 2, 4, 8}) {
      vk::codegen::AttentionGeometry g;
      g.hkv = 8, g.groups = groups, g.lq = 1, g.lkv = 4096, g.d = g.dv = 128;
      g.q_si = 128, g.q_sh = 128, g.q_sb = 8 * groups * 128;
      g.k_sj = g.v_sj = 128, g.k_sh = g.v_sh = 4096 * 128, g.k_sb = g.v_sb = 8 * 4096 * 128;
      vk::codegen::AttentionStep st;
      st.cap = 4096;
      st.q_norm = st.k_norm = true;
      std::vector<vk::codegen::KernelKey> keys{vk::codegen::attention_key(dt, g, caps)};
      if (vk::codegen::attention_step_supported(g, st, caps)) {
        keys.push_back(vk::codegen::attention_step_key(dt, g, st, caps));
      }
      for (const auto& key : keys) {
        INFO("kernel " << key.canonical());
        if (auto local = captured_local_memory(key)) {
          CHECK(*local == base);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 0);
}

// The same for the single-row quantized products (templates/qmv.glsl) of an 8B-class decode
// step: with the loops over x's 32 values and the pack's positions left rolled, NVIDIA's
// compiler put 240 bytes of a bf16 [1,4096] x [4096,4096]^T product with a residual in
// local memory, and that product took 87 us instead of 10.5 in Qwen3-8B's decode on an
// H200 (docs/matmul.md, "qmv's f32 sums with their loops unrolled").
TEST_CASE("quantized single-row product kernels keep their arrays out of local memory") {
  VK_REQUIRE_DEVICE();
  CaptureOn capture;
  std::string base = local_memory_baseline("Remainder");
  if (base.empty()) {
    return;
  }
  const auto& caps = vk::device().caps();
  int checked = 0;
  // (K, N): q/o-sized, an lm_head and a down projection; each plain, with a residual and
  // with an absorbed rms_norm.
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 4096}, {4096, 151936}, {12288, 4096}};
  for (const auto& dt : float_dtypes()) {
    for (auto [k, n] : shapes) {
      for (int fused = 0; fused < 3; ++fused) {
        vk::codegen::MatmulGeometry g;
        g.m = 1, g.n = n, g.k = k, g.lda = k;
        g.b_t = true, g.ldb = k / 8, g.bits = 4, g.group_size = 64;
        g.residual = fused == 1;
        g.prenorm = fused == 2;
        auto key = vk::codegen::qmv_key(dt, g, caps);
        INFO("kernel " << key.canonical());
        if (auto local = captured_local_memory(key)) {
          CHECK(*local == base);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("a kernel built with capture on reports the driver's compiler statistics") {
  VK_REQUIRE_DEVICE();
  bool was = vk::pipeline_stats_enabled();
  vk::set_pipeline_stats(true);
  auto key = u16_binary_key("Subtract");
  auto stats = build_and_read(key);
  vk::set_pipeline_stats(was);
  if (!vk::device().has_pipeline_executable_info()) {
    MESSAGE(vk::device().name() << " lacks VK_KHR_pipeline_executable_properties; "
                                   "no statistics to check.");
    CHECK(stats.empty());
    return;
  }
  INFO("kernel " << key.canonical() << ", " << stats.size() << " statistics");
  CHECK(!stats.empty());
  for (const auto& s : stats) {
    INFO("statistic '" << s.name << "' = '" << s.value << "'");
    CHECK(!s.name.empty());
    CHECK(!s.value.empty());
  }
}

TEST_CASE("a kernel built with capture off reports no statistics") {
  VK_REQUIRE_DEVICE();
  bool was = vk::pipeline_stats_enabled();
  vk::set_pipeline_stats(false);
  auto stats = build_and_read(u16_binary_key("Maximum"));
  vk::set_pipeline_stats(was);
  CHECK(stats.empty());
  CHECK(vk::pipeline_stats("binary:no=such,kernel=key").empty());
}
