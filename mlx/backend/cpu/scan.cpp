// Scan::eval_cpu: cumulative sum, product, max, min and logaddexp along one axis of a strided input,
// into a row-contiguous output.
//
// Each line along the axis is walked forward or backward. Float sums accumulate in double
// and round each output once (so a long cumsum keeps growing like sum does); products,
// max and min run in the compute type (f32 for 16-bit floats); integers wrap in uint64 and
// truncate on store. max/min propagate NaN; logaddexp (logcumsumexp) runs in double. An exclusive scan writes the identity first
// (0, 1, the lowest or the highest value) and leaves out each element itself.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// log(exp(a) + exp(b)) without overflow; NaN propagates, -inf is the identity.
double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return a + b;
  }
  double m = std::max(a, b);
  if (std::isinf(m)) {
    return m;
  }
  return m + std::log1p(std::exp(std::min(a, b) - m));
}

template <typename T>
void scan_typed(const array& in, array& out, Scan::ReduceType type, int axis, bool reverse,
                bool inclusive) {
  using C = compute_type_t<T>;
  constexpr bool is_float = std::is_floating_point_v<C>;
  const int64_t n = in.shape(axis);
  const int64_t in_step = in.strides(axis);
  const int64_t out_step = out.strides(axis);
  // The other dims, walked with both arrays' strides.
  Shape outer_shape;
  Strides in_outer, out_outer;
  for (int d = 0; d < static_cast<int>(in.ndim()); ++d) {
    if (d != axis) {
      outer_shape.push_back(in.shape(d));
      in_outer.push_back(in.strides(d));
      out_outer.push_back(out.strides(d));
    }
  }
  size_t lines = n == 0 ? 0 : in.size() / static_cast<size_t>(n);
  StridedIterator in_it(outer_shape, in_outer);
  StridedIterator out_it(outer_shape, out_outer);
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  for (size_t l = 0; l < lines; ++l, in_it.step(), out_it.step()) {
    const T* p = src + in_it.loc();
    T* q = dst + out_it.loc();
    // Accumulators: double for float sums, uint64 for integer sums/products, C otherwise.
    double fsum = 0;
    // logaddexp runs in double from -inf (its identity).
    double lsum = -std::numeric_limits<double>::infinity();
    uint64_t isum = type == Scan::Prod ? 1 : 0;
    C acc{};
    if (type == Scan::Prod) {
      acc = C(1);
    } else if (type == Scan::Max) {
      acc = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                 : std::numeric_limits<C>::lowest();
    } else if (type == Scan::Min) {
      acc = std::numeric_limits<C>::has_infinity ? std::numeric_limits<C>::infinity()
                                                 : std::numeric_limits<C>::max();
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = reverse ? n - 1 - k : k;
      C x = static_cast<C>(p[i * in_step]);
      auto current = [&]() -> T {
        if (type == Scan::Sum) {
          if constexpr (is_float) {
            return static_cast<T>(fsum);
          } else {
            return static_cast<T>(isum);
          }
        }
        if constexpr (!is_float) {
          if (type == Scan::Prod) {
            return static_cast<T>(isum);
          }
        } else {
          if (type == Scan::LogAddExp) {
            return static_cast<T>(lsum);
          }
        }
        return static_cast<T>(acc);
      };
      if (!inclusive) {
        q[i * out_step] = current();
      }
      switch (type) {
        case Scan::Sum:
          if constexpr (is_float) {
            fsum += static_cast<double>(x);
          } else {
            isum += static_cast<uint64_t>(x);
          }
          break;
        case Scan::Prod:
          if constexpr (is_float) {
            acc *= x;
          } else {
            isum *= static_cast<uint64_t>(x);
          }
          break;
        case Scan::LogAddExp:
          if constexpr (is_float) {
            lsum = log_add_exp(lsum, static_cast<double>(x));
          }
          break;
        case Scan::Max:
        case Scan::Min: {
          bool better = type == Scan::Max ? x > acc : x < acc;
          bool nan_x = false, nan_acc = false;
          if constexpr (is_float) {
            nan_x = std::isnan(x);
            nan_acc = std::isnan(acc);
          }
          if (!nan_acc && (better || nan_x)) {
            acc = x;
          }
          break;
        }
      }
      if (inclusive) {
        q[i * out_step] = current();
      }
    }
  }
}

}  // namespace

void Scan::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  if (in.dtype() != out.dtype()) {
    throw std::invalid_argument(std::string("[") + name() +
                                "] expects matching input and output dtypes.");
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T>) {
      throw std::invalid_argument(std::string("[") + name() +
                                  "] is not supported for complex inputs.");
    } else {
      scan_typed<T>(in, out, type_, axis_, reverse_, inclusive_);
    }
  });
}

}  // namespace mlx::core
