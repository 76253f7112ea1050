// The "sdpa" family (templates/sdpa.glsl): scaled dot-product attention, specialized by head
// dims, dtype, mask kind, sinks and mode (vector for decode, rows for prefill, merge for
// split decode). Keys, variant choice, rendering and launch packing; no arrays, no Vulkan.
// docs/attention.md explains the choices.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// q [B, groups * hkv, lq, d], k [B, hkv, lkv, d], v [B, hkv, lkv, dv], out dense
// [B, groups * hkv, lq, dv]; strides in elements (d contiguous); offsets are element indices
// within each binding. mask: "none", "causal", "bool" or "add" (an array mask of mask_dtype,
// strides for [B, heads, lq, lkv], 0 where broadcast).
struct AttentionGeometry {
  int64_t batch = 1, hkv = 1, groups = 1, lq = 1, lkv = 1, d = 64, dv = 64;
  int64_t q_offset = 0, k_offset = 0, v_offset = 0, m_offset = 0, s_offset = 0, out_offset = 0;
  int64_t q_sb = 0, q_sh = 0, q_si = 0;
  int64_t k_sb = 0, k_sh = 0, k_sj = 0;
  int64_t v_sb = 0, v_sh = 0, v_sj = 0;
  int64_t m_sb = 0, m_sh = 0, m_si = 0, m_sj = 0;
  // A split decode whose last workgroup merges (key split=2): the output's element offset
  // in its own binding, while out_offset locates the f32 scratch.
  int64_t fin_offset = 0;
  float scale = 1.0f;
  std::string mask = "none";
  std::string mask_dtype;   // "b" for bool, the float dtype for additive masks
  std::string sinks_dtype;  // empty: no sinks
};

// One decode step of fast::DecodeAttention (sdpa.glsl STEP, docs/fusion.md): lq = 1, no
// mask or sinks; k and v of the AttentionGeometry are the caches (cap rows, also written),
// and the kernel reads the new key row [B, hkv, 1, d] and value row [B, hkv, 1, dv] through
// these strides, the norm weights (d values each), the rope's position and the cache row
// (int32) at these element offsets.
struct AttentionStep {
  int64_t cap = 1;
  int64_t kr_offset = 0, kr_sb = 0, kr_sh = 0;
  int64_t vr_offset = 0, vr_sb = 0, vr_sh = 0;
  int64_t qw_offset = 0, kw_offset = 0, pos_offset = 0, start_offset = 0;
  bool q_norm = false, k_norm = false, traditional = false;
  float q_eps = 0.0f, k_eps = 0.0f, base = 10000.0f, rope_scale = 1.0f;
};

// Whether the step kernel serves it: attention_supported, lq 1 and no mask or sinks, the
// new rows and caches within int32, and its shared memory within the device's.
bool attention_step_supported(const AttentionGeometry& g, const AttentionStep& st,
                              const DeviceCaps& caps);

// The vector key plus "coef,keps,kn,qeps,qn,rscale,step=1,trad" (the rope's and norms'
// numbers as f32 bits in hex: a model has one set, so one kernel).
KernelKey attention_step_key(const std::string& dtype, const AttentionGeometry& g,
                             const AttentionStep& st, const DeviceCaps& caps);
Launch attention_step_launch(const KernelKey& key, const KernelSource& source,
                             const AttentionGeometry& g, const AttentionStep& st);

// A memoized vector-mode launch (main, step or merge) made for another key length with the
// same split count, given g's: lkv and the key chunk rewritten in its push constants (and
// the merge's). A decode loop's cache grows by one key a step; its kernel and every other
// number stay, so the launch memo keys these launches by the split count, not the length.
void set_attention_length(Launch& launch, const KernelKey& key, const AttentionGeometry& g);

// Whether the kernels serve the problem: d and dv multiples of 8 up to 256, and every index
// within int32. Otherwise the op composes matmul and softmax on the GPU.
bool attention_supported(const AttentionGeometry& g);

// Decode (lq <= 8) uses the vector mode; its key chunks (1: no merge).
bool attention_vector(const AttentionGeometry& g);
int64_t attention_splits(const AttentionGeometry& g);
// A split decode merges its chunks in the same launch (key split=2: two more bindings, the
// output and a zeroed counter per row block, at most kMergeSlots of them; the last
// workgroup of a row block merges it) where the splits fit one batch of that merge's loads
// (merge_splits_per_batch), else in a merge launch (split=1). docs/attention.md, "The merge
// in the launch".
constexpr int64_t kMergeSlots = 4096;
// Whether split=2 can serve g at all: split, and its row blocks within the counters.
bool attention_merge_fits(const AttentionGeometry& g);
// The splits the in-launch merge reads in one batch (sdpa.glsl MC): at most 32, an
// invocation holds at most 64 of its outputs' states in flight (32 in a decode step's
// kernel, `step`), and the batch's (m, l) fit the teams' arrays.
int64_t merge_splits_per_batch(int64_t rb, int64_t dv, int64_t tpr, bool step);

// "sdpa:d,dtype,dv,mask,mdtype,mode=vector,rb,sdtype,sg,split,tpr" (decode; split 0, 1 or
// 2: none, a merge launch, merged by the last workgroup) or
// "sdpa:bk,bq,d,dtype,dv,kvh,mask,mdtype,mode=rows,qh,sdtype,sg,tk,vec" (prefill: the
// tiles, chosen for the device's shared memory; vec: quads of q, k, v load as vectors) for
// the main launch;
// "sdpa:dtype,dv,mode=merge,sdtype" for the merge of a split decode.
KernelKey attention_key(const std::string& dtype, const AttentionGeometry& g,
                        const DeviceCaps& caps);
KernelKey attention_merge_key(const std::string& dtype, const AttentionGeometry& g);
KernelSource render_attention(const KernelKey& key, const DeviceCaps& caps);
// For a split decode's main launch, out_offset locates the f32 scratch of
// rows * splits * (dv + 2) values (and with split=2 fin_offset the output); for the merge,
// s_offset the sinks, q_offset the scratch and out_offset the output.
Launch attention_launch(const KernelKey& key, const KernelSource& source,
                        const AttentionGeometry& g);

}  // namespace mlx::core::vulkan::codegen
