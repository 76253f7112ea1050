// Helpers shared by the test suites: reading arrays back as doubles, dtype-aware
// tolerances, and seeded random inputs.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mlx/backend/common/utils.h"
#include "mlx/dtype_utils.h"
#include "mlx/mlx.h"

namespace mlx_test {

namespace mx = mlx::core;

// The devices a test runs on: the CPU, and the GPU where one is available.
inline std::vector<mx::Device> test_devices() {
  std::vector<mx::Device> d{mx::Device::cpu};
  if (mx::gpu::is_available()) {
    d.push_back(mx::Device::gpu);
  }
  return d;
}

// Evaluates `a` and returns its elements in row-major order as doubles (real part for
// complex), honouring its strides and offset.
inline std::vector<double> to_doubles(mx::array a) {
  a.eval();
  std::vector<double> out;
  out.reserve(a.size());
  mx::dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = a.data<T>();
    for (size_t i = 0; i < a.size(); ++i) {
      auto loc = mx::elem_to_loc(static_cast<int64_t>(i), a.shape(), a.strides());
      out.push_back(mx::cast_value<double>(p[loc]));
    }
  });
  return out;
}

// Same, as a typed vector of the array's storage type.
template <typename T>
std::vector<T> to_vector(mx::array a) {
  a.eval();
  std::vector<T> out;
  const T* p = a.data<T>();
  for (size_t i = 0; i < a.size(); ++i) {
    out.push_back(p[mx::elem_to_loc(static_cast<int64_t>(i), a.shape(), a.strides())]);
  }
  return out;
}

// Relative tolerance for results computed in a dtype's precision (a few ulps of float
// math plus one rounding to the storage type): f16 2^-10, bf16 2^-7, f32 ~1e-5.
inline double rtol_for(mx::Dtype dt) {
  if (dt == mx::float16)
    return 4e-3;
  if (dt == mx::bfloat16)
    return 3e-2;
  if (dt == mx::float32 || dt == mx::complex64)
    return 2e-5;
  if (dt == mx::float64)
    return 1e-12;
  return 0.0;  // integers and bool compare exactly
}

// True when x and y agree within rtol (relative) / atol (absolute), NaN == NaN, inf == inf.
inline bool close(double x, double y, double rtol, double atol) {
  if (std::isnan(x) || std::isnan(y))
    return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y))
    return x == y;
  return std::abs(x - y) <= atol + rtol * std::abs(y);
}

// Checks every element; reports the first mismatch with its index and the case label.
inline void check_all_close(const std::vector<double>& got, const std::vector<double>& want,
                            double rtol, double atol, const std::string& label) {
  REQUIRE_MESSAGE(got.size() == want.size(),
                  label << ": size " << got.size() << " vs " << want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], rtol, atol)) {
      FAIL_CHECK(label << ": element " << i << " is " << got[i] << ", expected " << want[i]
                       << " (rtol " << rtol << ", atol " << atol << ")");
      return;
    }
  }
}

// Seeded uniform doubles in [lo, hi), reproducible across platforms (no std distributions,
// whose output differs between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 2685821657736338717ULL;
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

// An array of `shape` with values drawn uniformly from [lo, hi), converted to dtype.
inline mx::array random_array(const mx::Shape& shape, mx::Dtype dtype, Rng& rng, double lo = -4,
                              double hi = 4) {
  size_t n = 1;
  for (auto d : shape)
    n *= static_cast<size_t>(d);
  std::vector<double> vals(n);
  for (auto& v : vals) {
    v = rng.uniform(lo, hi);
    if (mx::is_integral(dtype))
      v = std::floor(v);
    if (dtype == mx::bool_)
      v = v > (lo + hi) / 2 ? 1 : 0;
  }
  return mx::array(vals.begin(), shape, dtype);
}

}  // namespace mlx_test
