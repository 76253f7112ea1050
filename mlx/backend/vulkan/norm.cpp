// eval_gpu of RMSNorm, LayerNorm and Softmax: the "norm" family of row normalizations
// (codegen/fast.h, docs/fast.md). Row-contiguous operands are read in place; other layouts
// are copied dense first (copy_dense, whatever their span). Launches are cut so every
// operand fits one binding; a single row wider than a binding is computed from reduce and
// elementwise launches instead (norm_long.h).
#include <algorithm>
#include <cstring>

#include "codegen/fast.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/norm_long.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace codegen = vulkan::codegen;

// Rows longer than this take the reduce + elementwise path (norm_long.h) even when they fit
// a binding: one workgroup walking millions of elements leaves a GPU idle, and on lavapipe,
// which stops an invocation after 65535 loop iterations, rows of ~8M elements came back
// wrong from the row kernel's three passes (docs/scan.md has the limit).
constexpr int64_t kLongRow = int64_t{1} << 20;
using vulkan::bind_run;
using vulkan::Buf;
using vulkan::dense_run;

// One norm-family launch sequence; op is "rms", "layer" or "softmax" (inputs {x, weight},
// {x, weight, bias} or {x}). Shared with Softmax::eval_gpu below.
void eval_norm(Primitive& p, const std::string& op, float eps, const std::vector<array>& inputs,
               array& out) {
  bool layer = op == "layer";
  bool affine = op != "softmax";
  if (const char* why = vulkan::float_kernel_unsupported(out)) {
    vulkan::cpu_fallback(p, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device(p.name());
  int64_t len = out.ndim() == 0 ? 1 : out.shape(-1);
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  if (len > std::min(max_elems, kLongRow)) {
    vulkan::eval_norm_long_rows(p, op, eps, inputs, out);
    return;
  }
  int stream = p.stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  Buf x = dense_run(enc, stream, inputs[0], dtype);
  Buf w = affine ? dense_run(enc, stream, inputs[1], dtype) : x;
  Buf b = layer ? dense_run(enc, stream, inputs[2], dtype) : w;
  Buf y = vulkan::buf_of(out, dtype);
  int64_t count = static_cast<int64_t>(out.size()) / len;
  int64_t per = std::max<int64_t>(1, max_elems / len);
  static const int64_t family = vulkan::family_word("norm");
  const int64_t op_word = vulkan::family_word(op.c_str());
  for (int64_t r0 = 0; r0 < count; r0 += per) {
    codegen::NormGeometry g;
    g.count = std::min(per, count - r0);
    g.len = len;
    g.w_stride = affine && inputs[1].size() == 1 ? 0 : 1;
    g.b_stride = layer && inputs[2].size() == 1 ? 0 : 1;
    g.eps = eps;
    auto bx = bind_run(dev, x.at(r0 * len), g.count * len, false);
    auto bw = bind_run(dev, w, g.w_stride ? len : 1, false);
    auto bb = bind_run(dev, b, g.b_stride ? len : 1, false);
    auto by = bind_run(dev, y.at(r0 * len), g.count * len, true);
    g.in_offset = bx.elem_offset;
    g.w_offset = bw.elem_offset;
    g.b_offset = bb.elem_offset;
    g.out_offset = by.elem_offset;
    // Key and numbers depend on exactly these: repeated geometries (every layer of a
    // decode step) skip planning.
    uint32_t eps_bits;
    std::memcpy(&eps_bits, &g.eps, 4);
    const int64_t sig[] = {family,
                           op_word,
                           static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
                           g.count,
                           g.len,
                           static_cast<int64_t>(g.in_offset),
                           static_cast<int64_t>(g.w_offset),
                           static_cast<int64_t>(g.b_offset),
                           static_cast<int64_t>(g.out_offset),
                           g.w_stride,
                           g.b_stride,
                           eps_bits};
    const auto& planned = vulkan::memoized(sig, [&] {
      auto key = codegen::norm_key(op, dtype, g, dev.caps());
      const auto& kernel = vulkan::kernel_library().get(key);
      return vulkan::MemoEntry{&kernel, codegen::norm_launch(key, kernel.source, g)};
    });
    const auto& kernel = *planned.kernel;
    const auto& launch = planned.launch;
    vulkan::Binding bindings[4] = {bx.binding};
    size_t n = 1;
    if (affine) {
      bindings[n++] = bw.binding;
    }
    if (layer) {
      bindings[n++] = bb.binding;
    }
    bindings[n++] = by.binding;
    vulkan::record_launch(enc, kernel, launch, std::span(bindings, n));
  }
}

void RMSNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_norm(*this, "rms", eps_, inputs, out);
}

void LayerNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_norm(*this, "layer", eps_, inputs, out);
}

}  // namespace mlx::core::fast

namespace mlx::core {

// Softmax over the last axis (the op moves other axes last); `precise` changes nothing:
// the kernel always computes in f32.
void Softmax::eval_gpu(const std::vector<array>& inputs, array& out) {
  fast::eval_norm(*this, "softmax", 0.0f, inputs, out);
}

}  // namespace mlx::core
