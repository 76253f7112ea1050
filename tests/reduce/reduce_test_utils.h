// Double-precision references for the reduction tests.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "test_utils.h"

namespace reduce_test {

namespace mx = mlx::core;

// The dtypes a numeric reduction accepts (complex64 is tested separately where supported).
inline const std::vector<mx::Dtype>& real_dtypes() {
  static const std::vector<mx::Dtype> dts = {
      mx::bool_, mx::uint8, mx::uint16,  mx::uint32,   mx::uint64,  mx::int8,   mx::int16,
      mx::int32, mx::int64, mx::float16, mx::bfloat16, mx::float32, mx::float64};
  return dts;
}

inline std::vector<int> normalized(std::vector<int> axes, int ndim) {
  for (auto& a : axes)
    a = a < 0 ? a + ndim : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

inline mx::Shape keepdims_shape(const mx::Shape& shape, const std::vector<int>& sorted_axes) {
  mx::Shape out = shape;
  for (int a : sorted_axes)
    out[a] = 1;
  return out;
}

inline mx::Shape squeezed_shape(const mx::Shape& shape, const std::vector<int>& sorted_axes) {
  mx::Shape out;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (!std::binary_search(sorted_axes.begin(), sorted_axes.end(), i))
      out.push_back(shape[i]);
  }
  return out;
}

inline size_t shape_size(const mx::Shape& s) {
  size_t n = 1;
  for (auto d : s)
    n *= static_cast<size_t>(d);
  return n;
}

// Groups the row-major values `x` of `shape` by output element (reduced axes collapsed);
// returns one vector of inputs per output element, in the output's row-major order.
inline std::vector<std::vector<double>> group_by_output(const std::vector<double>& x,
                                                        const mx::Shape& shape,
                                                        const std::vector<int>& sorted_axes) {
  auto oshape = keepdims_shape(shape, sorted_axes);
  std::vector<std::vector<double>> groups(shape_size(oshape));
  int nd = static_cast<int>(shape.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t rem = i, out = 0, ostride = 1;
    for (int d = nd - 1; d >= 0; --d) {
      size_t idx = rem % shape[d];
      rem /= shape[d];
      out += (oshape[d] == 1 ? 0 : idx) * ostride;
      ostride *= oshape[d];
    }
    groups[out].push_back(x[i]);
  }
  return groups;
}

inline std::vector<double> ref_reduce(const std::vector<double>& x, const mx::Shape& shape,
                                      const std::vector<int>& sorted_axes,
                                      const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> out;
  for (auto& g : group_by_output(x, shape, sorted_axes))
    out.push_back(f(g));
  return out;
}

inline double ref_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g)
    s += v;
  return s;
}
inline double ref_abs_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g)
    s += std::abs(v);
  return s;
}

inline std::string label(const std::string& op, mx::Dtype dt, const mx::Shape& shape,
                         const std::vector<int>& axes, bool keepdims) {
  std::ostringstream os;
  os << op << " " << dt << " shape " << mx::shape_to_string(shape) << " axes (";
  for (size_t i = 0; i < axes.size(); ++i)
    os << (i ? "," : "") << axes[i];
  os << ") keepdims " << keepdims;
  return os.str();
}

// Shapes and axes every reduction test sweeps: 0-d, 1-d, odd sizes, several and negative
// axes, and empty dimensions.
struct ReduceCase {
  mx::Shape shape;
  std::vector<int> axes;
};
inline const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {{}, {}},
      {{7}, {0}},
      {{7}, {-1}},
      {{3, 4}, {0}},
      {{3, 4}, {1}},
      {{3, 4}, {-1, -2}},
      {{2, 3, 5}, {0, 2}},
      {{2, 3, 5}, {1}},
      {{2, 3, 5}, {-1}},
      {{2, 3, 5}, {0, 1, 2}},
      {{4, 1, 3}, {1}},
      {{2, 0, 3}, {1}},
      {{2, 0, 3}, {0}},
      {{33}, {0}},
  };
  return cases;
}

}  // namespace reduce_test
