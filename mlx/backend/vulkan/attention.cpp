// eval_gpu of ScaledDotProductAttention: the "sdpa" family (codegen/attention.h,
// docs/attention.md). q, k and v are read in place when their head dim is contiguous (a KV
// cache slice costs no copy), else copied dense; the mask is read through its broadcast
// strides. Decode (Lq <= 8) takes the vector mode, split along the keys when the grid would
// be small (a merge launch combines the chunks); prefill takes the rows mode.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <span>

#include "mlx/backend/vulkan/attention.h"

#include "codegen/attention.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::vulkan {

Strided strided(vulkan::CommandEncoder& enc, int stream, const array& a, const char* dtype,
                bool need_unit_last) {
  bool usable =
      std::all_of(a.strides().begin(), a.strides().end(), [](int64_t s) { return s >= 0; });
  if (need_unit_last && a.ndim() > 0 && a.shape(-1) > 1 && a.strides(-1) != 1) {
    usable = false;
  }
  Strided s;
  if (usable) {
    s.buf = vulkan::buf_of(a, dtype);
    s.strides = a.strides();
  } else {
    s.buf = vulkan::dense_run(enc, stream, a, dtype);
    s.strides = row_major_strides(a.shape());
  }
  for (size_t d = 0; d < a.ndim(); ++d) {
    s.elems += (int64_t{a.shape(static_cast<int>(d))} - 1) * s.strides[d];
  }
  return s;
}

static_assert(sizeof(codegen::AttentionGeometry) == 27 * sizeof(int64_t) +
                                                        sizeof(int64_t) /* scale, padded */ +
                                                        3 * sizeof(std::string),
              "AttentionGeometry changed: update attention_signature");
std::array<int64_t, 33> attention_signature(const char* family, const char* dtype,
                                            const codegen::AttentionGeometry& g) {
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &g.scale, 4);
  return {vulkan::family_word(family),
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
          g.batch,
          g.hkv,
          g.groups,
          g.lq,
          g.lkv,
          g.d,
          g.dv,
          g.q_offset,
          g.k_offset,
          g.v_offset,
          g.m_offset,
          g.s_offset,
          g.out_offset,
          g.q_sb,
          g.q_sh,
          g.q_si,
          g.k_sb,
          g.k_sh,
          g.k_sj,
          g.v_sb,
          g.v_sh,
          g.v_sj,
          g.m_sb,
          g.m_sh,
          g.m_si,
          g.m_sj,
          g.fin_offset,
          scale_bits,
          vulkan::family_word(g.mask.c_str()),
          vulkan::family_word(g.mask_dtype.c_str()),
          vulkan::family_word(g.sinks_dtype.c_str())};
}

codegen::AttentionGeometry length_free(const codegen::AttentionGeometry& g) {
  codegen::AttentionGeometry keyed = g;
  keyed.lkv = -codegen::attention_splits(g);
  return keyed;
}

const codegen::Launch& launch_for_length(const MemoEntry& planned,
                                         const codegen::AttentionGeometry& g) {
  thread_local codegen::Launch moved;
  moved = planned.launch;
  codegen::set_attention_length(moved, planned.kernel->key, g);
  return moved;
}

void choose_merge(codegen::KernelKey& key, const codegen::AttentionGeometry& g) {
  // MLX_VK_SDPA_MERGE=launch keeps the merge launch (split=1) and =inline merges in the
  // launch wherever it fits, whatever the split count (for measuring the two).
  static const std::string mode = env_string("MLX_VK_SDPA_MERGE", "auto");
  auto split = key.params.find("split");
  if (mode == "auto" || split == key.params.end() || split->second == "0") {
    return;
  }
  // "1" or "2" in place (a literal assignment trips GCC 12's -Wrestrict).
  split->second[0] = mode == "inline" && codegen::attention_merge_fits(g) ? '2' : '1';
}

bool merges_in_launch(const MemoEntry& planned) {
  auto split = planned.kernel->key.params.find("split");
  return split != planned.kernel->key.params.end() && split->second == "2";
}

Binding merge_counters(CommandEncoder& enc) {
  // One buffer a stream (a stream's launches are ordered by barriers, so two never count in
  // the same slots at once); never freed, like the device. The kernels leave it zeroed.
  static std::mutex mtx;
  static std::map<int, allocator::Buffer> buffers;
  constexpr size_t kBytes = codegen::kMergeSlots * 8 * sizeof(uint32_t);
  std::lock_guard lk(mtx);
  auto it = buffers.find(enc.index());
  bool fresh = it == buffers.end();
  if (fresh) {
    it = buffers.emplace(enc.index(), allocator::malloc(kBytes)).first;
  }
  Binding b{allocation(it->second), 0, kBytes, true};
  if (fresh) {
    enc.fill(b, 0u);
  }
  return b;
}

SplitScratch split_scratch(Device& dev, CommandEncoder& enc, const codegen::AttentionGeometry& g,
                           int64_t splits) {
  SplitScratch s;
  s.elems = g.batch * g.hkv * g.groups * g.lq * splits * (g.dv + 2);
  s.buf = temporary(enc, s.elems, "f32");
  s.bound = bind_run(dev, s.buf, s.elems, true);
  return s;
}

void record_attention_merge(Device& dev, CommandEncoder& enc, const char* dtype,
                            const codegen::AttentionGeometry& g, const SplitScratch& scratch,
                            const Binding& sinks, const Binding& out) {
  codegen::AttentionGeometry merge = g;
  merge.q_offset = static_cast<int64_t>(scratch.bound.elem_offset);
  const auto& planned = memoized(attention_signature("sdpa_merge", dtype, length_free(merge)), [&] {
    auto key = codegen::attention_merge_key(dtype, merge);
    const auto& kernel = kernel_library().get(key);
    return MemoEntry{&kernel, codegen::attention_launch(key, kernel.source, merge)};
  });
  auto partial = bind_run(dev, scratch.buf, scratch.elems, false);
  const Binding mb[] = {partial.binding, partial.binding, partial.binding,
                        partial.binding, sinks,           out};
  record_launch(enc, *planned.kernel, launch_for_length(planned, merge), mb);
}

}  // namespace mlx::core::vulkan

namespace mlx::core::fast {

namespace codegen = vulkan::codegen;
using vulkan::attention_signature;
using vulkan::bind_run;
using vulkan::Buf;
using vulkan::Strided;
using vulkan::strided;

void ScaledDotProductAttention::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& q = inputs[0];
  const array& k = inputs[1];
  const array& v = inputs[2];
  if (const char* why = vulkan::float_kernel_unsupported(out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("ScaledDotProductAttention");
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());

  codegen::AttentionGeometry g;
  g.batch = q.shape(0);
  g.hkv = k.shape(1);
  g.groups = q.shape(1) / g.hkv;
  g.lq = q.shape(2);
  g.lkv = k.shape(2);
  g.d = q.shape(3);
  g.dv = v.shape(3);
  g.scale = scale_;
  g.mask = causal() ? "causal" : "none";
  const array* mask = has_mask() ? &inputs[3] : nullptr;
  const array* sinks = has_sinks() ? &inputs.back() : nullptr;
  if (mask) {
    g.mask = mask->dtype() == bool_ ? "bool" : "add";
    g.mask_dtype = vulkan::gpu_dtype_name(mask->dtype());
  }
  if (sinks) {
    g.sinks_dtype = vulkan::gpu_dtype_name(sinks->dtype());
  }
  // Spans first: any operand past int32 (or one binding) takes the logged CPU route.
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  for (const auto& a : inputs) {
    int64_t hi = 1;
    for (size_t d = 0; d < a.ndim(); ++d) {
      hi += (int64_t{a.shape(static_cast<int>(d))} - 1) * std::abs(a.strides(static_cast<int>(d)));
    }
    if (std::max<int64_t>(hi, a.size()) > max_elems) {
      vulkan::cpu_fallback(*this, inputs, out, "an operand wider than one storage binding");
      return;
    }
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  if (g.lkv == 0) {
    // No key: MLX's composition gives 0 (with or without sinks).
    auto bo = bind_run(dev, vulkan::buf_of(out, dtype), static_cast<int64_t>(out.size()), true);
    bo.binding.range = (static_cast<VkDeviceSize>(out.nbytes()) + 3) / 4 * 4;
    enc.fill(bo.binding, 0);
    return;
  }
  Strided qs = strided(enc, stream, q, dtype, true);
  Strided ks = strided(enc, stream, k, dtype, true);
  Strided vs = strided(enc, stream, v, dtype, true);
  auto bq = bind_run(dev, qs.buf, qs.elems, false);
  auto bk = bind_run(dev, ks.buf, ks.elems, false);
  auto bv = bind_run(dev, vs.buf, vs.elems, false);
  auto by = bind_run(dev, vulkan::buf_of(out, dtype), static_cast<int64_t>(out.size()), true);
  g.q_offset = static_cast<int64_t>(bq.elem_offset);
  g.k_offset = static_cast<int64_t>(bk.elem_offset);
  g.v_offset = static_cast<int64_t>(bv.elem_offset);
  g.out_offset = static_cast<int64_t>(by.elem_offset);
  g.q_sb = qs.strides[0], g.q_sh = qs.strides[1], g.q_si = qs.strides[2];
  g.k_sb = ks.strides[0], g.k_sh = ks.strides[1], g.k_sj = ks.strides[2];
  g.v_sb = vs.strides[0], g.v_sh = vs.strides[1], g.v_sj = vs.strides[2];
  // Absent operands bind q (never read).
  vulkan::Binding mask_binding = bq.binding, sinks_binding = bq.binding;
  if (mask) {
    Strided ms = strided(enc, stream, *mask, g.mask_dtype.c_str(), false);
    auto bm = bind_run(dev, ms.buf, ms.elems, false);
    mask_binding = bm.binding;
    g.m_offset = static_cast<int64_t>(bm.elem_offset);
    g.m_sb = ms.strides[0], g.m_sh = ms.strides[1], g.m_si = ms.strides[2], g.m_sj = ms.strides[3];
  }
  if (sinks) {
    Buf sb = vulkan::dense_run(enc, stream, *sinks, g.sinks_dtype.c_str());
    auto bs = bind_run(dev, sb, static_cast<int64_t>(sinks->size()), false);
    sinks_binding = bs.binding;
    g.s_offset = static_cast<int64_t>(bs.elem_offset);
  }
  if (!codegen::attention_supported(g)) {
    vulkan::cpu_fallback(*this, inputs, out, "index spans past int32");
    return;
  }

  int64_t splits = codegen::attention_splits(g);
  codegen::AttentionGeometry main = g;
  vulkan::SplitScratch scratch;
  vulkan::Binding bindings[] = {bq.binding,    bk.binding, bv.binding, mask_binding,
                                sinks_binding, by.binding, by.binding, by.binding};
  if (splits > 1) {
    scratch = vulkan::split_scratch(dev, enc, g, splits);
    main.out_offset = static_cast<int64_t>(scratch.bound.elem_offset);
    main.fin_offset = g.out_offset;  // read where the launch merges (split=2)
    bindings[5] = scratch.bound.binding;
  }
  // Every layer of a decode step repeats the geometry, and a decode loop's steps differ only
  // in the key length, which a vector launch takes without planning again.
  bool vector = codegen::attention_vector(main);
  const auto& planned = vulkan::memoized(
      attention_signature("sdpa", dtype, vector ? vulkan::length_free(main) : main), [&] {
        auto key = codegen::attention_key(dtype, main, dev.caps());
        vulkan::choose_merge(key, main);
        const vulkan::Kernel* kernel =
            vulkan::get_kernel_or_drop_coop(key, key.params["mode"] == "coop");
        if (kernel == nullptr) {
          key = codegen::attention_key(dtype, main, dev.caps());
          vulkan::choose_merge(key, main);
          kernel = &vulkan::kernel_library().get(key);
        }
        return vulkan::MemoEntry{kernel, codegen::attention_launch(key, kernel->source, main)};
      });
  // split=2 also binds the output and the stream's counters.
  bool inline_merge = splits > 1 && vulkan::merges_in_launch(planned);
  if (inline_merge) {
    bindings[7] = vulkan::merge_counters(enc);
  }
  vulkan::record_launch(enc, *planned.kernel,
                        vector ? vulkan::launch_for_length(planned, main) : planned.launch,
                        std::span(bindings, inline_merge ? 8 : 6));
  if (splits > 1 && !inline_merge) {
    vulkan::record_attention_merge(dev, enc, dtype, g, scratch, sinks_binding, by.binding);
  }
}

}  // namespace mlx::core::fast
