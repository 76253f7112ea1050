// eval_gpu of Matmul: the "gemm" and "gemv" families (codegen/matmul.h, docs/matmul.md).
// Planning: each operand is read in place when one of its two matrix dims is contiguous
// (a transposed weight needs no copy), else copied dense; the batch dims of both operands
// collapse to at most two (else both are copied dense); a product with one column is
// turned around into a matrix-vector product; M <= 8 takes gemv, the rest gemm.
#include "mlx/backend/vulkan/matmul.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "codegen/matmul.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/autotune.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/gemm_relayout.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/primitives.h"

namespace mlx::core::vulkan {

namespace {

using codegen::MatmulGeometry;

constexpr int64_t kMaxGroups = 65535;

// One operand as the kernels read it: its run, and strides (elements) for every dim.
struct Operand {
  Buf buf;
  std::vector<int64_t> strides;
};

bool strides_usable(const array& x) {
  int nd = static_cast<int>(x.ndim());
  for (int d = 0; d < nd; ++d) {
    if (x.strides(d) < 0) {
      return false;
    }
  }
  auto unit = [&](int d) { return x.shape(d) == 1 || x.strides(d) == 1; };
  return unit(nd - 1) || unit(nd - 2);
}

Operand operand(CommandEncoder& enc, int stream, const array& x, const char* dtype, bool dense) {
  if (!dense && strides_usable(x)) {
    return {buf_of(x, dtype), std::vector<int64_t>(x.strides().begin(), x.strides().end())};
  }
  Buf d = dense_run(enc, stream, x, dtype);
  auto s = row_major_strides(x.shape());
  return {d, std::vector<int64_t>(s.begin(), s.end())};
}

// An operand with no elements (K = 0): nothing is read, so no buffer is needed.
Operand empty_operand(const array& x) {
  auto s = row_major_strides(x.shape());
  return {Buf{}, std::vector<int64_t>(s.begin(), s.end())};
}

// A rows x cols matrix with strides rs, cs: which dim is contiguous and the other's stride.
// Strides of size-1 dims are free, so a row (column) vector is always readable.
bool orient(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool& transposed, int64_t& ld) {
  if (cs == 1 || cols == 1) {
    transposed = false;
    ld = rows == 1 ? cols : rs;
    return true;
  }
  if (rs == 1 || rows == 1) {
    transposed = true;
    ld = cols == 1 ? rows : cs;
    return true;
  }
  return false;
}

struct BatchDims {
  int64_t count = 1;
  int64_t nb1 = 1;
  int64_t a_bs0 = 0, a_bs1 = 0, b_bs0 = 0, b_bs1 = 0;
};

// Collapses the batch dims (all but the last two) of both operands together; false when
// more than two remain.
bool collapse_batch(const Shape& shape, const Operand& a, const Operand& b, BatchDims& out) {
  struct Dim {
    int64_t size, as, bs;
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d + 2 < shape.size(); ++d) {
    if (shape[d] == 1) {
      continue;
    }
    Dim cur{shape[d], a.strides[d], b.strides[d]};
    if (!dims.empty()) {
      Dim& prev = dims.back();
      if (prev.as == cur.as * cur.size && prev.bs == cur.bs * cur.size) {
        prev = {prev.size * cur.size, cur.as, cur.bs};
        continue;
      }
    }
    dims.push_back(cur);
  }
  if (dims.size() > 2) {
    return false;
  }
  out = {};
  for (const auto& d : dims) {
    out.count *= d.size;
  }
  if (dims.size() >= 1) {
    const Dim& last = dims.back();
    out.nb1 = last.size;
    out.a_bs1 = last.as;
    out.b_bs1 = last.bs;
  }
  if (dims.size() == 2) {
    out.a_bs0 = dims[0].as;
    out.b_bs0 = dims[0].bs;
  }
  return true;
}

}  // namespace

int64_t operand_span(int64_t rows, int64_t cols, bool transposed, int64_t ld, int64_t outer,
                     int64_t nb1, int64_t bs0, int64_t bs1) {
  int64_t last = transposed ? (cols - 1) * ld + (rows - 1) : (rows - 1) * ld + (cols - 1);
  return last + (outer - 1) * bs0 + (nb1 - 1) * bs1 + 1;
}

namespace {

std::string& forced_gemm_tile() {
  static std::string forced = env_string("MLX_VK_GEMM_TILE");
  return forced;
}

// Counts set_forced_gemm_tile's calls; part of every signature, so that memoized plans
// made under another forced tile are not reused.
std::atomic<int64_t> forced_generation{0};

}  // namespace

void set_forced_gemm_tile(const std::string& name) {
  if (!name.empty()) {
    codegen::parse_gemm_tile(name);  // throws on a malformed name
  }
  forced_gemm_tile() = name;
  forced_generation.fetch_add(1);
}

codegen::GemmTile planned_gemm_tile(const codegen::MatmulGeometry& g, const char* dtype,
                                    bool tune) {
  const auto& caps = device("matmul").caps();
  const std::string& forced = forced_gemm_tile();
  if (!forced.empty()) {
    auto f = codegen::parse_gemm_tile(forced);
    if (codegen::gemm_tile_usable(f, g, caps, dtype)) {
      return f;
    }
  }
  auto tile = codegen::gemm_tile(g, caps, dtype);
  if (tune && autotune_enabled()) {
    return autotuned_gemm_tile(g, dtype, tile);
  }
  return tile;
}

MatmulSignature matmul_signature(const char* family, const char* dtype, const MatmulGeometry& g) {
  float numbers[2] = {g.alpha, g.beta};
  int64_t bits = 0;
  std::memcpy(&bits, numbers, 8);
  return {family_word(family),
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
          g.m,
          g.n,
          g.k,
          g.batches,
          static_cast<int64_t>(g.a_offset),
          static_cast<int64_t>(g.b_offset),
          static_cast<int64_t>(g.out_offset),
          g.lda,
          g.ldb,
          (g.a_t ? 1 : 0) | (g.b_t ? 2 : 0) | (g.addmm ? 4 : 0) | (g.glu ? 8 : 0) |
              (g.prefetch ? 16 : 0) | (g.a_padded ? 32 : 0) |
              (forced_generation.load(std::memory_order_relaxed) << 8),
          g.nb1,
          g.a_bs0,
          g.a_bs1,
          g.b_bs0,
          g.b_bs1,
          bits,
          g.bits | (int64_t{g.group_size} << 8),
          static_cast<int64_t>(g.scales_offset),
          static_cast<int64_t>(g.biases_offset),
          g.prenorm ? static_cast<int64_t>(g.norm_w_offset) : -1,
          g.prenorm ? static_cast<int64_t>(std::bit_cast<uint32_t>(g.eps)) : 0,
          g.residual ? static_cast<int64_t>(g.residual_offset) : -1};
}

const char* matmul_unsupported(const array& a, const array& b, const array& out) {
  if (const char* why = float_kernel_unsupported(out)) {
    return why;
  }
  auto& dev = device("Matmul");
  int64_t max_elems = binding_elems(dev, static_cast<int64_t>(out.itemsize()));
  auto fits = [&](const array& x) {
    // In place (its span) or copied dense (its size): either must fit one binding.
    int64_t hi = 0;
    for (size_t d = 0; d < x.ndim(); ++d) {
      hi += (int64_t{x.shape(static_cast<int>(d))} - 1) * std::abs(x.strides(static_cast<int>(d)));
    }
    return hi + 1 <= max_elems && static_cast<int64_t>(x.size()) <= max_elems;
  };
  if (!fits(a) || !fits(b) || static_cast<int64_t>(out.size()) > max_elems) {
    return "an operand wider than one storage binding";
  }
  int64_t m = out.shape(-2), n = out.shape(-1);
  int64_t batches = m * n == 0 ? 0 : static_cast<int64_t>(out.size()) / (m * n);
  if (batches > kMaxGroups || (m + 31) / 32 > kMaxGroups || (n + 31) / 32 > kMaxGroups) {
    return "a grid past the dispatch limits";
  }
  return nullptr;
}

void record_gemm(const Device& dev, CommandEncoder& enc, const char* dtype, const MatmulGeometry& g,
                 std::span<const Binding, 3> bindings) {
  const auto& planned = memoized(matmul_signature("gemm", dtype, g), [&] {
    auto tile = planned_gemm_tile(g, dtype, true);
    auto key = codegen::gemm_key(dtype, g, tile);
    const Kernel* kernel = get_kernel_or_drop_coop(key, tile.coop);
    if (kernel == nullptr) {
      key = codegen::gemm_key(dtype, g, codegen::gemm_tile(g, dev.caps(), dtype));
      kernel = &kernel_library().get(key);
    }
    return MemoEntry{kernel, codegen::gemm_launch(key, kernel->source, g)};
  });
  record_launch(enc, *planned.kernel, planned.launch, bindings);
}

void matmul_gpu(int stream, const array& a_in, const array& b_in, array& out, bool addmm,
                float alpha, float beta) {
  auto& dev = device("Matmul");
  auto& enc = encoder(stream);
  const char* dtype = gpu_dtype_name(out.dtype());
  int nd = static_cast<int>(out.ndim());
  int64_t M = out.shape(-2), N = out.shape(-1), K = a_in.shape(-1);
  if (out.size() == 0) {
    return;
  }
  Buf y = buf_of(out, dtype);
  if (K == 0 && !addmm) {
    // An empty sum: zeros, without reading the (empty) operands.
    auto bo = bind_run(dev, y, static_cast<int64_t>(out.size()), true);
    bo.binding.range = (static_cast<VkDeviceSize>(out.nbytes()) + 3) / 4 * 4;
    enc.fill(bo.binding, 0);
    return;
  }

  MatmulGeometry g;
  g.m = M;
  g.n = N;
  g.k = K;
  g.addmm = addmm;
  g.alpha = alpha;
  g.beta = addmm ? beta : 0.0f;
  BatchDims batch;
  Operand a = K == 0 ? empty_operand(a_in) : operand(enc, stream, a_in, dtype, false);
  Operand b = K == 0 ? empty_operand(b_in) : operand(enc, stream, b_in, dtype, false);
  if (!collapse_batch(out.shape(), a, b, batch)) {
    a = operand(enc, stream, a_in, dtype, true);
    b = operand(enc, stream, b_in, dtype, true);
    collapse_batch(out.shape(), a, b, batch);
  }
  orient(M, K, a.strides[nd - 2], a.strides[nd - 1], g.a_t, g.lda);
  orient(K, N, b.strides[nd - 2], b.strides[nd - 1], g.b_t, g.ldb);
  g.batches = batch.count;
  g.nb1 = batch.nb1;
  int64_t outer = batch.count / batch.nb1;
  int64_t a_elems = operand_span(M, K, g.a_t, g.lda, outer, batch.nb1, batch.a_bs0, batch.a_bs1);
  int64_t b_elems = operand_span(K, N, g.b_t, g.ldb, outer, batch.nb1, batch.b_bs0, batch.b_bs1);
  auto by = bind_run(dev, y, static_cast<int64_t>(out.size()), true);
  // K = 0 (addmm: out = beta * C): the kernel reads no element of A or B, whose buffers
  // may not exist; any valid binding stands in.
  auto ba = K == 0 ? by : bind_run(dev, a.buf, a_elems, false);
  auto bb = K == 0 ? by : bind_run(dev, b.buf, b_elems, false);
  g.a_offset = ba.elem_offset;
  g.b_offset = bb.elem_offset;
  g.out_offset = by.elem_offset;
  g.a_bs0 = batch.a_bs0;
  g.a_bs1 = batch.a_bs1;
  g.b_bs0 = batch.b_bs0;
  g.b_bs1 = batch.b_bs1;
  std::array<Binding, 3> bindings{ba.binding, bb.binding, by.binding};

  // One column: out^T = B^T x A^T has the same memory, and is a matrix-vector product
  // when B's column is contiguous.
  if (N == 1 && M > 8 && !addmm && (g.b_t || g.ldb == 1 || K == 1)) {
    MatmulGeometry t = g;
    t.m = 1;
    t.n = M;
    t.a_t = false;
    t.lda = K;
    t.a_offset = g.b_offset;
    t.b_offset = g.a_offset;
    t.b_t = !g.a_t;
    t.ldb = g.lda;
    t.a_bs0 = g.b_bs0;
    t.a_bs1 = g.b_bs1;
    t.b_bs0 = g.a_bs0;
    t.b_bs1 = g.a_bs1;
    g = t;
    std::swap(bindings[0], bindings[1]);
  }

  if (!codegen::gemv_applies(g)) {
    // Many rows: the operands copied into the layout the coop GEMM reads fastest.
    if (K > 0 && relayout_b(dev, g, dtype)) {
      bindings[1] = record_b_relayout(dev, enc, dtype, g, bindings[1]);
    }
    if (K > 0 && relayout_a(dev, g, dtype)) {
      bindings[0] = record_a_relayout(dev, enc, dtype, g, bindings[0]);
    }
    record_gemm(dev, enc, dtype, g, bindings);
    return;
  }

  int64_t splits = codegen::gemv_splits(g, dtype);
  MatmulGeometry main = g;
  BoundOperand partial;
  if (splits > 1) {
    Buf scratch = temporary(enc, g.batches * splits * g.m * g.n, "f32");
    partial = bind_run(dev, scratch, g.batches * splits * g.m * g.n, true);
    main.out_offset = partial.elem_offset;
    bindings[2] = partial.binding;
  }
  const auto& planned = memoized(matmul_signature("gemv", dtype, main), [&] {
    auto key = codegen::gemv_key(dtype, main, dev.caps());
    const auto& kernel = kernel_library().get(key);
    return MemoEntry{&kernel, codegen::gemv_launch(key, kernel.source, main)};
  });
  record_launch(enc, *planned.kernel, planned.launch, bindings);
  if (splits > 1) {
    MatmulGeometry fg = g;
    fg.a_offset = partial.elem_offset;
    const auto& finish = memoized(matmul_signature("gemv_finish", dtype, fg), [&] {
      auto key = codegen::gemv_finish_key(dtype, fg);
      const auto& kernel = kernel_library().get(key);
      return MemoEntry{&kernel, codegen::gemv_launch(key, kernel.source, fg)};
    });
    const Binding finish_bindings[] = {partial.binding, by.binding};
    record_launch(enc, *finish.kernel, finish.launch, finish_bindings);
  }
}

}  // namespace mlx::core::vulkan

namespace mlx::core {

void Matmul::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (const char* why = vulkan::matmul_unsupported(inputs[0], inputs[1], out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  vulkan::matmul_gpu(stream().index, inputs[0], inputs[1], out, false, 1.0f, 0.0f);
}

}  // namespace mlx::core
