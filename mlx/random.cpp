// Counter-based random numbers: keys, splitting, raw bits and the distributions built on
// them. Everything is an op graph over RandomBits, so results are lazy and reproducible.
#include "mlx/random.h"

#include <cmath>
#include <limits>
#include <mutex>

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

// The global key, used when a function gets no key: each use splits it, keeps one half
// and hands out the other, as MLX's KeySequence.
class KeySequence {
 public:
  void seed(uint64_t s) {
    std::lock_guard lk(mtx_);
    key_ = key(s);
  }
  array next() {
    std::lock_guard lk(mtx_);
    if (!key_) {
      key_ = key(0);
    }
    auto [kept, handed_out] = random::split(*key_);
    key_ = kept;
    return handed_out;
  }

 private:
  std::mutex mtx_;
  std::optional<array> key_;
};

// Never destroyed: a static array could outlive the allocator at exit.
KeySequence& global_keys() {
  static auto* keys = new KeySequence();
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
  auto hi = astype(high, dtype, s);
  // u in [0, 1) on a grid of 2^-24 (the top 24 bits, exact in float32) or 2^-32 for float64.
  // 16-bit outputs are computed in float32 and rounded once.
  Dtype ct = dtype == float64 ? float64 : float32;
  auto raw = bits(shape, 4, key, s);
  auto u = ct == float32 ? multiply(astype(right_shift(raw, array(8, uint32), s), float32, s),
                                    array(0x1.0p-24f, float32), s)
                         : multiply(astype(raw, float64, s), array(0x1.0p-32, float64), s);
  auto lo_c = astype(lo, ct, s);
  auto hi_c = astype(hi, ct, s);
  auto out = astype(add(lo_c, multiply(subtract(hi_c, lo_c, s), u, s), s), dtype, s);
  // lo + (hi - lo) * u can round up to hi; such values move just below hi.
  auto rounded_up = logical_and(greater_equal(out, hi, s), less(lo, hi, s), s);
  return where(rounded_up, below(hi, dtype, s), out, s);
}

array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[uniform] can only generate uniform numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
}

array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[normal] can only generate normal numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "normal");
  // sqrt(2) * erfinv(u) for u uniform in (-1, 1), in float32 (float64 for float64) so the
  // tails of 16-bit outputs are not cut by a coarse uniform grid.
  Dtype ct = dtype == float64 ? float64 : float32;
  double open_low =
      ct == float64 ? std::nextafter(-1.0, 0.0) : static_cast<double>(std::nextafter(-1.0f, 0.0f));
  auto u = uniform(array(open_low, ct), array(1.0, ct), shape, ct, key, s);
  auto z = multiply(erfinv(u, s), array(std::sqrt(2.0), ct), s);
  if (scale != 1.0f) {
    z = multiply(z, array(scale, ct), s);
  }
  if (loc != 0.0f) {
    z = add(z, array(loc, ct), s);
  }
  return astype(z, dtype, s);
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const std::optional<array>& key, StreamOrDevice s) {
  if (!is_integral(dtype)) {
    throw std::invalid_argument("[randint] can only generate integer dtypes, got " +
                                dtype_to_string(dtype) + ".");
  }
  check_shape(shape, "randint");
  check_bounds_shape(low, high, shape, "randint");
  auto k = resolve_key(key, "randint");
  auto [k_hi, k_lo] = random::split(k, s);
  // 64 random bits per element, reduced modulo the range: the bias is at most
  // range / 2^64, negligible for every dtype (32 bits would bias large int32 ranges).
  auto word = [&](const array& kk) { return astype(bits(shape, 4, kk, s), uint64, s); };
  auto r64 = bitwise_or(left_shift(word(k_hi), array(32, uint64), s), word(k_lo), s);
  auto lo = astype(low, dtype, s);
  auto hi = astype(high, dtype, s);
  // The range in uint64 (two's-complement difference, exact whenever hi > lo).
  auto lo_u = astype(lo, uint64, s);
  auto valid = less(lo, hi, s);
  auto range = where(valid, subtract(astype(hi, uint64, s), lo_u, s), array(1, uint64), s);
  auto offset = remainder(r64, range, s);
  auto out = astype(add(lo_u, offset, s), dtype, s);
  // An empty range (high <= low) yields low.
  return where(valid, out, broadcast_to(lo, shape, s), s);
}

}  // namespace mlx::core::random
