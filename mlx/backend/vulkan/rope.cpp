// eval_gpu of RoPE: the "rope" family (codegen/fast.h, docs/fast.md). x is read in place
// when row-contiguous, else copied dense (copy_dense, whatever its span); launches are cut so
// each fits one binding, and each carries its first row so positions and batch entries stay
// right. Rows longer than one binding are rotated in pieces (rope_long_rows).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "codegen/fast.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace codegen = vulkan::codegen;
using vulkan::bind_run;
using vulkan::Buf;
using vulkan::dense_run;

namespace {

// What decides whether the rope kernel can apply an absorbed rms_norm itself: the row
// length, the rotated half and the vector width, which follows x's alignment (the
// output is a fresh buffer, aligned).
codegen::RopeGeometry prenorm_probe(const array& x, int64_t d, int dims) {
  codegen::RopeGeometry g;
  g.count = 1;
  g.d = d;
  g.half_dims = dims / 2;
  g.prenorm = true;
  g.in_offset = x.flags().row_contiguous ? x.offset() / x.itemsize() : 0;
  return g;
}

// The operands of one launch beyond x and the output, bound once per eval.
struct Shared {
  vulkan::BoundOperand offsets, freqs, norm_w, start;
};

// Plans (memoized), binds and records one launch: g's rows of x at `x` into `y`
// (`y_elems` elements bound: the launch's rows, or the whole output for g.into).
void record(vulkan::Device& dev, vulkan::CommandEncoder& enc, const char* dtype,
            codegen::RopeGeometry g, const Buf& x, const Buf& y, int64_t y_elems,
            const Shared& sh) {
  auto bx = bind_run(dev, x, g.count * g.d, false);
  auto by = bind_run(dev, y, y_elems, true);
  g.in_offset = bx.elem_offset;
  g.out_offset = by.elem_offset;
  g.offsets_offset = sh.offsets.elem_offset;
  g.freqs_offset = sh.freqs.elem_offset;
  g.norm_w_offset = sh.norm_w.elem_offset;
  g.start_offset = g.into ? sh.start.elem_offset : 0;
  float numbers[2] = {g.base, g.scale};
  int64_t bits = 0;
  std::memcpy(&bits, numbers, 8);
  uint32_t eps_word = 0;
  std::memcpy(&eps_word, &g.eps, 4);
  int64_t norm_eps_bits = eps_word;
  static const int64_t family = vulkan::family_word("rope");
  const int64_t sig[] = {family,
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
                         g.row0,
                         g.count,
                         g.d,
                         g.half_dims,
                         g.t_len,
                         g.per_batch,
                         (g.offset_per_batch ? 1 : 0) | (g.traditional ? 2 : 0) |
                             (g.freqs ? 4 : 0) | (g.prenorm ? 8 : 0) | (g.into ? 16 : 0),
                         g.out_rows,
                         static_cast<int64_t>(g.start_offset),
                         bits,
                         static_cast<int64_t>(g.norm_w_offset),
                         norm_eps_bits,
                         static_cast<int64_t>(g.in_offset),
                         static_cast<int64_t>(g.out_offset),
                         static_cast<int64_t>(g.offsets_offset),
                         static_cast<int64_t>(g.freqs_offset)};
  const auto& planned = vulkan::memoized(sig, [&] {
    auto key = codegen::rope_key(dtype, g);
    const auto& kernel = vulkan::kernel_library().get(key);
    return vulkan::MemoEntry{&kernel, codegen::rope_launch(key, kernel.source, g)};
  });
  vulkan::Binding bindings[6] = {bx.binding, sh.offsets.binding};
  size_t n = 2;
  if (g.freqs) {
    bindings[n++] = sh.freqs.binding;
  }
  if (g.prenorm) {
    bindings[n++] = sh.norm_w.binding;
  }
  if (g.into) {
    bindings[n++] = sh.start.binding;
  }
  bindings[n++] = by.binding;
  vulkan::record_launch(enc, *planned.kernel, planned.launch, std::span(bindings, n));
}

vulkan::View view_at(const Buf& b, Dtype dtype) {
  return {allocator::Buffer(b.alloc), b.offset, dtype, {1}};
}

// Rows longer than one binding: each row's pairs in pieces of `per_piece`, rotated as rows
// of their own (two halves of `per_piece`, or adjacent pairs), the kernel reading the
// inverse frequencies from a table (binding it at the piece's first pair keeps them right);
// a piece of split halves is gathered into a temporary row and scattered back. Features
// past dims are copied.
void rope_long_rows(vulkan::Device& dev, int stream, const char* dtype, Dtype dt,
                    codegen::RopeGeometry g, const Buf& x, const Buf& y, int64_t count,
                    int64_t dims, Shared sh, const Buf& freqs, int64_t max_elems) {
  auto& enc = vulkan::encoder(stream);
  int64_t d = g.d;
  int64_t half = g.half_dims;
  int64_t per_piece = std::min(half, max_elems / 2);
  Buf row = g.traditional ? x : vulkan::temporary(enc, 2 * per_piece, dtype);
  Buf done = g.traditional ? y : vulkan::temporary(enc, 2 * per_piece, dtype);
  auto copy = [&](const Buf& from, const Buf& to, int64_t n) {
    vulkan::launch_elementwise(stream, "RoPE", "copy", "Copy", {view_at(from, dt)}, view_at(to, dt),
                               {static_cast<int>(n)});
  };
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t k0 = 0; k0 < half; k0 += per_piece) {
      int64_t n = std::min(per_piece, half - k0);
      codegen::RopeGeometry p = g;
      p.row0 = r;
      p.count = 1;
      p.d = 2 * n;
      p.half_dims = n;
      p.freqs = true;
      sh.freqs = bind_run(dev, freqs.at(k0), n, false);
      if (g.traditional) {
        record(dev, enc, dtype, p, x.at(r * d + 2 * k0), y.at(r * d + 2 * k0), 2 * n, sh);
        continue;
      }
      copy(x.at(r * d + k0), row, n);
      copy(x.at(r * d + half + k0), row.at(n), n);
      record(dev, enc, dtype, p, row, done, 2 * n, sh);
      copy(done, y.at(r * d + k0), n);
      copy(done.at(n), y.at(r * d + half + k0), n);
    }
    if (dims < d) {
      copy(x.at(r * d + dims), y.at(r * d + dims), d - dims);
    }
  }
}

// 2^(k * rope_coefficient) for the half_dims pairs: the frequencies whose inverses
// rope.glsl computes from base, as a freqs table.
Buf frequency_table(vulkan::CommandEncoder& enc, float base, int64_t half) {
  std::vector<float> table(static_cast<size_t>(half));
  double c = codegen::rope_coefficient(base, half);
  for (int64_t k = 0; k < half; ++k) {
    table[static_cast<size_t>(k)] = static_cast<float>(std::exp2(static_cast<double>(k) * c));
  }
  Buf t = vulkan::temporary(enc, half, "f32");
  enc.write({t.alloc, 0, static_cast<VkDeviceSize>(half * 4), false}, table.data(),
            static_cast<size_t>(half * 4));
  return t;
}

}  // namespace

void RoPE::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& x = inputs[0];
  if (const char* why = vulkan::float_kernel_unsupported(out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("RoPE");
  int64_t d = x.shape(-1);
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  bool long_rows = d > max_elems;
  int stream = this->stream().index;
  // (d >= dims >= 2: the op checks dims, so no division by zero.)
  int64_t count = static_cast<int64_t>(x.size()) / d;
  int64_t per = std::max<int64_t>(1, max_elems / d);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  bool one_launch = count <= per && x.size() > 0;
  auto& enc = vulkan::encoder(stream);
  if (into_ && !(one_launch && static_cast<int64_t>(out.size()) <= max_elems &&
                 out.size() < (size_t{1} << 31))) {
    // The rotated rows on their own, then the absorbed slice_update as its own launch (an
    // output wider than one binding; the update then copies the source).
    std::vector<array> rope_inputs(inputs.begin(), inputs.end() - 2);
    array rotated(x.shape(), out.dtype(), nullptr, {});
    RoPE(this->stream(), dims_, traditional_, base_, scale_, norm_eps_)
        .eval_gpu(rope_inputs, rotated);
    enc.retain(rotated.data_shared_ptr());
    int axis = static_cast<int>(out.ndim()) - 2;
    DynamicSliceUpdate(this->stream(), {axis})
        .eval_gpu({inputs[inputs.size() - 2], rotated, inputs.back()}, out);
    return;
  }
  // The absorbed rms_norm in the kernel, or as its own launch first (rows it cannot hold).
  bool kernel_norm = norm_eps_ && one_launch && !long_rows &&
                     codegen::rope_prenorm_fits(dtype, prenorm_probe(x, d, dims_), dev.caps());
  std::optional<array> normed;
  if (norm_eps_ && !kernel_norm) {
    normed = array(x.shape(), out.dtype(), nullptr, {});
    RMSNorm(this->stream(), *norm_eps_)
        .eval_gpu({x, inputs[norm_weight_index(inputs.size())]}, *normed);
    enc.retain(normed->data_shared_ptr());
  }
  const array& xin = normed ? *normed : x;
  // (inputs[n - 2] by reference: a copy of the handle would make the source undonatable.)
  if (into_) {
    // The output is the source (donated, or copied) with the rows written into it.
    vulkan::copy_or_donate(stream, inputs[inputs.size() - 2], out);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (x.size() == 0) {
    return;
  }
  const array& offsets = inputs[1];
  bool has_freqs = this->has_freqs(inputs.size());
  Buf xb = dense_run(enc, stream, xin, dtype);
  Buf off = dense_run(enc, stream, offsets, "i32");
  Buf fr = has_freqs ? dense_run(enc, stream, inputs[2], "f32") : off;
  Buf nw =
      kernel_norm ? dense_run(enc, stream, inputs[norm_weight_index(inputs.size())], dtype) : off;
  Buf st = into_ ? dense_run(enc, stream, inputs.back(), "i32") : off;
  Buf y = vulkan::buf_of(out, dtype);
  Shared sh{bind_run(dev, off, static_cast<int64_t>(offsets.size()), false),
            bind_run(dev, fr, has_freqs ? dims_ / 2 : 1, false),
            bind_run(dev, nw, kernel_norm ? d : 1, false), bind_run(dev, st, 1, false)};
  codegen::RopeGeometry g;
  g.d = d;
  g.half_dims = dims_ / 2;
  g.t_len = x.shape(-2);
  g.per_batch = count / x.shape(0);
  g.offset_per_batch = offsets.size() > 1;
  g.traditional = traditional_;
  g.freqs = has_freqs;
  g.base = base_;
  g.scale = scale_;
  g.prenorm = kernel_norm;
  g.eps = kernel_norm ? *norm_eps_ : 0.0f;
  g.into = into_;
  g.out_rows = into_ ? out.shape(-2) : 0;
  if (long_rows) {
    Buf table = has_freqs ? fr : frequency_table(enc, base_, dims_ / 2);
    rope_long_rows(dev, stream, dtype, out.dtype(), g, xb, y, count, dims_, sh, table, max_elems);
    return;
  }
  for (int64_t r0 = 0; r0 < count; r0 += per) {
    g.row0 = r0;
    g.count = std::min(per, count - r0);
    // Into a larger output: the whole output (its rows are addressed from the start).
    if (into_) {
      record(dev, enc, dtype, g, xb.at(r0 * d), y, static_cast<int64_t>(out.size()), sh);
    } else {
      record(dev, enc, dtype, g, xb.at(r0 * d), y.at(r0 * d), g.count * d, sh);
    }
  }
}

}  // namespace mlx::core::fast
