// Reductions (sum, mean, prod, max, min, all, any, logsumexp, var), arg-reductions and
// softmax: axis validation, output dtypes and the composition of derived reductions.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

std::string op_label(const char* op) {
  return std::string("[") + op + "] ";
}

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

// The shape of a reduction's output with reduced axes kept as size 1.
Shape keepdims_shape(const Shape& shape, const std::vector<int>& sorted_axes) {
  Shape out = shape;
  for (int ax : sorted_axes) {
    out[ax] = 1;
  }
  return out;
}

Shape squeezed_shape(const Shape& shape, const std::vector<int>& sorted_axes) {
  Shape out;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (!std::binary_search(sorted_axes.begin(), sorted_axes.end(), i)) {
      out.push_back(shape[i]);
    }
  }
  return out;
}

size_t reduced_size(const array& a, const std::vector<int>& sorted_axes) {
  size_t n = 1;
  for (int ax : sorted_axes) {
    n *= static_cast<size_t>(a.shape(ax));
  }
  return n;
}

// max/min/argmax/argmin have no identity: reducing an empty set into an output element that
// exists is an error (as NumPy). An empty output needs no element and is fine.
void require_nonempty_reduction(const array& a, const std::vector<int>& sorted_axes,
                                const char* op) {
  if (reduced_size(a, sorted_axes) > 0) {
    return;
  }
  size_t out_size = 1;
  for (auto d : keepdims_shape(a.shape(), sorted_axes)) {
    out_size *= static_cast<size_t>(d);
  }
  if (out_size > 0) {
    throw std::invalid_argument(op_label(op) + "cannot reduce an empty array (shape " +
                                shape_to_string(a.shape()) + ").");
  }
}

void require_not_complex(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(op_label(op) + "is not supported for complex inputs.");
  }
}

// Builds the Reduce node (keepdims shape) and squeezes the reduced axes unless keepdims.
// `in` must already have the output dtype (except for And/Or, which output bool).
array make_reduce(const array& in, ReduceType type, const std::vector<int>& sorted_axes,
                  Dtype out_dtype, bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto out = array(keepdims_shape(in.shape(), sorted_axes), out_dtype,
                   std::make_shared<Reduce>(stream, type, sorted_axes), {in});
  return keepdims ? out : reshape(out, squeezed_shape(in.shape(), sorted_axes), stream);
}

// MLX's accumulation dtypes for sum and prod: small integers widen to 32 bits (bool to
// int32), 64-bit integers and floats keep their type.
Dtype sum_dtype(Dtype dt) {
  if (dt == bool_)
    return int32;
  if (dt == int8 || dt == int16)
    return int32;
  if (dt == uint8 || dt == uint16)
    return uint32;
  return dt;
}

// Sums are computed in float32 for 16-bit floats so that mean, var and logsumexp round
// to the output type once, at the end.
Dtype accumulate_float_dtype(Dtype dt) {
  auto f = at_least_float(dt);
  return f == float16 || f == bfloat16 ? float32 : f;
}

array reduce_with(const array& a, const std::vector<int>& axes, bool keepdims, ReduceType type,
                  const char* op, StreamOrDevice s) {
  auto sorted = normalize_axes(axes, static_cast<int>(a.ndim()), op);
  Dtype out_dtype = a.dtype();
  switch (type) {
    case ReduceType::Sum:
    case ReduceType::Prod:
      out_dtype = sum_dtype(a.dtype());
      break;
    case ReduceType::Max:
    case ReduceType::Min:
      // complex64 orders lexicographically (real part, then imaginary), as MLX.
      require_nonempty_reduction(a, sorted, op);
      break;
    case ReduceType::And:
    case ReduceType::Or:
      out_dtype = bool_;
      break;
  }
  bool logical = type == ReduceType::And || type == ReduceType::Or;
  // Reducing no axes is a cast, except for all/any, whose primitive decides truthiness
  // (a complex value is true when either part is non-zero).
  if (sorted.empty() && !logical) {
    return astype(a, out_dtype, s);
  }
  auto in = logical ? a : astype(a, out_dtype, s);
  return make_reduce(in, type, sorted, out_dtype, keepdims, s);
}

}  // namespace

// ---- Plain reductions ---------------------------------------------------------------------

#define MLX_DEFINE_REDUCTION(name, type)                                                      \
  array name(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { \
    return reduce_with(a, axes, keepdims, type, #name, s);                                    \
  }                                                                                           \
  array name(const array& a, int axis, bool keepdims, StreamOrDevice s) {                     \
    return name(a, std::vector<int>{axis}, keepdims, s);                                      \
  }                                                                                           \
  array name(const array& a, bool keepdims, StreamOrDevice s) {                               \
    return name(a, all_axes(a), keepdims, s);                                                 \
  }
MLX_DEFINE_REDUCTION(sum, ReduceType::Sum)
MLX_DEFINE_REDUCTION(prod, ReduceType::Prod)
MLX_DEFINE_REDUCTION(max, ReduceType::Max)
MLX_DEFINE_REDUCTION(min, ReduceType::Min)
MLX_DEFINE_REDUCTION(all, ReduceType::And)
MLX_DEFINE_REDUCTION(any, ReduceType::Or)
#undef MLX_DEFINE_REDUCTION

// ---- Derived reductions -------------------------------------------------------------------

array mean(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto sorted = normalize_axes(axes, static_cast<int>(a.ndim()), "mean");
  auto out_dtype = at_least_float(a.dtype());
  auto acc_dtype = accumulate_float_dtype(a.dtype());
  // Casting first keeps integer sums from wrapping before the division.
  auto total = sum(astype(a, acc_dtype, s), sorted, keepdims, s);
  double n = static_cast<double>(reduced_size(a, sorted));
  auto out = multiply(total, array(1.0 / n, acc_dtype), s);
  return astype(out, out_dtype, s);
}
array mean(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return mean(a, std::vector<int>{axis}, keepdims, s);
}
array mean(const array& a, bool keepdims, StreamOrDevice s) {
  return mean(a, all_axes(a), keepdims, s);
}

array var(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  require_not_complex(a, "var");
  auto sorted = normalize_axes(axes, static_cast<int>(a.ndim()), "var");
  auto out_dtype = at_least_float(a.dtype());
  auto acc_dtype = accumulate_float_dtype(a.dtype());
  // Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2, which loses
  // all precision when the mean is large relative to the spread.
  auto x = astype(a, acc_dtype, s);
  auto dev = subtract(x, mean(x, sorted, true, s), s);
  auto ssq = sum(multiply(dev, dev, s), sorted, keepdims, s);
  double n = static_cast<double>(reduced_size(a, sorted));
  // n <= ddof divides by zero (inf, or NaN for zero spread), as NumPy and MLX.
  double denom = std::max(n - static_cast<double>(ddof), 0.0);
  auto out = multiply(ssq, array(1.0 / denom, acc_dtype), s);
  return astype(out, out_dtype, s);
}
array var(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, std::vector<int>{axis}, keepdims, ddof, s);
}
array var(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, all_axes(a), keepdims, ddof, s);
}

array std(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return sqrt(var(a, axes, keepdims, ddof, s), s);
}
array std(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, std::vector<int>{axis}, keepdims, ddof, s);
}
array std(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, all_axes(a), keepdims, ddof, s);
}

array logsumexp(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  require_not_complex(a, "logsumexp");
  auto sorted = normalize_axes(axes, static_cast<int>(a.ndim()), "logsumexp");
  require_nonempty_reduction(a, sorted, "logsumexp");
  auto out_dtype = at_least_float(a.dtype());
  auto x = astype(a, accumulate_float_dtype(a.dtype()), s);
  // log(sum(exp(x - m))) + m with m the max: exp never overflows. When m is infinite,
  // x - m is NaN or -inf, so the answer is m itself (+inf, or -inf when all are -inf).
  auto m = max(x, sorted, true, s);
  auto lse = add(log(sum(exp(subtract(x, m, s), s), sorted, true, s), s), m, s);
  auto out = where(isinf(m, s), m, lse, s);
  if (!keepdims && !sorted.empty()) {
    out = reshape(out, squeezed_shape(a.shape(), sorted), s);
  }
  return astype(out, out_dtype, s);
}
array logsumexp(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return logsumexp(a, std::vector<int>{axis}, keepdims, s);
}
array logsumexp(const array& a, bool keepdims, StreamOrDevice s) {
  return logsumexp(a, all_axes(a), keepdims, s);
}

// ---- Arg-reductions -----------------------------------------------------------------------

namespace {

array arg_reduce(const array& a, int axis, bool keepdims, ArgReduceType type, const char* op,
                 StreamOrDevice s) {
  require_not_complex(a, op);
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), op);
  require_nonempty_reduction(a, {ax}, op);
  auto stream = to_stream(s);
  auto out = array(keepdims_shape(a.shape(), {ax}), uint32,
                   std::make_shared<ArgReduce>(stream, type, ax), {a});
  return keepdims ? out : reshape(out, squeezed_shape(a.shape(), {ax}), stream);
}

// Over the flattened array; keepdims keeps every axis as size 1.
array flat_arg_reduce(const array& a, bool keepdims, ArgReduceType type, const char* op,
                      StreamOrDevice s) {
  require_not_complex(a, op);
  if (a.size() == 0) {
    throw std::invalid_argument(op_label(op) + "cannot reduce an empty array (shape " +
                                shape_to_string(a.shape()) + ").");
  }
  if (a.size() > static_cast<size_t>(std::numeric_limits<ShapeElem>::max())) {
    throw std::invalid_argument(op_label(op) + "cannot flatten an array of " +
                                std::to_string(a.size()) +
                                " elements (more than 2^31 - 1); reduce along an axis instead.");
  }
  auto flat = reshape(a, {static_cast<ShapeElem>(a.size())}, s);
  auto out = arg_reduce(flat, 0, false, type, op, s);
  return keepdims ? reshape(out, Shape(a.ndim(), 1), s) : out;
}

}  // namespace

array argmax(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, axis, keepdims, ArgReduceType::ArgMax, "argmax", s);
}
array argmax(const array& a, bool keepdims, StreamOrDevice s) {
  return flat_arg_reduce(a, keepdims, ArgReduceType::ArgMax, "argmax", s);
}
array argmin(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, axis, keepdims, ArgReduceType::ArgMin, "argmin", s);
}
array argmin(const array& a, bool keepdims, StreamOrDevice s) {
  return flat_arg_reduce(a, keepdims, ArgReduceType::ArgMin, "argmin", s);
}

// ---- Scans --------------------------------------------------------------------------------

namespace {

array scan(const array& a, int axis, Scan::ReduceType type, bool reverse, bool inclusive,
           std::optional<Dtype> dtype, const char* op, StreamOrDevice s) {
  require_not_complex(a, op);
  int ndim = static_cast<int>(a.ndim());
  if (ndim == 0) {
    throw std::invalid_argument(op_label(op) + "cannot scan a 0-d array; flatten it first.");
  }
  int ax = normalize_axis(axis, ndim, op);
  auto x = dtype ? astype(a, *dtype, s) : a;
  // As MLX: sums and products of bool count in int32; everything else keeps its dtype.
  bool arith = type == Scan::Sum || type == Scan::Prod;
  Dtype out = arith && x.dtype() == bool_ ? int32 : x.dtype();
  x = astype(x, out, s);
  return array(x.shape(), out, std::make_shared<Scan>(to_stream(s), type, ax, reverse, inclusive),
               {x});
}

}  // namespace

array cumsum(const array& a, int axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
             StreamOrDevice s) {
  return scan(a, axis, Scan::Sum, reverse, inclusive, dtype, "cumsum", s);
}
array cumsum(const array& a, bool reverse, bool inclusive, std::optional<Dtype> dtype,
             StreamOrDevice s) {
  return cumsum(flatten(a, s), 0, reverse, inclusive, dtype, s);
}
array cumprod(const array& a, int axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
              StreamOrDevice s) {
  return scan(a, axis, Scan::Prod, reverse, inclusive, dtype, "cumprod", s);
}
array cumprod(const array& a, bool reverse, bool inclusive, std::optional<Dtype> dtype,
              StreamOrDevice s) {
  return cumprod(flatten(a, s), 0, reverse, inclusive, dtype, s);
}
array cummax(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, axis, Scan::Max, reverse, inclusive, std::nullopt, "cummax", s);
}
array cummax(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return cummax(flatten(a, s), 0, reverse, inclusive, s);
}
array cummin(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, axis, Scan::Min, reverse, inclusive, std::nullopt, "cummin", s);
}
array cummin(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return cummin(flatten(a, s), 0, reverse, inclusive, s);
}
array logcumsumexp(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  if (!issubdtype(a.dtype(), floating)) {
    throw std::invalid_argument("[logcumsumexp] needs a floating-point input, got " +
                                dtype_to_string(a.dtype()) + ".");
  }
  return scan(a, axis, Scan::LogAddExp, reverse, inclusive, std::nullopt, "logcumsumexp", s);
}
array logcumsumexp(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return logcumsumexp(flatten(a, s), 0, reverse, inclusive, s);
}

// ---- Softmax ------------------------------------------------------------------------------

array softmax(const array& a, const std::vector<int>& axes, bool precise, StreamOrDevice s) {
  require_not_complex(a, "softmax");
  auto sorted = normalize_axes(axes, static_cast<int>(a.ndim()), "softmax");
  auto out_dtype = at_least_float(a.dtype());
  auto x = astype(a, out_dtype, s);
  if (sorted.empty()) {
    // Normalizing over no axes: every element is its own group, so the result is
    // exp(x - x) / exp(x - x): 1, or NaN for NaN and infinite inputs.
    auto e = exp(subtract(x, x, s), s);
    return divide(e, e, s);
  }
  auto stream = to_stream(s);
  int last = static_cast<int>(a.ndim()) - 1;
  if (sorted.size() == 1) {
    // The primitive normalizes the last axis; another single axis is moved there and back.
    int ax = sorted[0];
    auto in = ax == last ? x : moveaxis(x, ax, last, stream);
    auto out = array(in.shape(), out_dtype, std::make_shared<Softmax>(stream, precise), {in});
    return ax == last ? out : moveaxis(out, last, ax, stream);
  }
  // Several axes: exp(x - logsumexp(x)), computed in float32 for 16-bit floats.
  auto xf = astype(x, accumulate_float_dtype(out_dtype), s);
  auto m = max(xf, sorted, true, s);
  auto e = exp(subtract(xf, m, s), s);
  return astype(divide(e, sum(e, sorted, true, s), s), out_dtype, s);
}
array softmax(const array& a, int axis, bool precise, StreamOrDevice s) {
  return softmax(a, std::vector<int>{axis}, precise, s);
}
array softmax(const array& a, bool precise, StreamOrDevice s) {
  return softmax(a, all_axes(a), precise, s);
}

}  // namespace mlx::core
