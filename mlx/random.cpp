// Counter-based random numbers: keys, splitting, raw bits and the distributions built on
// them. Everything is an op graph over RandomBits, so results are lazy and reproducible.
#include "mlx/random.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core::random {

namespace {

std::string op_label(const char* op) {
  return std::string("[") + op + "] ";
}

void check_key(const array& key, const char* op) {
  if (key.dtype() != uint32 || key.ndim() != 1 || key.shape(0) != 2) {
    throw std::invalid_argument(
        op_label(op) + "expected a key of dtype uint32 and shape (2,), got " +
        dtype_to_string(key.dtype()) + " of shape " + shape_to_string(key.shape()) + ".");
  }
}

void check_shape(const Shape& shape, const char* op) {
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(op_label(op) + "negative dimension in shape " +
                                  shape_to_string(shape) + ".");
    }
  }
}

// The default key, used when a function gets no key: each use splits it, keeps one half
// and hands out the other, as MLX's KeySequence. As in MLX each thread has its own sequence
// (seed() reseeds the calling thread's); here every sequence starts from key(0), where MLX
// starts from the clock (docs/compatibility.md).
class KeySequence {
 public:
  void seed(uint64_t s) {
    key_ = key(s);
  }
  array next() {
    if (!key_) {
      key_ = key(0);
    }
    auto [kept, handed_out] = random::split(*key_);
    key_ = kept;
    return handed_out;
  }

 private:
  std::optional<array> key_;
};

// Never destroyed: an array held past exit could outlive the allocator.
KeySequence& global_keys() {
  thread_local auto* keys = new KeySequence();
  return *keys;
}

array resolve_key(const std::optional<array>& key, const char* op) {
  if (key) {
    check_key(*key, op);
    return *key;
  }
  return global_keys().next();
}

// Checks that low/high broadcast to exactly `shape`.
void check_bounds_shape(const array& low, const array& high, const Shape& shape, const char* op) {
  Shape bounds;
  bool ok = true;
  try {
    bounds = broadcast_shapes(low.shape(), high.shape());
    ok = broadcast_shapes(shape, bounds) == shape;
  } catch (const std::invalid_argument&) {
    ok = false;
  }
  if (!ok) {
    throw std::invalid_argument(op_label(op) + "low (shape " + shape_to_string(low.shape()) +
                                ") and high (shape " + shape_to_string(high.shape()) +
                                ") do not broadcast to the requested shape " +
                                shape_to_string(shape) + ".");
  }
}

// Machine epsilon, smallest normal and smallest subnormal of a float dtype.
struct FloatLimits {
  double eps, tiny, denorm_min;
};
FloatLimits float_limits(Dtype dt) {
  if (dt == float16)
    return {0x1.0p-10, 0x1.0p-14, 0x1.0p-24};
  if (dt == bfloat16)
    return {0x1.0p-7, 0x1.0p-126, 0x1.0p-133};
  if (dt == float32)
    return {0x1.0p-23, 0x1.0p-126, 0x1.0p-149};
  return {0x1.0p-52, 0x1.0p-1022, 0x1.0p-1074};
}

// A value of `dt` strictly below each element of hi, rounding to nearest. For hi > 0,
// hi - max(hi * eps / 2, denorm_min) is exactly hi's predecessor (the step is half to one
// ulp, or the subnormal spacing). For hi <= 0, hi - max(|hi| * eps, tiny) is one or two
// ulps below (a half-ulp step would tie back to hi at powers of two).
array below(const array& hi, Dtype dt, StreamOrDevice s) {
  auto lim = float_limits(dt);
  auto pos_step = maximum(multiply(hi, array(lim.eps / 2, dt), s), array(lim.denorm_min, dt), s);
  auto neg_step = maximum(multiply(abs(hi, s), array(lim.eps, dt), s), array(lim.tiny, dt), s);
  auto step = where(greater(hi, array(0.0, dt), s), pos_step, neg_step, s);
  return subtract(hi, step, s);
}

// MLX's u in [0, 1) from 32 random bits: bits / (2^32 - 1) in float32, capped at the
// largest value below 1 in the output dtype's precision, cast to dtype (not float64).
array unit_uniform(const array& raw, Dtype dtype, StreamOrDevice s) {
  float upper = std::nextafter(1.0f, 0.0f);
  if (dtype == float16) {
    upper = static_cast<float>(float16_t::from_bits(0x3bffu));  // the largest below 1
  } else if (dtype == bfloat16) {
    upper = static_cast<float>(bfloat16_t::from_bits(0x3f7fu));
  }
  auto u = divide(raw, array(static_cast<float>(std::numeric_limits<uint32_t>::max()), float32), s);
  return astype(minimum(u, array(upper, float32), s), dtype, s);
}

}  // namespace

array key(uint64_t seed) {
  uint32_t words[2] = {static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)};
  return array(words, Shape{2}, uint32);
}

void seed(uint64_t s) {
  global_keys().seed(s);
}

array bits(const Shape& shape, int width, const std::optional<array>& key, StreamOrDevice s) {
  if (width != 1 && width != 2 && width != 4) {
    throw std::invalid_argument("[bits] width must be 1, 2 or 4 bytes, got " +
                                std::to_string(width) + ".");
  }
  check_shape(shape, "bits");
  auto k = resolve_key(key, "bits");
  Dtype dt = width == 1 ? uint8 : width == 2 ? uint16 : uint32;
  return array(shape, dt, std::make_shared<RandomBits>(to_stream(s), shape, width), {k});
}

array split(const array& key, int num, StreamOrDevice s) {
  check_key(key, "split");
  if (num < 0) {
    throw std::invalid_argument("[split] the number of keys must be non-negative, got " +
                                std::to_string(num) + ".");
  }
  // Each new key is one 64-bit block of the key's bit stream.
  return bits({num, 2}, 4, key, s);
}

std::pair<array, array> split(const array& key, StreamOrDevice s) {
  auto keys = random::split(key, 2, s);
  return {reshape(slice(keys, {0, 0}, {1, 2}, s), {2}, s),
          reshape(slice(keys, {1, 0}, {2, 2}, s), {2}, s)};
}

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[uniform] can only generate uniform numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "uniform");
  check_bounds_shape(low, high, shape, "uniform");
  auto lo = astype(low, dtype, s);
  auto range = subtract(astype(high, dtype, s), lo, s);
  // MLX's mapping, op for op, so a key draws the same values as in MLX: u = bits / 2^32
  // in float32, capped just below 1 (in the output dtype's precision), then
  // range * u + lo in the output dtype. float64 (CPU only, not in MLX) uses all 32 bits.
  auto raw = bits(shape, 4, key, s);
  auto hi = astype(high, dtype, s);
  // MLX's last step can round up to high (1 + u with u just below 1 ties to 2). Only those
  // values move, to the largest value below high, so every other draw equals MLX's.
  auto below_high = [&](const array& out) {
    auto rounded_up = logical_and(greater_equal(out, hi, s), less(lo, hi, s), s);
    return where(rounded_up, below(hi, dtype, s), out, s);
  };
  if (dtype == float64) {
    auto u = multiply(astype(raw, float64, s), array(0x1.0p-32, float64), s);
    return below_high(add(multiply(range, u, s), lo, s));
  }
  return below_high(add(multiply(range, unit_uniform(raw, dtype, s), s), lo, s));
}

array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[uniform] can only generate uniform numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  if (dtype == float64) {
    return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
  }
  // [0, 1): the mapping above with range 1 and low 0 is u itself (1 * u and u + 0 are
  // exact for u >= 0, and u <= upper < 1 never rounds up to high), so the same values in
  // 3 launches instead of ~12 (a sampling step draws one such number per token).
  check_shape(shape, "uniform");
  return unit_uniform(bits(shape, 4, key, s), dtype, s);
}

array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
             const std::optional<array>& scale, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[normal] can only generate normal numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "normal");
  // As MLX: sqrt(2) * erfinv(u) with u uniform in [nextafter(-1, 0), 1) in float32 (float64
  // for float64 outputs), scaled and shifted in the output dtype.
  Dtype ct = dtype == float64 ? float64 : float32;
  double open_low =
      ct == float64 ? std::nextafter(-1.0, 0.0) : static_cast<double>(std::nextafter(-1.0f, 0.0f));
  auto u = uniform(array(open_low, ct), array(1.0, ct), shape, ct, key, s);
  auto applied_scale = array(std::sqrt(2.0), dtype);
  if (scale) {
    applied_scale = multiply(applied_scale, astype(*scale, dtype, s), s);
  }
  auto z = multiply(applied_scale, astype(erfinv(u, s), dtype, s), s);
  if (loc) {
    z = add(astype(*loc, dtype, s), z, s);
  }
  return z;
}

array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const std::optional<array>& key, StreamOrDevice s) {
  std::optional<array> loc_arr, scale_arr;
  if (loc != 0.0f) {
    loc_arr = array(loc);
  }
  if (scale != 1.0f) {
    scale_arr = array(scale);
  }
  return normal(shape, dtype, loc_arr, scale_arr, key, s);
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const std::optional<array>& key, StreamOrDevice s) {
  if (!is_integral(dtype) && dtype != bool_) {
    throw std::invalid_argument("[randint] can only generate integer dtypes and bool, got " +
                                dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "randint");
  check_bounds_shape(low, high, shape, "randint");
  // As MLX: floor of a float32 uniform in [low, high), clamped to [low, high - 1] because
  // low and high may not be exact in float32.
  auto u = uniform(low, high, shape, float32, key, s);
  auto out = astype(floor(u, s), dtype, s);
  auto hi = astype(subtract(high, array(1, high.dtype()), s), dtype, s);
  return maximum(minimum(out, hi, s), astype(low, dtype, s), s);
}

array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key,
                StreamOrDevice s) {
  if (!is_floating_point(p.dtype())) {
    throw std::invalid_argument("[bernoulli] p must have a floating point dtype, got " +
                                dtype_to_string(p.dtype()) + ".");
  }
  check_shape(shape, "bernoulli");
  bool ok = true;
  try {
    ok = broadcast_shapes(shape, p.shape()) == shape;
  } catch (const std::invalid_argument&) {
    ok = false;
  }
  if (!ok) {
    throw std::invalid_argument("[bernoulli] p of shape " + shape_to_string(p.shape()) +
                                " does not broadcast to the requested shape " +
                                shape_to_string(shape) + ".");
  }
  // As MLX: p on the scale [0, nextafter(2^32)], so p >= 1 is always true (every 32-bit
  // value, as a float32, is at most 2^32) and p <= 0 always false.
  float upper = std::nextafter(static_cast<float>(std::numeric_limits<uint32_t>::max()),
                               std::numeric_limits<float>::max());
  return less(bits(shape, key, s), multiply(p, array(upper, float32), s), s);
}

array bernoulli(const array& p, const std::optional<array>& key, StreamOrDevice s) {
  return bernoulli(p, p.shape(), key, s);
}

array bernoulli(const std::optional<array>& key, StreamOrDevice s) {
  return bernoulli(array(0.5f), key, s);
}

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype,
                       const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[truncated_normal] can only generate truncated normal numbers with real floating "
        "point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "truncated_normal");
  check_bounds_shape(lower, upper, shape, "truncated_normal");
  // As MLX (and JAX): a uniform between the bounds' normal CDFs (up to the factor 2 and
  // shift 1 of erf), mapped back through sqrt(2) * erfinv and clipped to [lower, upper].
  auto sqrt2 = array(std::sqrt(2.0), dtype);
  auto lower_t = astype(lower, dtype, s);
  auto upper_t = astype(upper, dtype, s);
  auto a = erf(divide(lower_t, sqrt2, s), s);
  auto b = erf(divide(upper_t, sqrt2, s), s);
  auto u = uniform(a, b, shape, dtype, key, s);
  auto out = multiply(sqrt2, erfinv(u, s), s);
  return maximum(minimum(upper_t, out, s), lower_t, s);
}

array truncated_normal(const array& lower, const array& upper, Dtype dtype,
                       const std::optional<array>& key, StreamOrDevice s) {
  Shape shape;
  try {
    shape = broadcast_shapes(lower.shape(), upper.shape());
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("[truncated_normal] lower (shape " +
                                shape_to_string(lower.shape()) + ") and upper (shape " +
                                shape_to_string(upper.shape()) + ") do not broadcast.");
  }
  return truncated_normal(lower, upper, shape, dtype, key, s);
}

array gumbel(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[gumbel] can only generate Gumbel numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "gumbel");
  return negative(log(negative(log(uniform(shape, dtype, key, s), s), s), s), s);
}

namespace {

int categorical_axis(const array& logits, int axis) {
  int ndim = static_cast<int>(logits.ndim());
  int ax = axis < 0 ? axis + ndim : axis;
  if (ax < 0 || ax >= ndim) {
    throw std::invalid_argument("[categorical] axis " + std::to_string(axis) +
                                " is out of range for logits with " + std::to_string(ndim) +
                                " dimensions.");
  }
  if (logits.shape(ax) == 0) {
    throw std::invalid_argument("[categorical] the logits have no categories along axis " +
                                std::to_string(axis) + " (shape " +
                                shape_to_string(logits.shape()) + ").");
  }
  return ax;
}

// MLX's inverse CDF for one distribution: u * sum(w) looked up in the exclusive cumsum of
// w = exp(x - max) (the maximal entries, uniformly, when the max is infinite). MLX looks up
// with searchsorted(cdf, u, "right") - 1; the count of cdf values <= u is the same index
// for the sorted cdf, and runs on both devices through elementwise ops and a sum, at the
// cost of a (samples x categories) comparison (docs/random.md).
array categorical_inverse_cdf(const array& logits, const Shape& shape,
                              const std::optional<array>& key, StreamOrDevice s) {
  auto dtype = promote_types(logits.dtype(), float32);
  auto x = astype(logits, dtype, s);
  auto m = max(x, s);
  auto w = where(isinf(m, s), astype(equal(x, m, s), dtype, s), exp(subtract(x, m, s), s), s);
  auto cdf = cumsum(w, 0, /* reverse */ false, /* inclusive */ false, std::nullopt, s);
  auto u = multiply(uniform(shape, float32, key, s), sum(w, s), s);
  auto at_or_below = less_equal(cdf, expand_dims(u, -1, s), s);
  auto count = astype(sum(at_or_below, -1, false, s), uint32, s);
  return subtract(count, array(1u, uint32), s);
}

array categorical_impl(const array& logits, int axis, const Shape& shape,
                       const std::optional<array>& key, StreamOrDevice s) {
  auto n = logits.shape(axis);
  if (logits.size() == static_cast<size_t>(n) && !shape.empty()) {
    return categorical_inverse_cdf(reshape(logits, {n}, s), shape, key, s);
  }
  auto gumbel_shape = shape;
  int offset = axis + static_cast<int>(shape.size()) - static_cast<int>(logits.ndim()) + 1;
  gumbel_shape.insert(gumbel_shape.begin() + offset, n);
  auto g = gumbel(gumbel_shape, float32, key, s);
  return argmax(add(g, logits, s), offset, false, s);
}

}  // namespace

array categorical(const array& logits, int axis, const Shape& shape,
                  const std::optional<array>& key, StreamOrDevice s) {
  axis = categorical_axis(logits, axis);
  check_shape(shape, "categorical");
  auto reduced = logits.shape();
  reduced.erase(reduced.begin() + axis);
  bool ok = true;
  try {
    ok = broadcast_shapes(shape, reduced) == shape;
  } catch (const std::invalid_argument&) {
    ok = false;
  }
  if (!ok) {
    throw std::invalid_argument("[categorical] the requested shape " + shape_to_string(shape) +
                                " does not broadcast with the logits' shape without the axis, " +
                                shape_to_string(reduced) + ".");
  }
  return categorical_impl(logits, axis, shape, key, s);
}

array categorical(const array& logits_, int axis, int num_samples, const std::optional<array>& key,
                  StreamOrDevice s) {
  axis = categorical_axis(logits_, axis);
  if (num_samples < 0) {
    throw std::invalid_argument("[categorical] num_samples must be non-negative, got " +
                                std::to_string(num_samples) + ".");
  }
  auto logits = expand_dims(logits_, -1, s);
  auto shape = logits.shape();
  shape.erase(shape.begin() + axis);
  shape.back() = num_samples;
  return categorical_impl(logits, axis, shape, key, s);
}

array categorical(const array& logits, int axis, const std::optional<array>& key,
                  StreamOrDevice s) {
  axis = categorical_axis(logits, axis);
  auto shape = logits.shape();
  shape.erase(shape.begin() + axis);
  return categorical_impl(logits, axis, shape, key, s);
}

array laplace(const Shape& shape, Dtype dtype, const float loc, const float scale,
              const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[laplace] can only generate Laplace numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "laplace");
  // As MLX: sign(u) * log1p(-|u|) for u uniform in [nextafter(-1, 0), 1) in float32.
  auto u = uniform(array(std::nextafter(-1.0f, 0.0f), float32), array(1.0f, float32), shape,
                   float32, key, s);
  auto samples = multiply(sign(u, s), log1p(multiply(array(-1.0f, dtype), abs(u, s), s), s), s);
  samples = astype(samples, dtype, s);
  if (scale != 1.0f) {
    samples = multiply(array(scale, dtype), samples, s);
  }
  if (loc != 0.0f) {
    samples = add(array(loc, dtype), samples, s);
  }
  return samples;
}

array permutation(const array& x, int axis, const std::optional<array>& key, StreamOrDevice s) {
  int ndim = static_cast<int>(x.ndim());
  int ax = axis < 0 ? axis + ndim : axis;
  if (ax < 0 || ax >= ndim) {
    throw std::invalid_argument("[permutation] axis " + std::to_string(axis) +
                                " is out of range for an array with " + std::to_string(ndim) +
                                " dimensions.");
  }
  return take(x, permutation(x.shape(ax), key, s), ax, s);
}

array permutation(int x, const std::optional<array>& key, StreamOrDevice s) {
  if (x < 0) {
    throw std::invalid_argument("[permutation] the size must be non-negative, got " +
                                std::to_string(x) + ".");
  }
  // As MLX: the order that sorts x random 32-bit values.
  return argsort(bits({x}, key, s), s);
}

}  // namespace mlx::core::random
