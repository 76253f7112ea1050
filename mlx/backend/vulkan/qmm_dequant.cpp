#include "mlx/backend/vulkan/qmm_dequant.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/gemm_relayout.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/matmul.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

std::atomic<int> forced{-1};  // force_qmm_dequant: -1 the environment's choice, 0 off, 1 on
std::atomic<uint64_t> taken{0};
std::atomic<uint64_t> transposed{0};
std::atomic<int> forced_transpose{-1};  // as `forced`, for dequantize_transposed

// Whether a product's weights (rows of k values: transpose) are dequantized into their
// transpose, k rows of n, which the GEMM reads faster (docs/matmul.md, "Weights dequantized
// into their transpose"). MLX_VK_QMM_DEQUANT_TRANSPOSE=0 keeps their layout.
bool dequantize_transposed(const codegen::MatmulGeometry& g) {
  static const bool env_on = env_string("MLX_VK_QMM_DEQUANT_TRANSPOSE", "1") != "0";
  int f = forced_transpose.load(std::memory_order_relaxed);
  return (f >= 0 ? f == 1 : env_on) && g.b_t && g.n % 8 == 0;
}

// The GEMM's geometry: x times the dequantized weights (rows of k values when they keep a
// transposed layout, else k rows of n: `transposed` says whether they were dequantized into
// their transpose), at element 0 of their scratch.
codegen::MatmulGeometry gemm_geometry(const codegen::MatmulGeometry& g, bool transposed) {
  codegen::MatmulGeometry d;
  d.m = g.m;
  d.n = g.n;
  d.k = g.k;
  d.lda = g.lda;
  d.a_offset = g.a_offset;
  d.b_t = g.b_t && !transposed;
  d.ldb = d.b_t ? g.k : g.n;
  d.out_offset = g.out_offset;
  return d;
}

// The stream's scratch for dequantized weights, of at least `bytes`: one buffer a stream
// that only grows (the stream's launches are ordered, and the encoder puts a barrier between
// a launch that reads it and the next that writes it). A smaller one it replaces stays alive
// until the batches that use it complete.
Allocation* scratch(CommandEncoder& enc, size_t bytes) {
  static std::mutex mtx;
  static std::map<int, allocator::Buffer> buffers;
  std::lock_guard lk(mtx);
  auto it = buffers.find(enc.index());
  if (it != buffers.end() && allocation(it->second)->size >= bytes) {
    return allocation(it->second);
  }
  if (it != buffers.end()) {
    enc.add_temporary(it->second);
    buffers.erase(it);
  }
  it = buffers.emplace(enc.index(), allocator::malloc(bytes)).first;
  return allocation(it->second);
}

}  // namespace

void record_quant(CommandEncoder& enc, const char* op, const char* dtype,
                  const codegen::QuantGeometry& g, std::span<const Binding> bindings) {
  const int64_t sig[] = {family_word("quant"),
                         family_word(op),
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
                         g.rows,
                         g.k,
                         g.bits | (int64_t{g.group_size} << 8),
                         static_cast<int64_t>(g.w_offset),
                         static_cast<int64_t>(g.scales_offset),
                         static_cast<int64_t>(g.biases_offset),
                         static_cast<int64_t>(g.out_offset),
                         g.ids.empty() ? 0 : family_word(g.ids.c_str()),
                         g.src_rows,
                         static_cast<int64_t>(g.ids_offset),
                         (g.round_once ? 1 : 0) | (g.transpose_out ? 2 : 0)};
  const auto& planned = memoized(sig, [&] {
    auto key = codegen::quant_key(op, dtype, g);
    const auto& kernel = kernel_library().get(key);
    return MemoEntry{&kernel, codegen::quant_launch(key, kernel.source, g)};
  });
  record_launch(enc, *planned.kernel, planned.launch, bindings);
}

void force_qmm_dequant(std::optional<bool> on, std::optional<bool> transpose) {
  forced = on ? int(*on) : -1;
  forced_transpose = transpose ? int(*transpose) : -1;
}

uint64_t qmm_dequant_count() {
  return taken.load();
}

uint64_t qmm_dequant_transposed_count() {
  return transposed.load();
}

bool qmm_dequantizes(const Device& dev, const char* dtype, const codegen::MatmulGeometry& g) {
  // Decode-sized products (every step of a decode) leave at the first test.
  if (g.m <= 8 || g.bits == 0 || g.batches != 1 || g.prenorm || g.residual || g.glu || g.k == 0) {
    return false;
  }
  // MLX_VK_QMM_DEQUANT: -1 auto, 0 off, 1 on; force_qmm_dequant overrides it.
  static const int env_mode = [] {
    std::string m = env_string("MLX_VK_QMM_DEQUANT", "auto");
    return m == "on" ? 1 : m == "off" ? 0 : -1;
  }();
  static const int64_t rows = static_cast<int64_t>(
      env_size("MLX_VK_QMM_DEQUANT_ROWS", static_cast<size_t>(kQmmDequantRows)));
  int f = forced.load(std::memory_order_relaxed);
  int mode = f >= 0 ? f : env_mode;
  if (mode == 0) {
    return false;
  }
  int64_t itemsize = itemsize_of(dtype);
  int64_t elems = g.n * g.k;
  if (elems > binding_elems(dev, itemsize) || elems * itemsize > kQmmDequantBytes) {
    return false;
  }
  return mode == 1 ||
         (g.m >= rows && planned_gemm_tile(gemm_geometry(g, dequantize_transposed(g)), dtype).coop);
}

void record_qmm_dequantized(const Device& dev, CommandEncoder& enc, const char* dtype,
                            const codegen::MatmulGeometry& g, const Binding& x, const Binding& w,
                            const Binding& scales, const Binding& biases, const Binding& out) {
  int64_t itemsize = itemsize_of(dtype);
  int64_t elems = g.n * g.k;
  Buf buf{scratch(enc, static_cast<size_t>(elems * itemsize)), 0, dtype, itemsize};
  codegen::QuantGeometry q;
  q.k = g.b_t ? g.k : g.n;
  q.rows = elems / q.k;
  q.bits = g.bits;
  q.group_size = g.group_size;
  q.w_offset = g.b_offset;
  q.scales_offset = g.scales_offset;
  q.biases_offset = g.biases_offset;
  q.round_once = true;  // the qmm tiles' weights: results do not move with the row count
  auto written = bind_run(dev, buf, elems, true);
  q.out_offset = written.elem_offset;
  // A scratch binding that starts off a chunk keeps the weights' layout.
  q.transpose_out = dequantize_transposed(g) && q.out_offset % 8 == 0;
  codegen::MatmulGeometry d = gemm_geometry(g, q.transpose_out);
  if (q.transpose_out) {
    transposed.fetch_add(1, std::memory_order_relaxed);
  }
  const Binding quant_bindings[] = {w, scales, biases, written.binding};
  record_quant(enc, "dequantize", dtype, q, quant_bindings);

  auto read = bind_run(dev, buf, elems, false);
  d.b_offset = read.elem_offset;
  // x too into the layout the GEMM reads fastest, for many rows.
  Binding a = relayout_a(dev, d, dtype) ? record_a_relayout(dev, enc, dtype, d, x) : x;
  const std::array<Binding, 3> gemm_bindings{a, read.binding, out};
  record_gemm(dev, enc, dtype, d, gemm_bindings);
  taken.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace mlx::core::vulkan
