// Helpers for the shape tests: inputs whose element values encode their flat position, so
// an expected result is written as the list of input positions it should read.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace shape_test {

namespace mx = mlx::core;

// The dtypes every data-moving op is checked over. Values stay below 100, so every one of
// them (including int8, float16 and bfloat16) represents them exactly.
inline const std::vector<mx::Dtype> kDtypes = {mx::bool_,   mx::uint8,  mx::int8,    mx::int32,
                                               mx::int64,   mx::uint32, mx::float16, mx::bfloat16,
                                               mx::float32, mx::float64};

// The value stored at flat position p: p itself, or p % 2 for bool.
inline double value_at(int64_t p, mx::Dtype dt) {
  return dt == mx::bool_ ? static_cast<double>(p % 2) : static_cast<double>(p);
}

// A row-contiguous array whose element at flat position p holds value_at(p).
inline mx::array positions(const mx::Shape& shape, mx::Dtype dt) {
  size_t n = 1;
  for (auto d : shape)
    n *= static_cast<size_t>(d);
  std::vector<double> vals(n);
  for (size_t p = 0; p < n; ++p)
    vals[p] = value_at(static_cast<int64_t>(p), dt);
  return mx::array(vals.begin(), shape, dt);
}

// Checks that `a` has this shape and dtype and, in row-major order, the values of the
// given source positions. Comparison is exact: every op here only moves values.
inline void expect_positions(const mx::array& a, const mx::Shape& shape, mx::Dtype dt,
                             const std::vector<int64_t>& pos, const std::string& label) {
  INFO(label << " dtype " << mx::dtype_to_string(dt));
  REQUIRE(a.shape() == shape);
  REQUIRE(a.dtype() == dt);
  std::vector<double> want;
  for (auto p : pos)
    want.push_back(value_at(p, dt));
  mlx_test::check_all_close(mlx_test::to_doubles(a), want, 0.0, 0.0, label);
}

// Checks exact values (any dtype) against a list of doubles.
inline void expect_values(const mx::array& a, const mx::Shape& shape, mx::Dtype dt,
                          const std::vector<double>& want, const std::string& label) {
  INFO(label);
  REQUIRE(a.shape() == shape);
  REQUIRE(a.dtype() == dt);
  mlx_test::check_all_close(mlx_test::to_doubles(a), want, 0.0, 0.0, label);
}

// True when `view` reads the very same allocation as `base` (no copy was made).
inline bool shares_buffer(const mx::array& view, const mx::array& base) {
  return view.data_shared_ptr() == base.data_shared_ptr();
}

// Element offset of view's element 0 relative to base's element 0.
inline int64_t offset_from(const mx::array& view, const mx::array& base) {
  return (static_cast<int64_t>(view.offset()) - static_cast<int64_t>(base.offset())) /
         static_cast<int64_t>(base.itemsize());
}

} // namespace shape_test
