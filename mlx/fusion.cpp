// Producer absorption while a graph is built (mlx/fusion.h, docs/fusion.md).
#include "mlx/fusion.h"

#include <atomic>
#include <cstdlib>

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

bool fusion_enabled() {
  return fusion_flag().load(std::memory_order_relaxed);
}

std::optional<NormPrologue> absorbable_rms_norm(const array& a, const Stream& s) {
  if (!fusion_enabled() || detail::in_tracing() || !a.has_primitive() ||
      a.status() != array::Status::unscheduled || !a.siblings().empty()) {
    return std::nullopt;
  }
  auto* norm = dynamic_cast<const fast::RMSNorm*>(&a.primitive());
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
  if (!p.has_primitive() || p.status() != array::Status::unscheduled || !p.siblings().empty()) {
    return nullptr;
  }
  auto* qmm = dynamic_cast<const QuantizedMatmul*>(&p.primitive());
  if (qmm == nullptr || qmm->stream() != s || qmm->residual() || qmm->glu() ||
      !qmm->transpose()) {
    return nullptr;
  }
  return p.inputs()[1].ndim() == 2 && decode_sized(p) ? qmm : nullptr;
}

bool is_node(const array& a, const array& node) {
  return a.id() == node.id();
}

// A unary `op` node of `in`, or a binary `op` node of {a, b} in either order.
bool unary_of(const array& n, UnaryOp op, const array& in) {
  auto* u = n.has_primitive() ? dynamic_cast<const Unary*>(&n.primitive()) : nullptr;
  return u && u->op() == op && n.inputs().size() == 1 && is_node(n.inputs()[0], in);
}
bool binary_of(const array& n, BinaryOp op, const array& a, const array& b) {
  auto* bin = n.has_primitive() ? dynamic_cast<const Binary*>(&n.primitive()) : nullptr;
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
  if (!a.has_primitive() || a.status() != array::Status::unscheduled || a.inputs().size() != 1 ||
      !is_node(a.inputs()[0], p)) {
    return false;
  }
  auto* sl = dynamic_cast<const Slice*>(&a.primitive());
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
  if (!fusion_enabled() || detail::in_tracing() || !h.has_primitive() ||
      h.status() != array::Status::unscheduled || !h.siblings().empty() || h.inputs().size() != 2) {
    return std::nullopt;
  }
  auto* comp = dynamic_cast<const Compiled*>(&h.primitive());
  if (comp == nullptr || comp->stream() != s || !is_swiglu(*comp)) {
    return std::nullopt;
  }
  const array& g = h.inputs()[0];
  const array& u = h.inputs()[1];
  if (g.inputs().size() != 1) {
    return std::nullopt;
  }
  const array& p = g.inputs()[0];
  if (!p.has_primitive() || p.status() != array::Status::unscheduled || !p.siblings().empty() ||
      p.ndim() < 1 || p.shape(-1) % 2 != 0 || p.dtype() != h.dtype()) {
    return std::nullopt;
  }
  auto* qmm = dynamic_cast<const QuantizedMatmul*>(&p.primitive());
  int half = p.shape(-1) / 2;
  if (qmm == nullptr || qmm->stream() != s || qmm->residual() || qmm->glu() ||
      !qmm->transpose() || p.inputs()[1].ndim() != 2 || !last_axis_slice(g, p, 0, half) ||
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
  if (!fusion_enabled() || detail::in_tracing() || !update.has_primitive() ||
      update.status() != array::Status::unscheduled || !update.siblings().empty() ||
      update.dtype() != src.dtype() || update.ndim() != src.ndim() || nd < 3 ||
      axes.size() != 1 || axes[0] != nd - 2 || start.dtype() != int32 || start.size() != 1) {
    return std::nullopt;
  }
  auto* rope = dynamic_cast<const fast::RoPE*>(&update.primitive());
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

}  // namespace mlx::core
