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
      a.status() != array::Status::unscheduled ||
      !a.siblings().empty()) {
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

// The decode-sized quantized product that `p` will be, when an add may take it over.
const QuantizedMatmul* absorbable_product(const array& p, const Stream& s) {
  if (!p.has_primitive() || p.status() != array::Status::unscheduled || !p.siblings().empty()) {
    return nullptr;
  }
  auto* qmm = dynamic_cast<const QuantizedMatmul*>(&p.primitive());
  if (qmm == nullptr || qmm->stream() != s || qmm->residual() || !qmm->transpose()) {
    return nullptr;
  }
  const array& x = p.inputs()[0];
  const array& w = p.inputs()[1];
  bool decode_sized = x.shape(-1) > 0 && x.size() / x.shape(-1) <= 8;
  return w.ndim() == 2 && decode_sized ? qmm : nullptr;
}

}  // namespace

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
