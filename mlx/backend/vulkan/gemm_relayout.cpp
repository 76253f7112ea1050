#include "mlx/backend/vulkan/gemm_relayout.h"

#include <atomic>

#include "codegen/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/matmul.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

// force_relayout_rows: -1 the environment's choice.
std::atomic<int64_t> forced_rows{-1};
std::atomic<int64_t> forced_b_rows{-1};
std::atomic<uint64_t> a_copies{0};
std::atomic<uint64_t> b_copies{0};

// The row threshold: forced, else the environment's.
int64_t threshold(const std::atomic<int64_t>& forced, int64_t from_env) {
  int64_t f = forced.load(std::memory_order_relaxed);
  return f >= 0 ? f : from_env;
}

int64_t padded_rows(int64_t m) {
  return (m + 7) / 8 * 8;
}

// Whether a copy of `elems` elements fits one binding and kRelayoutBytes.
bool copy_fits(const Device& dev, int64_t elems, const char* dtype) {
  int64_t itemsize = itemsize_of(dtype);
  return elems <= binding_elems(dev, itemsize) && elems * itemsize <= kRelayoutBytes;
}

// Records the padded transpose t (in: src, out: dst) through the launch memo.
void record_padded_transpose(CommandEncoder& enc, const char* dtype,
                             const codegen::PaddedTranspose& t, const Binding& src,
                             const Binding& dst) {
  const int64_t sig[] = {family_word("padded_transpose"),
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
                         t.rows,
                         t.cols,
                         t.col_stride,
                         t.out_ld,
                         static_cast<int64_t>(t.in_offset),
                         static_cast<int64_t>(t.out_offset)};
  const auto& planned = memoized(sig, [&] {
    auto key = codegen::padded_transpose_key(dtype, dtype, t);
    const auto& kernel = kernel_library().get(key);
    return MemoEntry{&kernel, codegen::padded_transpose_launch(key, kernel.source, t)};
  });
  const Binding bindings[] = {src, dst};
  record_launch(enc, *planned.kernel, planned.launch, bindings);
}

// Records t (its out_offset aside) from src into a new temporary of t.rows x t.out_ld
// elements, and returns the binding that reads the copy.
BoundOperand copy_transposed(const Device& dev, CommandEncoder& enc, const char* dtype,
                             codegen::PaddedTranspose t, const Binding& src) {
  int64_t elems = t.rows * t.out_ld;
  Buf copy = temporary(enc, elems, dtype);
  auto written = bind_run(dev, copy, elems, true);
  t.out_offset = written.elem_offset;
  record_padded_transpose(enc, dtype, t, src, written.binding);
  return bind_run(dev, copy, elems, false);
}

}  // namespace

bool relayout_a(const Device& dev, const codegen::MatmulGeometry& g, const char* dtype) {
  static const auto env = static_cast<int64_t>(
      env_size("MLX_VK_GEMM_RELAYOUT_ROWS", static_cast<size_t>(kRelayoutRows)));
  static const auto env_nk =
      static_cast<int64_t>(env_size("MLX_VK_GEMM_RELAYOUT_NK", static_cast<size_t>(kRelayoutNK)));
  int64_t rows = threshold(forced_rows, env);
  int64_t nk = forced_rows >= 0 ? 0 : env_nk;
  return rows > 0 && g.m >= rows && g.n >= nk && g.k >= nk && g.batches == 1 && !g.a_t &&
         g.k >= 1 && g.bits == 0 && copy_fits(dev, g.k * padded_rows(g.m), dtype) &&
         (forced_rows >= 0 || planned_gemm_tile(g, dtype).coop);
}

Binding record_a_relayout(const Device& dev, CommandEncoder& enc, const char* dtype,
                          codegen::MatmulGeometry& g, const Binding& a) {
  int64_t ld = padded_rows(g.m);
  auto read = copy_transposed(dev, enc, dtype, {g.k, g.m, g.lda, ld, g.a_offset, 0}, a);
  g.a_t = true;
  g.a_padded = true;
  g.lda = ld;
  g.a_offset = read.elem_offset;
  a_copies.fetch_add(1, std::memory_order_relaxed);
  return read.binding;
}

bool relayout_b(const Device& dev, const codegen::MatmulGeometry& g, const char* dtype) {
  static const auto env = static_cast<int64_t>(
      env_size("MLX_VK_GEMM_RELAYOUT_B_ROWS", static_cast<size_t>(kRelayoutBRows)));
  int64_t rows = threshold(forced_b_rows, env);
  return rows > 0 && g.m >= rows && g.batches == 1 && g.b_t && g.n % 8 == 0 && g.k >= 1 &&
         g.bits == 0 && copy_fits(dev, g.k * g.n, dtype) &&
         (forced_b_rows >= 0 || planned_gemm_tile(g, dtype).coop);
}

Binding record_b_relayout(const Device& dev, CommandEncoder& enc, const char* dtype,
                          codegen::MatmulGeometry& g, const Binding& b) {
  auto read = copy_transposed(dev, enc, dtype, {g.k, g.n, g.ldb, g.n, g.b_offset, 0}, b);
  g.b_t = false;
  g.ldb = g.n;
  g.b_offset = read.elem_offset;
  b_copies.fetch_add(1, std::memory_order_relaxed);
  return read.binding;
}

void force_relayout_rows(std::optional<int64_t> rows, std::optional<int64_t> b_rows) {
  forced_rows = rows ? *rows : -1;
  forced_b_rows = b_rows ? *b_rows : -1;
}

uint64_t relayout_a_count() {
  return a_copies.load();
}

uint64_t relayout_b_count() {
  return b_copies.load();
}

}  // namespace mlx::core::vulkan
