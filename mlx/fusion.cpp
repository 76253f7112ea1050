// Producer absorption while a graph is built (mlx/fusion.h, docs/fusion.md).
#include "mlx/fusion.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>
#include <typeinfo>

#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"
#include "mlx/transforms_impl.h"

namespace mlx::core {

namespace {

std::atomic<bool>& fusion_flag() {
  static std::atomic<bool> on{std::getenv("MLX_DISABLE_FUSION") == nullptr};
  return on;
}

}  // namespace

void set_fusion(bool enabled) {
  fusion_flag().store(enabled);
}

namespace {

// The primitive `p` as a P, or nullptr: one type comparison where a dynamic_cast walked the
// class hierarchy (~3% of building a decode step's graph, which asks this of most nodes).
// P is final, so the two agree.
template <typename P>
const P* primitive_as(const Primitive& p) {
  static_assert(std::is_final_v<P>, "primitive_as needs a final primitive class");
  return typeid(p) == typeid(P) ? static_cast<const P*>(&p) : nullptr;
}

}  // namespace

bool fusion_enabled() {
  return fusion_flag().load(std::memory_order_relaxed);
}

std::optional<NormPrologue> absorbable_rms_norm(const array& a, const Stream& s) {
  if (!fusion_enabled() || detail::in_tracing() || a.status() != array::Status::unscheduled ||
      !a.has_primitive() || !a.siblings().empty()) {
    return std::nullopt;
  }
  auto* norm = primitive_as<fast::RMSNorm>(a.primitive());
  if (norm == nullptr || norm->stream() != s) {
    return std::nullopt;
  }
  const auto& in = a.inputs();
  return NormPrologue{in[0], in[1], norm->eps()};
}

namespace {

// Whether the product `p` (a QuantizedMatmul's output) has at most 8 rows of x: the qmv
// family, whose epilogue can take the absorbed steps.
bool decode_sized(const array& p) {
  const array& x = p.inputs()[0];
  return x.shape(-1) > 0 && x.size() / x.shape(-1) <= 8;
}

// The decode-sized quantized product that `p` will be, when an add may take it over.
const QuantizedMatmul* absorbable_product(const array& p, const Stream& s) {
  if (p.status() != array::Status::unscheduled || !p.has_primitive() || !p.siblings().empty()) {
    return nullptr;
  }
  auto* qmm = primitive_as<QuantizedMatmul>(p.primitive());
  if (qmm == nullptr || qmm->stream() != s || qmm->residual() || qmm->glu() || !qmm->transpose()) {
    return nullptr;
  }
  return p.inputs()[1].ndim() == 2 && decode_sized(p) ? qmm : nullptr;
}

bool is_node(const array& a, const array& node) {
  return a.id() == node.id();
}

// A unary `op` node of `in`, or a binary `op` node of {a, b} in either order.
bool unary_of(const array& n, UnaryOp op, const array& in) {
  auto* u = n.has_primitive() ? primitive_as<Unary>(n.primitive()) : nullptr;
  return u && u->op() == op && n.inputs().size() == 1 && is_node(n.inputs()[0], in);
}
bool binary_of(const array& n, BinaryOp op, const array& a, const array& b) {
  auto* bin = n.has_primitive() ? primitive_as<Binary>(n.primitive()) : nullptr;
  if (!bin || bin->op() != op || n.inputs().size() != 2) {
    return false;
  }
  const auto& in = n.inputs();
  return (is_node(in[0], a) && is_node(in[1], b)) || (is_node(in[0], b) && is_node(in[1], a));
}

// silu(i0) * i1 traced as sigmoid(i0), i0 * that, that * i1, all of one float dtype.
bool is_swiglu(const Compiled& c) {
  const auto& t = c.tape();
  const auto& in = c.inner_inputs();
  if (t.size() != 3 || in.size() != 2 || c.inner_outputs().size() != 1 ||
      !is_node(c.inner_outputs()[0], t[2])) {
    return false;
  }
  for (const auto& n : t) {
    if (n.dtype() != in[0].dtype() || n.dtype() != in[1].dtype()) {
      return false;
    }
  }
  return unary_of(t[0], UnaryOp::Sigmoid, in[0]) &&
         binary_of(t[1], BinaryOp::Multiply, in[0], t[0]) &&
         binary_of(t[2], BinaryOp::Multiply, t[1], in[1]);
}

// Whether `a` is the slice [lo, lo + width) of p's last axis (everything of the others).
bool last_axis_slice(const array& a, const array& p, int lo, int width) {
  if (a.status() != array::Status::unscheduled || !a.has_primitive() || a.inputs().size() != 1 ||
      !is_node(a.inputs()[0], p)) {
    return false;
  }
  auto* sl = primitive_as<Slice>(a.primitive());
  if (sl == nullptr) {
    return false;
  }
  int nd = static_cast<int>(p.ndim());
  for (int d = 0; d < nd; ++d) {
    int start = d == nd - 1 ? lo : 0;
    int stop = d == nd - 1 ? lo + width : p.shape(d);
    if (sl->start()[d] != start || sl->stop()[d] != stop || sl->strides()[d] != 1) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<array> glu_of_product(const array& h, const Stream& s) {
  if (!fusion_enabled() || detail::in_tracing() || h.status() != array::Status::unscheduled ||
      !h.has_primitive() || !h.siblings().empty() || h.inputs().size() != 2) {
    return std::nullopt;
  }
  auto* comp = primitive_as<Compiled>(h.primitive());
  if (comp == nullptr || comp->stream() != s || !is_swiglu(*comp)) {
    return std::nullopt;
  }
  const array& g = h.inputs()[0];
  const array& u = h.inputs()[1];
  if (g.status() != array::Status::unscheduled || g.inputs().size() != 1) {
    return std::nullopt;
  }
  const array& p = g.inputs()[0];
  if (p.status() != array::Status::unscheduled || !p.has_primitive() || !p.siblings().empty() ||
      p.ndim() < 1 || p.shape(-1) % 2 != 0 || p.dtype() != h.dtype()) {
    return std::nullopt;
  }
  auto* qmm = primitive_as<QuantizedMatmul>(p.primitive());
  int half = p.shape(-1) / 2;
  if (qmm == nullptr || qmm->stream() != s || qmm->residual() || qmm->glu() || !qmm->transpose() ||
      p.inputs()[1].ndim() != 2 || !last_axis_slice(g, p, 0, half) ||
      !last_axis_slice(u, p, half, half)) {
    return std::nullopt;
  }
  if (!decode_sized(p)) {
    return std::nullopt;  // the qmm family has no such epilogue
  }
  return array(h.shape(), h.dtype(),
               std::make_shared<QuantizedMatmul>(s, qmm->group_size(), qmm->bits(), true,
                                                 qmm->norm_eps(), false, h.primitive_ptr()),
               p.inputs());
}

std::optional<array> rope_into_slice(const array& src, const array& update, const array& start,
                                     const std::vector<int>& axes, const Stream& s) {
  int nd = static_cast<int>(src.ndim());
  if (!fusion_enabled() || detail::in_tracing() || update.status() != array::Status::unscheduled ||
      !update.has_primitive() || !update.siblings().empty() || update.dtype() != src.dtype() ||
      update.ndim() != src.ndim() || nd < 3 || axes.size() != 1 || axes[0] != nd - 2 ||
      start.dtype() != int32 || start.size() != 1) {
    return std::nullopt;
  }
  auto* rope = primitive_as<fast::RoPE>(update.primitive());
  if (rope == nullptr || rope->stream() != s || rope->into()) {
    return std::nullopt;
  }
  for (int d = 0; d < nd; ++d) {
    if (d != nd - 2 && update.shape(d) != src.shape(d)) {
      return std::nullopt;
    }
  }
  std::vector<array> inputs = update.inputs();
  inputs.push_back(src);
  inputs.push_back(start);
  return array(src.shape(), src.dtype(),
               std::make_shared<fast::RoPE>(s, rope->dims(), rope->traditional(), rope->base(),
                                            rope->scale(), rope->norm_eps(), true),
               std::move(inputs));
}

std::optional<array> add_to_product(const array& a, const array& b, const Stream& s) {
  if (!fusion_enabled() || detail::in_tracing() || a.shape() != b.shape() ||
      a.dtype() != b.dtype() || !issubdtype(a.dtype(), floating) || a.id() == b.id()) {
    return std::nullopt;
  }
  for (int side = 0; side < 2; ++side) {
    const array& p = side == 0 ? b : a;
    const array& r = side == 0 ? a : b;
    if (auto* qmm = absorbable_product(p, s)) {
      std::vector<array> inputs = p.inputs();
      inputs.push_back(r);
      return array(p.shape(), p.dtype(),
                   std::make_shared<QuantizedMatmul>(s, qmm->group_size(), qmm->bits(), true,
                                                     qmm->norm_eps(), true),
                   std::move(inputs));
    }
  }
  return std::nullopt;
}

namespace {

// The node `a` when it is a pending P on stream s with a single output, else nullptr.
template <typename P>
const P* pending_node(const array& a, const Stream& s) {
  if (a.status() != array::Status::unscheduled || !a.has_primitive() || !a.siblings().empty()) {
    return nullptr;
  }
  auto* p = primitive_as<P>(a.primitive());
  return p != nullptr && p->stream() == s ? p : nullptr;
}

// The cache whose leading rows (axis 2) `a` is: the input of a pending slice [0, n) on
// that axis and everything on the others, or `a` itself.
const array& cache_of_rows(const array& a, const Stream& s) {
  auto* sl = pending_node<Slice>(a, s);
  if (sl == nullptr || a.inputs().size() != 1) {
    return a;
  }
  const array& c = a.inputs()[0];
  for (int d = 0; d < 4; ++d) {
    int stop = d == 2 ? a.shape(2) : c.shape(d);
    if (sl->start()[d] != 0 || sl->stop()[d] != stop || sl->strides()[d] != 1) {
      return a;
    }
  }
  return c;
}

bool one_int32(const array& a) {
  return a.dtype() == int32 && a.size() == 1;
}

}  // namespace

namespace {

// When `rows` ([B, H, 1, D]) is a pending reshape of a pending slice of columns
// [c, c + H * D) of a [B, 1, N] array (one part of a stacked q/k/v product, as a model's
// split and head reshape make it), that array and c.
std::optional<std::pair<array, int>> stacked_source(const array& rows, const Stream& s) {
  if (pending_node<Reshape>(rows, s) == nullptr || rows.inputs().size() != 1 || rows.ndim() != 4 ||
      rows.shape(2) != 1) {
    return std::nullopt;
  }
  const array& cols = rows.inputs()[0];
  auto* sl = pending_node<Slice>(cols, s);
  if (sl == nullptr || cols.inputs().size() != 1 || cols.ndim() != 3) {
    return std::nullopt;
  }
  const array& stacked = cols.inputs()[0];
  int b = rows.shape(0), width = rows.shape(1) * rows.shape(3);
  // Dim by dim: a Shape to compare with would be an allocation per check.
  if (stacked.ndim() != 3 || stacked.shape(0) != b || stacked.shape(1) != 1 || cols.shape(0) != b ||
      cols.shape(1) != 1 || cols.shape(2) != width || stacked.dtype() != rows.dtype()) {
    return std::nullopt;
  }
  for (int d = 0; d < 3; ++d) {
    int start = d == 2 ? sl->start()[2] : 0;
    int stop = d == 2 ? start + width : stacked.shape(d);
    if (sl->start()[d] != start || sl->stop()[d] != stop || sl->strides()[d] != 1) {
      return std::nullopt;
    }
  }
  return std::make_pair(stacked, sl->start()[2]);
}

}  // namespace

std::optional<array> attention_over_cache_update(const array& q, const array& keys,
                                                 const array& values, float scale,
                                                 const Stream& s) {
  if (!fusion_enabled() || detail::in_tracing() || s.device != Device::gpu || q.ndim() != 4 ||
      keys.ndim() != 4 || values.ndim() != 4 || q.shape(2) != 1 || keys.shape(2) < 1) {
    return std::nullopt;
  }
  auto* q_rope = pending_node<fast::RoPE>(q, s);
  const array& kc = cache_of_rows(keys, s);
  const array& vc = cache_of_rows(values, s);
  auto* k_rope = pending_node<fast::RoPE>(kc, s);
  auto* v_update = pending_node<DynamicSliceUpdate>(vc, s);
  if (q_rope == nullptr || k_rope == nullptr || v_update == nullptr || q_rope->into() ||
      !k_rope->into() || v_update->axes() != std::vector<int>{2}) {
    return std::nullopt;
  }
  const auto& qi = q.inputs();   // {x, offset, [norm weight]}
  const auto& ki = kc.inputs();  // {x, offset, [norm weight], cache, start}
  const auto& vi = vc.inputs();  // {cache, update, start}
  int d = q.shape(3);
  // Both ropes rotate whole rows alike from one position, with computed frequencies.
  if (q_rope->has_freqs(qi.size()) || k_rope->has_freqs(ki.size()) || q_rope->dims() != d ||
      k_rope->dims() != d || q_rope->traditional() != k_rope->traditional() ||
      q_rope->base() != k_rope->base() || q_rope->scale() != k_rope->scale() ||
      qi[1].id() != ki[1].id() || !one_int32(qi[1]) || ki.back().id() != vi[2].id() ||
      !one_int32(vi[2])) {
    return std::nullopt;
  }
  const array& k_x = ki[0];
  const array& v_x = vi[1];
  int b = q.shape(0), hkv = kc.shape(1), cap = kc.shape(2), dv = vc.shape(3);
  if (kc.shape() != Shape{b, hkv, cap, d} || vc.shape() != Shape{b, hkv, cap, dv} ||
      k_x.shape() != Shape{b, hkv, 1, d} || v_x.shape() != Shape{b, hkv, 1, dv} ||
      kc.dtype() != q.dtype() || vc.dtype() != q.dtype() || v_x.dtype() != q.dtype()) {
    return std::nullopt;
  }
  std::vector<array> inputs{qi[0], k_x, v_x, ki[ki.size() - 2], vi[0], qi[1], vi[2]};
  // The rows straight from a stacked product when all three are its columns: the slice and
  // reshape nodes between are then never evaluated (6 a layer the eval thread no longer
  // walks, evaluates and detaches).
  std::optional<std::array<int, 3>> stacked_cols;
  auto sq = stacked_source(qi[0], s), sk = stacked_source(k_x, s), sv = stacked_source(v_x, s);
  if (sq && sk && sv) {
    stacked_cols = std::array<int, 3>{sq->second, sk->second, sv->second};
    inputs[0] = sq->first;
    inputs[1] = sk->first;
    inputs[2] = sv->first;
  }
  if (q_rope->norm_eps()) {
    inputs.push_back(qi.back());
  }
  if (k_rope->norm_eps()) {
    inputs.push_back(ki[ki.size() - 3]);
  }
  // The caches' nodes take these inputs: none may depend on them, which creation order
  // proves (an array that reads a cache node was made after it).
  uint64_t first = std::min(kc.serial(), vc.serial());
  for (const auto& in : inputs) {
    if (in.serial() >= first) {
      return std::nullopt;
    }
  }
  auto prim = std::make_shared<fast::DecodeAttention>(
      s, scale, keys.shape(2), q_rope->traditional(), q_rope->base(), q_rope->scale(),
      q_rope->norm_eps(), k_rope->norm_eps(), stacked_cols);
  array out(Shape{b, q.shape(1), 1, dv}, q.dtype(), prim, inputs);
  array k_out = kc;
  array v_out = vc;
  for (array* c : {&k_out, &v_out}) {
    c->primitive_ptr() = prim;
    c->inputs() = inputs;
  }
  out.set_siblings({k_out, v_out}, 0);
  k_out.set_siblings({out, v_out}, 1);
  v_out.set_siblings({out, k_out}, 2);
  return out;
}

std::optional<TakenRows> taken_rows(const array& w, const array& scales, const array& biases,
                                    const Stream& s) {
  if (!fusion_enabled() || detail::in_tracing() || s.device != Device::gpu) {
    return std::nullopt;
  }
  const array* src[3];
  const array* ids = nullptr;
  const array* taken[3] = {&w, &scales, &biases};
  for (int i = 0; i < 3; ++i) {
    auto* take = pending_node<Take>(*taken[i], s);
    if (take == nullptr || take->axis() != 0 || taken[i]->inputs().size() != 2) {
      return std::nullopt;
    }
    src[i] = &taken[i]->inputs()[0];
    const array& idx = taken[i]->inputs()[1];
    if (ids != nullptr && idx.id() != ids->id()) {
      return std::nullopt;
    }
    ids = &idx;
    if (src[i]->ndim() != 2 || src[i]->shape(0) != src[0]->shape(0)) {
      return std::nullopt;
    }
  }
  if (ids->dtype() != int32 && ids->dtype() != uint32) {
    return std::nullopt;
  }
  return TakenRows{*src[0], *src[1], *src[2], *ids};
}

}  // namespace mlx::core
