// eval_gpu of DecodeAttention (mlx/fusion.h, docs/fusion.md): one decode step's attention
// over a KV cache as one launch of the sdpa family's vector mode with STEP (plus the merge
// launch of a split): the new query and key rows rotated (and normalized) in the kernel,
// the key and value rows written into the caches, which are updated in place when nothing
// else holds them (else copied first).
#include <algorithm>
#include <cstring>

#include "codegen/attention.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/attention.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace codegen = vulkan::codegen;
using vulkan::bind_run;
using vulkan::Buf;

namespace {

// Elements from element 0 to the last one, inclusive, through a's strides.
int64_t reach(const array& a) {
  int64_t hi = 1;
  for (size_t d = 0; d < a.ndim(); ++d) {
    hi += (int64_t{a.shape(static_cast<int>(d))} - 1) * std::abs(a.strides(static_cast<int>(d)));
  }
  return std::max<int64_t>(hi, static_cast<int64_t>(a.size()));
}

// The launch-memo signature: the attention geometry's and every field of the step.
std::array<int64_t, 47> step_signature(const char* dtype, const codegen::AttentionGeometry& g,
                                       const codegen::AttentionStep& st) {
  static_assert(sizeof(codegen::AttentionStep) == 11 * sizeof(int64_t) + 8 + 4 * sizeof(float),
                "AttentionStep changed: update step_signature");
  auto base = vulkan::attention_signature("sdpa_step", dtype, g);
  uint32_t f[4];
  std::memcpy(&f[0], &st.q_eps, 4);
  std::memcpy(&f[1], &st.k_eps, 4);
  std::memcpy(&f[2], &st.base, 4);
  std::memcpy(&f[3], &st.rope_scale, 4);
  std::array<int64_t, 47> sig{};
  std::copy(base.begin(), base.end(), sig.begin());
  const int64_t rest[] = {st.cap,
                          st.kr_offset,
                          st.kr_sb,
                          st.kr_sh,
                          st.vr_offset,
                          st.vr_sb,
                          st.vr_sh,
                          st.qw_offset,
                          st.kw_offset,
                          st.pos_offset,
                          st.start_offset,
                          (st.q_norm ? 1 : 0) | (st.k_norm ? 2 : 0) | (st.traditional ? 4 : 0),
                          int64_t{f[0]} | (int64_t{f[1]} << 32),
                          int64_t{f[2]} | (int64_t{f[3]} << 32)};
  std::copy(std::begin(rest), std::end(rest), sig.begin() + base.size());
  return sig;
}

}  // namespace

void DecodeAttention::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  if (const char* why = vulkan::float_kernel_unsupported(out)) {
    vulkan::cpu_fallback(*this, inputs, outputs, why);
    return;
  }
  auto& dev = vulkan::device("DecodeAttention");
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  const array& k_cache = inputs[3];

  // The rows' shapes are the outputs': [B, Hq, 1, Dv] and the caches [B, Hkv, cap, D|Dv].
  codegen::AttentionGeometry g;
  g.batch = out.shape(0);
  g.hkv = outputs[1].shape(1);
  g.groups = out.shape(1) / g.hkv;
  g.lq = 1;
  g.lkv = lkv_;
  g.d = outputs[1].shape(3);
  g.dv = outputs[2].shape(3);
  g.scale = scale_;
  codegen::AttentionStep st;
  st.cap = k_cache.shape(2);
  st.q_norm = q_eps_.has_value();
  st.k_norm = k_eps_.has_value();
  st.traditional = traditional_;
  st.q_eps = q_eps_.value_or(0.0f);
  st.k_eps = k_eps_.value_or(0.0f);
  st.base = base_;
  st.rope_scale = rope_scale_;
  // Dense caches as the probe (the outputs are, when copied); offsets and strides of the
  // real operands are checked again below.
  g.k_sj = g.d, g.k_sh = st.cap * g.d, g.k_sb = g.hkv * st.cap * g.d;
  g.v_sj = g.dv, g.v_sh = st.cap * g.dv, g.v_sb = g.hkv * st.cap * g.dv;
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  if (!std::all_of(inputs.begin(), inputs.end(),
                   [&](const array& a) { return reach(a) <= max_elems; })) {
    vulkan::cpu_fallback(*this, inputs, outputs, "an operand wider than one storage binding");
    return;
  }
  if (!codegen::attention_step_supported(g, st, dev.caps())) {
    vulkan::cpu_fallback(*this, inputs, outputs,
                         "index spans past int32 or more shared memory than the device has");
    return;
  }
  // The caches' inputs by reference: a copy of the handle would make them undonatable.
  vulkan::copy_or_donate(stream, inputs[3], outputs[1]);
  vulkan::copy_or_donate(stream, inputs[4], outputs[2]);
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  // Rows read in place. A stacked product's columns (its last dim contiguous, as a fresh
  // product's is) are addressed straight from it: no view array per row and layer.
  auto rows = [&](int i, int heads, int64_t d) {
    const array& p = inputs[i];
    if (stacked_cols() && p.strides(2) == 1 && p.strides(0) >= 0) {
      vulkan::Strided s;
      s.buf = vulkan::buf_of(p, dtype).at((*stacked_cols())[i]);
      s.strides = {p.strides(0), d, heads * d, 1};
      s.elems = (int64_t{p.shape(0)} - 1) * p.strides(0) + heads * d;
      return s;
    }
    return vulkan::strided(enc, stream, rows_input(inputs, outputs, i), dtype, true);
  };
  vulkan::Strided qs = rows(0, out.shape(1), g.d);
  vulkan::Strided krs = rows(1, static_cast<int>(g.hkv), g.d);
  vulkan::Strided vrs = rows(2, static_cast<int>(g.hkv), g.dv);
  vulkan::Strided ks = vulkan::strided(enc, stream, outputs[1], dtype, true);
  vulkan::Strided vs = vulkan::strided(enc, stream, outputs[2], dtype, true);
  auto bq = bind_run(dev, qs.buf, qs.elems, false);
  auto bkr = bind_run(dev, krs.buf, krs.elems, false);
  auto bvr = bind_run(dev, vrs.buf, vrs.elems, false);
  auto bk = bind_run(dev, ks.buf, ks.elems, false);
  auto bv = bind_run(dev, vs.buf, vs.elems, false);
  auto bk_out = bind_run(dev, ks.buf, ks.elems, true);
  auto bv_out = bind_run(dev, vs.buf, vs.elems, true);
  auto by = bind_run(dev, vulkan::buf_of(out, dtype), static_cast<int64_t>(out.size()), true);
  Buf pos = vulkan::dense_run(enc, stream, inputs[5], "i32");
  Buf start = vulkan::dense_run(enc, stream, inputs[6], "i32");
  auto bpos = bind_run(dev, pos, 1, false);
  auto bstart = bind_run(dev, start, 1, false);
  size_t next = 7;
  vulkan::BoundOperand bqw = bq, bkw = bq;  // absent weights bind q (never read)
  if (q_eps_) {
    bqw = bind_run(dev, vulkan::dense_run(enc, stream, inputs[next++], dtype), g.d, false);
  }
  if (k_eps_) {
    bkw = bind_run(dev, vulkan::dense_run(enc, stream, inputs[next++], dtype), g.d, false);
  }
  g.q_offset = static_cast<int64_t>(bq.elem_offset);
  g.k_offset = static_cast<int64_t>(bk.elem_offset);
  g.v_offset = static_cast<int64_t>(bv.elem_offset);
  g.out_offset = static_cast<int64_t>(by.elem_offset);
  g.q_sb = qs.strides[0], g.q_sh = qs.strides[1], g.q_si = qs.strides[2];
  g.k_sb = ks.strides[0], g.k_sh = ks.strides[1], g.k_sj = ks.strides[2];
  g.v_sb = vs.strides[0], g.v_sh = vs.strides[1], g.v_sj = vs.strides[2];
  st.kr_offset = static_cast<int64_t>(bkr.elem_offset);
  st.kr_sb = krs.strides[0], st.kr_sh = krs.strides[1];
  st.vr_offset = static_cast<int64_t>(bvr.elem_offset);
  st.vr_sb = vrs.strides[0], st.vr_sh = vrs.strides[1];
  st.qw_offset = static_cast<int64_t>(bqw.elem_offset);
  st.kw_offset = static_cast<int64_t>(bkw.elem_offset);
  st.pos_offset = static_cast<int64_t>(bpos.elem_offset);
  st.start_offset = static_cast<int64_t>(bstart.elem_offset);
  if (!codegen::attention_step_supported(g, st, dev.caps())) {
    throw std::logic_error("[DecodeAttention] the bound operands left the kernel's index range.");
  }

  int64_t splits = codegen::attention_splits(g);
  codegen::AttentionGeometry main = g;
  vulkan::SplitScratch scratch;
  vulkan::Binding bindings[] = {bq.binding,   bk.binding,     bv.binding,     bkr.binding,
                                bvr.binding,  by.binding,     bqw.binding,    bkw.binding,
                                bpos.binding, bstart.binding, bk_out.binding, bv_out.binding,
                                by.binding,   by.binding};
  if (splits > 1) {
    scratch = vulkan::split_scratch(dev, enc, g, splits);
    main.out_offset = static_cast<int64_t>(scratch.bound.elem_offset);
    main.fin_offset = g.out_offset;  // read where the launch merges (split=2)
    bindings[5] = scratch.bound.binding;
  }
  // Planned once for every key length with this split count (a decode loop's cache grows).
  const auto& planned = vulkan::memoized(step_signature(dtype, vulkan::length_free(main), st), [&] {
    auto key = codegen::attention_step_key(dtype, main, st, dev.caps());
    vulkan::choose_merge(key, main);
    const auto& kernel = vulkan::kernel_library().get(key);
    return vulkan::MemoEntry{&kernel, codegen::attention_step_launch(key, kernel.source, main, st)};
  });
  // split=2 also binds the output and the stream's counters.
  bool inline_merge = splits > 1 && vulkan::merges_in_launch(planned);
  if (inline_merge) {
    bindings[13] = vulkan::merge_counters(enc);
  }
  vulkan::record_launch(enc, *planned.kernel, vulkan::launch_for_length(planned, main),
                        std::span(bindings, inline_merge ? 14 : 12));
  if (splits > 1 && !inline_merge) {
    vulkan::record_attention_merge(dev, enc, dtype, g, scratch, bq.binding, by.binding);
  }
}

}  // namespace mlx::core::fast
