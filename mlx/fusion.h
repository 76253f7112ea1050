// Producer absorption while a graph is built (docs/fusion.md). Some ops read their input
// through a cheap row operation that another node would otherwise write to memory first:
// rope and quantized_matmul take an rms_norm's input and weight and normalize on the fly,
// an add takes over the quantized product it adds to, and a slice_update the rope it
// writes, so a decode step makes one dispatch where it made two. The absorbed node stays in the
// graph for any other reader (which then computes it again); when nothing else holds it, it is
// never evaluated.
#pragma once

#include <optional>
#include <vector>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core {

// What an op needs to apply rms_norm(x, weight, eps) itself: x and weight as the norm
// node holds them (already of the norm's output dtype).
struct NormPrologue {
  array x;
  array weight;
  float eps;
};

// The rms_norm that will produce `a`, when an op on stream `s` may read its input instead:
// `a` is the only output of an RMSNorm node that has not been scheduled yet, on the same
// stream, nothing is being traced (grad, vmap, compile see the plain graph), and fusion
// is on.
std::optional<NormPrologue> absorbable_rms_norm(const array& a, const Stream& s);

// a + b as one op when one side is a decode-sized quantized product (at most 8 rows of
// 2-d transposed weights, not yet scheduled, on stream s) and the other an array of its
// shape and dtype: the product adds it before its one rounding (a residual connection
// after a projection). nullopt when that does not apply.
std::optional<array> add_to_product(const array& a, const array& b, const Stream& s);

// slice_update(src, update, start, {ndim - 2}) as one op when `update` is a rope's output
// (not yet scheduled, on stream s) of src's dtype and rank, matching src but on that axis,
// with a one-element int32 start: the rope writes its rows into (a donated or copied) src
// at the start (a KV cache update of freshly rotated keys). nullopt otherwise.
std::optional<array> rope_into_slice(const array& src, const array& update, const array& start,
                                     const std::vector<int>& axes, const Stream& s);

// `h` itself as one op when it is silu(g) * u, a compiled elementwise group (x *
// sigmoid(x) times the second input, as MLX-LM's SwiGLU) of the two halves g, u (last
// axis) of a decode-sized quantized product P that is not yet scheduled, on stream s: the
// product computes the activation of its halves in its epilogue (the gate/up product of
// an MLP, whose output then never exists). nullopt otherwise.
std::optional<array> glu_of_product(const array& h, const Stream& s);

// scaled_dot_product_attention(q, keys, values, scale) with no mask or sinks as one
// fast::DecodeAttention when it is one decode step over a KV cache (fast_primitives.h):
// q (one row per head) a rope of whole rows, keys the leading rows of a key cache that a
// rope writes into at an array start (rope_into_slice), values the same rows of a value
// cache that a slice_update writes at that start, all pending on GPU stream s. The two
// cache nodes become the new node's other outputs, so whatever holds them (the model's
// cache) reads what it writes; nothing else changes. nullopt otherwise.
std::optional<array> attention_over_cache_update(const array& q, const array& keys,
                                                 const array& values, float scale, const Stream& s);

// The rows take(., ids, 0) picks from 2-d w, scales and biases, when all three are
// pending Take nodes on GPU stream s of one int32 or uint32 index array, with one row count:
// a quantized embedding's lookup (MLX-LM's QuantizedEmbedding), which dequantize then
// reads through the indices itself (one launch instead of four). nullopt otherwise.
struct TakenRows {
  array w, scales, biases, ids;
};
std::optional<TakenRows> taken_rows(const array& w, const array& scales, const array& biases,
                                    const Stream& s);

// On unless the environment has MLX_DISABLE_FUSION at start-up. Results are the same
// either way up to the rounding of the norm's statistics (each fused kernel rounds the
// normalized values to the norm's dtype, as the norm's own output would be).
void set_fusion(bool enabled);
bool fusion_enabled();

}  // namespace mlx::core
