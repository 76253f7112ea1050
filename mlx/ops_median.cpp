// median: the axes moved last and flattened, sorted, and the middle taken (the mean of the two
// middle values for an even count), in at least a float dtype. Sorting puts NaN last, which
// the middle would skip, so a NaN anywhere along the axes gives NaN (as max, min and mean do,
// and as MLX). Composed of sort and slices, it runs on either device.
#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/utils.h"

namespace mlx::core {

array median(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  std::vector<int> reduced;
  for (int ax : axes) {
    reduced.push_back(normalize_axis(ax, ndim, "median"));
  }
  std::sort(reduced.begin(), reduced.end());
  if (std::adjacent_find(reduced.begin(), reduced.end()) != reduced.end()) {
    throw std::invalid_argument("[median] Received duplicate axis.");
  }
  std::vector<int> order;
  for (int d = 0; d < ndim; ++d) {
    if (!std::binary_search(reduced.begin(), reduced.end(), d)) {
      order.push_back(d);
    }
  }
  int kept = static_cast<int>(order.size());
  order.insert(order.end(), reduced.begin(), reduced.end());
  auto x = transpose(a, order, s);
  x = reduced.empty() ? expand_dims(x, -1, s) : flatten(x, kept, ndim - 1, s);
  int n = x.shape(-1);
  if (n == 0) {
    throw std::invalid_argument("[median] Cannot take median along empty axis.");
  }
  Dtype dt = at_least_float(a.dtype());
  auto sorted = sort(x, -1, s);
  auto middle = [&](int i) {
    Shape start(sorted.ndim(), 0);
    Shape stop = sorted.shape();
    start.back() = i;
    stop.back() = i + 1;
    return astype(slice(sorted, start, stop, s), dt, s);
  };
  auto m = middle(n / 2);
  if (n % 2 == 0) {
    m = multiply(add(m, middle(n / 2 - 1), s), array(0.5, dt), s);
  }
  if (issubdtype(a.dtype(), inexact)) {
    auto has_nan = any(isnan(x, s), -1, true, s);
    m = where(has_nan, array(std::numeric_limits<float>::quiet_NaN(), dt), m, s);
  }
  m = squeeze(m, -1, s);
  return keepdims ? expand_dims(m, reduced, s) : m;
}

array median(const array& a, bool keepdims, StreamOrDevice s) {
  std::vector<int> all(a.ndim());
  std::iota(all.begin(), all.end(), 0);
  return median(a, all, keepdims, s);
}

array median(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return median(a, std::vector<int>{axis}, keepdims, s);
}

}  // namespace mlx::core
