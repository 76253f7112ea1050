// The MLX op API (the subset this library supports). Every op is lazy: it returns an
// array describing the computation; eval() runs it. Bad input throws
// std::invalid_argument("[op] ...") at the call, never at eval.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core {

// ---- Creation ----------------------------------------------------------------------------

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, double step, StreamOrDevice s = {});
array arange(double start, double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, StreamOrDevice s = {});
array arange(double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double stop, StreamOrDevice s = {});
array arange(int start, int stop, int step, StreamOrDevice s = {});
array arange(int start, int stop, StreamOrDevice s = {});
array arange(int stop, StreamOrDevice s = {});

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s = {});
array full(Shape shape, array vals, StreamOrDevice s = {});
template <typename T>
array full(Shape shape, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val, dtype), s);
}
template <typename T>
array full(Shape shape, T val, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val), s);
}

array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array zeros(const Shape& shape, StreamOrDevice s = {}) {
  return zeros(shape, float32, s);
}
array zeros_like(const array& a, StreamOrDevice s = {});
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array ones(const Shape& shape, StreamOrDevice s = {}) {
  return ones(shape, float32, s);
}
array ones_like(const array& a, StreamOrDevice s = {});

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s = {});
inline array eye(int n, Dtype dtype, StreamOrDevice s = {}) {
  return eye(n, n, 0, dtype, s);
}
inline array eye(int n, int m, StreamOrDevice s = {}) {
  return eye(n, m, 0, float32, s);
}
inline array eye(int n, int m, int k, StreamOrDevice s = {}) {
  return eye(n, m, k, float32, s);
}
inline array eye(int n, StreamOrDevice s = {}) {
  return eye(n, n, 0, float32, s);
}
array identity(int n, Dtype dtype, StreamOrDevice s = {});
inline array identity(int n, StreamOrDevice s = {}) {
  return identity(n, float32, s);
}

// `num` evenly spaced values from start to stop (included unless endpoint is false),
// computed as MLX does: t = arange(num) / (num - 1 or num), (1 - t) * start + t * stop in
// float32 (float64 for a float64 result), then cast to dtype.
array linspace(double start, double stop, int num, bool endpoint, Dtype dtype = float32,
               StreamOrDevice s = {});
inline array linspace(double start, double stop, int num = 50, Dtype dtype = float32,
                      StreamOrDevice s = {}) {
  return linspace(start, stop, num, true, dtype, s);
}
// (n, m) with ones where column <= row + k, zeros elsewhere.
array tri(int n, int m, int k, Dtype type, StreamOrDevice s = {});
inline array tri(int n, Dtype type, StreamOrDevice s = {}) {
  return tri(n, n, 0, type, s);
}
// The lower (tril: column <= row + k) or upper (triu: column >= row + k) triangle of the
// last two axes, zeros elsewhere; x needs at least 2 dimensions.
array tril(array x, int k = 0, StreamOrDevice s = {});
array triu(array x, int k = 0, StreamOrDevice s = {});

// ---- Type and copy -----------------------------------------------------------------------

array astype(array a, Dtype dtype, StreamOrDevice s = {});
array copy(array a, StreamOrDevice s = {});
// Row-contiguous (or column-contiguous if allowed) version of `a`; a view when it already is.
array contiguous(const array& a, bool allow_col_major = false, StreamOrDevice s = {});
array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s = {});

// ---- Shape and view ----------------------------------------------------------------------

// One dimension may be -1 and is inferred.
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
array flatten(const array& a, int start_axis, int end_axis = -1, StreamOrDevice s = {});
array flatten(const array& a, StreamOrDevice s = {});
array transpose(const array& a, std::vector<int> axes, StreamOrDevice s = {});
array transpose(const array& a, StreamOrDevice s = {});
array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s = {});
array moveaxis(const array& a, int source, int destination, StreamOrDevice s = {});
array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array squeeze(const array& a, int axis, StreamOrDevice s = {});
array squeeze(const array& a, StreamOrDevice s = {});
array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array expand_dims(const array& a, int axis, StreamOrDevice s = {});
array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s = {});
Shape broadcast_shapes(const Shape& s1, const Shape& s2);

// Python-style slicing: out-of-range starts/stops clamp, negative values count from the end,
// and a negative stride walks backwards. A zero stride throws.
array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s = {});
array slice(const array& a, Shape start, Shape stop, StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop,
                   StreamOrDevice s = {});

array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, StreamOrDevice s = {});  // flattened
array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s = {});
array stack(const std::vector<array>& arrays, StreamOrDevice s = {});
// Into `num_splits` equal parts, or at the given indices.
std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, int num_splits, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s = {});

array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
array take(const array& a, int index, int axis, StreamOrDevice s = {});
array take(const array& a, const array& indices, StreamOrDevice s = {});  // flattened a
array take(const array& a, int index, StreamOrDevice s = {});
array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});

// ---- Composites (MLX's signatures) -------------------------------------------------------

// Elementwise max(a, a_min) then min(., a_max); at least one bound must be given.
array clip(const array& a, const std::optional<array>& a_min = std::nullopt,
           const std::optional<array>& a_max = std::nullopt, StreamOrDevice s = {});
// The identity (no autodiff here yet).
array stop_gradient(const array& a, StreamOrDevice s = {});
// Modes "constant", "edge", "reflect" and "symmetric" (reflect/symmetric need an axis
// longer than the pad width, as NumPy's single-pass form).
array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size,
          const Shape& high_pad_size, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width,
          const array& pad_value = array(0), const std::string& mode = "constant",
          StreamOrDevice s = {});
array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, int pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
// Elements shift towards the end and wrap around; without axes, over the flattened array.
array roll(const array& a, int shift, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, StreamOrDevice s = {});
array roll(const array& a, int shift, int axis, StreamOrDevice s = {});
array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s = {});
// tile repeats the whole array reps[i] times along each axis (reps and the shape padded with
// leading 1s to the same length); repeat repeats each element along an axis (or of the
// flattened array); meshgrid gives coordinate arrays ("xy": the first two outputs swapped,
// as NumPy) or, with sparse, their broadcastable shapes; nan_to_num replaces NaN and
// infinities (by default with 0 and the dtype's largest finite values).
array tile(const array& arr, std::vector<int> reps, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, int axis, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, StreamOrDevice s = {});
std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse = false,
                            const std::string& indexing = "xy", StreamOrDevice s = {});
array nan_to_num(const array& a, float nan = 0.0f, const std::optional<float> posinf = std::nullopt,
                 const std::optional<float> neginf = std::nullopt, StreamOrDevice s = {});
// Small compositions (mlx/ops_small.cpp), MLX's semantics.
array reciprocal(const array& a, StreamOrDevice s = {});
array isfinite(const array& a, StreamOrDevice s = {});
array isposinf(const array& a, StreamOrDevice s = {});
array isneginf(const array& a, StreamOrDevice s = {});
array trunc(const array& a, StreamOrDevice s = {});
array degrees(const array& a, StreamOrDevice s = {});
array radians(const array& a, StreamOrDevice s = {});
array logical_xor(const array& a, const array& b, StreamOrDevice s = {});
array positive(const array& a, StreamOrDevice s = {});
array atleast_1d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_2d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_3d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s = {});
array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array flip(const array& a, int axis, StreamOrDevice s = {});
array flip(const array& a, StreamOrDevice s = {});
array diff(const array& a, int n = 1, int axis = -1, StreamOrDevice s = {});
array kron(const array& a, const array& b, StreamOrDevice s = {});
array count_nonzero(const array& a, bool keepdims = false, StreamOrDevice s = {});
array count_nonzero(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims = false,
                    StreamOrDevice s = {});
array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s = {});
std::vector<array> unstack(const array& a, int axis, StreamOrDevice s = {});
std::vector<array> unstack(const array& a, StreamOrDevice s = {});
// The diagonal over axis1/axis2 becomes the last axis.
array diagonal(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, StreamOrDevice s = {});
// The k-th diagonal of a 2-d array, or a matrix with a 1-d array on its k-th diagonal.
array diag(const array& a, int k = 0, StreamOrDevice s = {});

// ---- Unary -------------------------------------------------------------------------------

array abs(const array& a, StreamOrDevice s = {});
array negative(const array& a, StreamOrDevice s = {});
array operator-(const array& a);
array sign(const array& a, StreamOrDevice s = {});
array sqrt(const array& a, StreamOrDevice s = {});
array rsqrt(const array& a, StreamOrDevice s = {});
array square(const array& a, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array expm1(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array log1p(const array& a, StreamOrDevice s = {});
array log2(const array& a, StreamOrDevice s = {});
array log10(const array& a, StreamOrDevice s = {});
array sin(const array& a, StreamOrDevice s = {});
array cos(const array& a, StreamOrDevice s = {});
array tan(const array& a, StreamOrDevice s = {});
array arcsin(const array& a, StreamOrDevice s = {});
array arccos(const array& a, StreamOrDevice s = {});
array arctan(const array& a, StreamOrDevice s = {});
array sinh(const array& a, StreamOrDevice s = {});
array cosh(const array& a, StreamOrDevice s = {});
array tanh(const array& a, StreamOrDevice s = {});
array arcsinh(const array& a, StreamOrDevice s = {});
array arccosh(const array& a, StreamOrDevice s = {});
array arctanh(const array& a, StreamOrDevice s = {});
array sigmoid(const array& a, StreamOrDevice s = {});
array erf(const array& a, StreamOrDevice s = {});
array erfinv(const array& a, StreamOrDevice s = {});
array floor(const array& a, StreamOrDevice s = {});
array ceil(const array& a, StreamOrDevice s = {});
array round(const array& a, int decimals = 0, StreamOrDevice s = {});
array logical_not(const array& a, StreamOrDevice s = {});
array bitwise_invert(const array& a, StreamOrDevice s = {});
array operator~(const array& a);
array isnan(const array& a, StreamOrDevice s = {});
array isinf(const array& a, StreamOrDevice s = {});

// ---- Binary (broadcasting, MLX type promotion) -------------------------------------------

array add(const array& a, const array& b, StreamOrDevice s = {});
array subtract(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
array divide(const array& a, const array& b, StreamOrDevice s = {});  // floating result
array floor_divide(const array& a, const array& b, StreamOrDevice s = {});
array remainder(const array& a, const array& b, StreamOrDevice s = {});
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s = {});
array power(const array& a, const array& b, StreamOrDevice s = {});
array maximum(const array& a, const array& b, StreamOrDevice s = {});
array minimum(const array& a, const array& b, StreamOrDevice s = {});
array equal(const array& a, const array& b, StreamOrDevice s = {});
array not_equal(const array& a, const array& b, StreamOrDevice s = {});
array less(const array& a, const array& b, StreamOrDevice s = {});
array less_equal(const array& a, const array& b, StreamOrDevice s = {});
array greater(const array& a, const array& b, StreamOrDevice s = {});
array greater_equal(const array& a, const array& b, StreamOrDevice s = {});
array logical_and(const array& a, const array& b, StreamOrDevice s = {});
array logical_or(const array& a, const array& b, StreamOrDevice s = {});
array logaddexp(const array& a, const array& b, StreamOrDevice s = {});
array arctan2(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_and(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_or(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_xor(const array& a, const array& b, StreamOrDevice s = {});
array left_shift(const array& a, const array& b, StreamOrDevice s = {});
array right_shift(const array& a, const array& b, StreamOrDevice s = {});

array operator+(const array& a, const array& b);
array operator-(const array& a, const array& b);
array operator*(const array& a, const array& b);
array operator/(const array& a, const array& b);
array operator%(const array& a, const array& b);
array operator==(const array& a, const array& b);
array operator!=(const array& a, const array& b);
array operator<(const array& a, const array& b);
array operator<=(const array& a, const array& b);
array operator>(const array& a, const array& b);
array operator>=(const array& a, const array& b);
array operator&&(const array& a, const array& b);
array operator||(const array& a, const array& b);
array operator!(const array& a);
array operator&(const array& a, const array& b);
array operator|(const array& a, const array& b);
array operator^(const array& a, const array& b);
array operator<<(const array& a, const array& b);
array operator>>(const array& a, const array& b);

// Scalar operands become 0-d arrays of their C++ type, array(x), as MLX's C++ API does (no
// weak typing: f16 * 2.0 is float32, f16 * 2 stays float16). 16-bit float scalars work
// too; complex scalars go through array's implicit complex constructor (a template for
// them would make complex64_t == complex64_t ambiguous).
template <typename T>
concept ScalarOperand =
    std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
#define MLX_SCALAR_BINARY_OPERATOR(op)     \
  template <ScalarOperand T>               \
  array operator op(const array& a, T b) { \
    return a op array(b);                  \
  }                                        \
  template <ScalarOperand T>               \
  array operator op(T a, const array& b) { \
    return array(a) op b;                  \
  }
MLX_SCALAR_BINARY_OPERATOR(+)
MLX_SCALAR_BINARY_OPERATOR(-)
MLX_SCALAR_BINARY_OPERATOR(*)
MLX_SCALAR_BINARY_OPERATOR(%)
MLX_SCALAR_BINARY_OPERATOR(==)
MLX_SCALAR_BINARY_OPERATOR(!=)
MLX_SCALAR_BINARY_OPERATOR(<)
MLX_SCALAR_BINARY_OPERATOR(<=)
MLX_SCALAR_BINARY_OPERATOR(>)
MLX_SCALAR_BINARY_OPERATOR(>=)
// As MLX, division by a scalar takes a double, which becomes a float32 array: x / 2 of a
// float16 array is float32.
array operator/(const array& a, double b);
array operator/(double a, const array& b);
#undef MLX_SCALAR_BINARY_OPERATOR

// ---- Selection and comparison ------------------------------------------------------------

array where(const array& condition, const array& x, const array& y, StreamOrDevice s = {});
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false, StreamOrDevice s = {});
array allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, StreamOrDevice s = {});
// A bool scalar: same shape and equal values (dtypes may differ).
array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s = {});
inline array array_equal(const array& a, const array& b, StreamOrDevice s = {}) {
  return array_equal(a, b, false, s);
}

// ---- Reductions (axes may be negative; keepdims keeps reduced axes as size 1) -------------

#define MLX_DECLARE_REDUCTION(name)                                               \
  array name(const array& a, bool keepdims, StreamOrDevice s = {});               \
  inline array name(const array& a, StreamOrDevice s = {}) {                      \
    return name(a, false, s);                                                     \
  }                                                                               \
  array name(const array& a, const std::vector<int>& axes, bool keepdims = false, \
             StreamOrDevice s = {});                                              \
  array name(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
MLX_DECLARE_REDUCTION(sum)
MLX_DECLARE_REDUCTION(mean)
MLX_DECLARE_REDUCTION(prod)
MLX_DECLARE_REDUCTION(max)
MLX_DECLARE_REDUCTION(min)
MLX_DECLARE_REDUCTION(all)
MLX_DECLARE_REDUCTION(any)
MLX_DECLARE_REDUCTION(logsumexp)
#undef MLX_DECLARE_REDUCTION

array var(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array var(const array& a, StreamOrDevice s = {}) {
  return var(a, false, 0, s);
}
array var(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0,
          StreamOrDevice s = {});
array var(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

// Standard deviation: sqrt(var), with MLX's overloads.
array std(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array std(const array& a, StreamOrDevice s = {}) {
  return std(a, false, 0, s);
}
array std(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0,
          StreamOrDevice s = {});
array std(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

// The median (MLX's: the mean of the two middle values for even counts, NaN when any value
// along the axes is NaN), in at least a float dtype; through sort on either device.
array median(const array& a, bool keepdims, StreamOrDevice s = {});
inline array median(const array& a, StreamOrDevice s = {}) {
  return median(a, false, s);
}
array median(const array& a, const std::vector<int>& axes, bool keepdims = false,
             StreamOrDevice s = {});
array median(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// Sorting (mlx/ops_sort.cpp): ascending and stable, NaN last; arg* give uint32 indices.
// The overloads without an axis work on the flattened array. topk returns the k largest
// values along the axis (in ascending order here; MLX leaves the order unspecified).
array sort(const array& a, int axis, StreamOrDevice s = {});
array sort(const array& a, StreamOrDevice s = {});
array argsort(const array& a, int axis, StreamOrDevice s = {});
array argsort(const array& a, StreamOrDevice s = {});
array partition(const array& a, int kth, int axis, StreamOrDevice s = {});
array partition(const array& a, int kth, StreamOrDevice s = {});
array argpartition(const array& a, int kth, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, StreamOrDevice s = {});
array topk(const array& a, int k, int axis, StreamOrDevice s = {});
array topk(const array& a, int k, StreamOrDevice s = {});

// Indices (uint32) of the first maximum/minimum; over the flattened array without an axis.
array argmax(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmax(const array& a, StreamOrDevice s = {}) {
  return argmax(a, false, s);
}
array argmax(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array argmin(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmin(const array& a, StreamOrDevice s = {}) {
  return argmin(a, false, s);
}
array argmin(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// ---- Scans (MLX's signatures; without an axis, over the flattened array) -------------------

array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true,
             std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
array cumsum(const array& a, bool reverse = false, bool inclusive = true,
             std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true,
              std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
array cumprod(const array& a, bool reverse = false, bool inclusive = true,
              std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
// log(cumsum(exp(a))) without overflow (MLX's Scan LogAddExp); floating-point inputs.
array logcumsumexp(const array& a, int axis, bool reverse = false, bool inclusive = true,
                   StreamOrDevice s = {});
array logcumsumexp(const array& a, bool reverse = false, bool inclusive = true,
                   StreamOrDevice s = {});
array cummax(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array cummax(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummin(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array cummin(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});

array softmax(const array& a, const std::vector<int>& axes, bool precise = false,
              StreamOrDevice s = {});
array softmax(const array& a, int axis, bool precise = false, StreamOrDevice s = {});
array softmax(const array& a, bool precise = false, StreamOrDevice s = {});

// ---- Linear algebra ----------------------------------------------------------------------

// (..., M, K) x (..., K, N) with broadcast batch dims; 1-d operands as in NumPy.
array matmul(const array& a, const array& b, StreamOrDevice s = {});

// alpha * (a @ b) + beta * c with matmul's rules for a and b; c broadcasts to the result.
array addmm(array c, array a, array b, const float& alpha = 1.f, const float& beta = 1.f,
            StreamOrDevice s = {});
// Contractions through matmul: tensordot over the last `axis` dims of a and the first of b,
// or over explicit axes; outer of the flattened operands; inner over the last dims (a
// scalar operand multiplies). trace sums a diagonal (in `dtype`, else a's).
array tensordot(const array& a, const array& b, const int axis = 2, StreamOrDevice s = {});
array tensordot(const array& a, const array& b, const std::vector<int>& axes_a,
                const std::vector<int>& axes_b, StreamOrDevice s = {});
array outer(const array& a, const array& b, StreamOrDevice s = {});
array inner(const array& a, const array& b, StreamOrDevice s = {});
array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s = {});
array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s = {});
array trace(const array& a, StreamOrDevice s = {});

// ---- Quantization (MLX's affine format, docs/quantization.md) ------------------------------

// {w_q, scales, biases}: w (..., K) float16/bfloat16/float32 in groups of group_size
// (default 64) along the last axis, bits (default 4) per element packed in uint32 words.
// Only mode "affine" exists here.
// global_scale is MLX's, for "nvfp4" only: passing one is an error here.
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt,
                            const std::string& mode = "affine",
                            const std::optional<array>& global_scale = std::nullopt,
                            StreamOrDevice s = {});
// scale * q + bias per element, in result_type(scales, biases) (or dtype).
array dequantize(const array& w, const array& scales,
                 const std::optional<array>& biases = std::nullopt,
                 std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 const std::optional<array>& global_scale = std::nullopt,
                 std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
// x @ dequantize(w).T (transpose) or x @ dequantize(w), as one node.
array quantized_matmul(array x, array w, array scales, std::optional<array> biases = std::nullopt,
                       bool transpose = true, std::optional<int> group_size = std::nullopt,
                       std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                       StreamOrDevice s = {});

// ---- Indexing with index arrays and dynamic slicing (MLX's signatures; docs/indexing.md) --

// Index arrays of any integer dtype (broadcast together, promoted to one dtype); negative
// indices count from the end. An index whose window leaves its axis raises
// "[op] ... out of bounds" at eval on the CPU; on the GPU a gather reads zeros and a
// scatter drops that update (MLX leaves it undefined). Axes of gather and scatter are in
// [0, ndim) as in MLX.
// out = broadcast(indices).shape + slice_sizes; window i starts at indices[k][i] on axes[k].
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s = {});
inline array gather(const array& a, const array& indices, int axis, const Shape& slice_sizes,
                    StreamOrDevice s = {}) {
  return gather(a, std::vector<array>{indices}, std::vector<int>{axis}, slice_sizes, s);
}
// a with values put (or added) at indices along axis; indices have a's rank and broadcast
// with a and values outside the axis.
array put_along_axis(const array& a, const array& indices, const array& values, int axis,
                     StreamOrDevice s = {});
array scatter_add_axis(const array& a, const array& indices, const array& values, int axis,
                       StreamOrDevice s = {});
// updates: broadcast(indices).shape + a window of a's rank; window i lands at indices[k][i]
// on axes[k] and 0 elsewhere. Duplicates: a later update wins (scatter) or all combine.
#define MLX_DECLARE_SCATTER(name)                                                         \
  array name(const array& a, const std::vector<array>& indices, const array& updates,     \
             const std::vector<int>& axes, StreamOrDevice s = {});                        \
  inline array name(const array& a, const array& indices, const array& updates, int axis, \
                    StreamOrDevice s = {}) {                                              \
    return name(a, std::vector<array>{indices}, updates, std::vector<int>{axis}, s);      \
  }
MLX_DECLARE_SCATTER(scatter)
MLX_DECLARE_SCATTER(scatter_add)
MLX_DECLARE_SCATTER(scatter_prod)
MLX_DECLARE_SCATTER(scatter_max)
MLX_DECLARE_SCATTER(scatter_min)
#undef MLX_DECLARE_SCATTER

// Slicing at a start held in an array (0-d or 1-d, one integer per axis), read where the op
// runs, so a loop over positions reuses one kernel and never waits for the host. Axes not
// named start at 0; a start is clamped to [0, shape - size] so the window always fits.
array slice(const array& a, const array& start, std::vector<int> axes, Shape slice_size,
            StreamOrDevice s = {});
// update (broadcast to src's rank: missing leading axes take src's extent, or 1 on a dynamic
// axis) written into src at start; in place when src's buffer can be donated.
array slice_update(const array& src, const array& update, const array& start, std::vector<int> axes,
                   StreamOrDevice s = {});
// Braced starts pick the static overloads (as MLX's initializer_list overload of slice).
inline array slice(const array& a, std::initializer_list<int> start, Shape stop, Shape strides,
                   StreamOrDevice s = {}) {
  return slice(a, Shape(start), std::move(stop), std::move(strides), s);
}
inline array slice_update(const array& src, const array& update, std::initializer_list<int> start,
                          Shape stop, StreamOrDevice s = {}) {
  return slice_update(src, update, Shape(start), std::move(stop), s);
}
inline array slice_update(const array& src, const array& update, std::initializer_list<int> start,
                          Shape stop, Shape strides, StreamOrDevice s = {}) {
  return slice_update(src, update, Shape(start), std::move(stop), std::move(strides), s);
}

}  // namespace mlx::core
