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
  float upper = std::nextafter(1.0f, 0.0f);
  if (dtype == float16) {
    upper = static_cast<float>(float16_t::from_bits(0x3bffu));  // the largest below 1
  } else if (dtype == bfloat16) {
    upper = static_cast<float>(bfloat16_t::from_bits(0x3f7fu));
  }
  auto u = divide(raw, array(static_cast<float>(std::numeric_limits<uint32_t>::max()), float32), s);
  u = astype(minimum(u, array(upper, float32), s), dtype, s);
  return below_high(add(multiply(range, u, s), lo, s));
}

array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        "[uniform] can only generate uniform numbers with real floating point dtypes, got " +
        dtype_to_string(dtype) + ".");
  }
  return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
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

}  // namespace mlx::core::random
