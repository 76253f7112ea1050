// Ops that repeat or lay out values, composed of reshape and broadcast (views, copied once
// when a later op needs them dense): tile, repeat and meshgrid; and nan_to_num, a where()
// chain. Being compositions, they run on any device that runs their parts.
#include <climits>
#include <limits>
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

int checked_product(int64_t a, int64_t b, const char* op) {
  int64_t v = a * b;
  if (v > INT_MAX) {
    throw std::invalid_argument(std::string("[") + op + "] the result would have a dimension of " +
                                std::to_string(v) + ", more than 2^31 - 1.");
  }
  return static_cast<int>(v);
}

}  // namespace

array tile(const array& arr, std::vector<int> reps, StreamOrDevice s) {
  Shape shape = arr.shape();
  // Pad the shorter of shape and reps with leading 1s.
  while (reps.size() < shape.size()) {
    reps.insert(reps.begin(), 1);
  }
  while (shape.size() < reps.size()) {
    shape.insert(shape.begin(), 1);
  }
  // Each repeated axis gets a size-1 axis in front of it, broadcast to the repeat count.
  Shape with_ones, broadcast, result;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reps[i] < 0) {
      throw std::invalid_argument("[tile] reps must be non-negative, got " +
                                  std::to_string(reps[i]) + ".");
    }
    if (reps[i] != 1) {
      with_ones.push_back(1);
      broadcast.push_back(reps[i]);
    }
    with_ones.push_back(shape[i]);
    broadcast.push_back(shape[i]);
    result.push_back(checked_product(reps[i], shape[i], "tile"));
  }
  return reshape(broadcast_to(reshape(arr, with_ones, s), broadcast, s), result, s);
}

array repeat(const array& arr, int repeats, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, static_cast<int>(arr.ndim()), "repeat");
  if (repeats < 0) {
    throw std::invalid_argument("[repeat] Number of repeats cannot be negative");
  }
  if (repeats == 1) {
    return arr;
  }
  // A size-`repeats` axis after `ax`, then merged into it: each element repeats in place.
  Shape spread = arr.shape();
  spread.insert(spread.begin() + ax + 1, repeats);
  Shape result = arr.shape();
  result[ax] = checked_product(result[ax], repeats, "repeat");
  return reshape(broadcast_to(expand_dims(arr, ax + 1, s), spread, s), result, s);
}

array repeat(const array& arr, int repeats, StreamOrDevice s) {
  return repeat(flatten(arr, s), repeats, 0, s);
}

std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse,
                            const std::string& indexing, StreamOrDevice s) {
  if (indexing != "xy" && indexing != "ij") {
    throw std::invalid_argument(
        "[meshgrid] Invalid indexing value. Valid values are 'xy' and 'ij'.");
  }
  int n = static_cast<int>(arrays.size());
  std::vector<array> out;
  for (int i = 0; i < n; ++i) {
    // Array i varies along axis i; "xy" (Cartesian) swaps the first two axes.
    int along = indexing == "xy" && n > 1 && i < 2 ? 1 - i : i;
    Shape shape(n, 1);
    shape[along] = static_cast<int>(arrays[i].size());
    out.push_back(reshape(arrays[i], shape, s));
  }
  return sparse ? out : broadcast_arrays(out, s);
}

array nan_to_num(const array& a, float nan, const std::optional<float> posinf,
                 const std::optional<float> neginf, StreamOrDevice s) {
  Dtype dt = a.dtype();
  if (!issubdtype(dt, inexact)) {
    return a;
  }
  float largest;
  if (dt == float32) {
    largest = std::numeric_limits<float>::max();
  } else if (dt == float16) {
    largest = 65504.0f;
  } else if (dt == bfloat16) {
    largest = 3.38953139e38f;  // bfloat16's largest finite value, (2 - 2^-7) * 2^127
  } else {
    throw std::invalid_argument(
        "[nan_to_num] Does not yet support given type: " + dtype_to_string(dt) + ".");
  }
  auto fill = [&](float v) { return array(v, dt); };
  auto out = where(isnan(a, s), fill(nan), a, s);
  auto inf = isinf(a, s);
  out =
      where(logical_and(inf, greater(a, fill(0.0f), s), s), fill(posinf.value_or(largest)), out, s);
  return where(logical_and(inf, less(a, fill(0.0f), s), s), fill(neginf.value_or(-largest)), out,
               s);
}

}  // namespace mlx::core
