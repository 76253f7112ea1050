// matmul (NumPy's rules for 1-d operands, broadcast batch dims, float dtypes only, as MLX),
// addmm, and the contractions composed from matmul: tensordot, outer, inner; and trace.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

array matmul(const array& a_in, const array& b_in, StreamOrDevice s) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    throw std::invalid_argument(
        "[matmul] got a 0-d input; inputs must have at least one dimension.");
  }
  auto out_dtype = promote_types(a_in.dtype(), b_in.dtype());
  if (!is_floating_point(out_dtype)) {
    throw std::invalid_argument("[matmul] only floating point types are supported, but " +
                                dtype_to_string(a_in.dtype()) + " and " +
                                dtype_to_string(b_in.dtype()) + " promote to " +
                                dtype_to_string(out_dtype) + ".");
  }
  auto stream = to_stream(s);
  // A 1-d left operand is a row vector and a 1-d right operand a column vector; the added
  // dimension is removed from the result.
  auto a = a_in.ndim() == 1 ? reshape(a_in, {1, a_in.shape(0)}, stream) : a_in;
  auto b = b_in.ndim() == 1 ? reshape(b_in, {b_in.shape(0), 1}, stream) : b_in;
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument("[matmul] the last dimension of the first input (shape " +
                                shape_to_string(a_in.shape()) +
                                ") must match the second to last dimension of the second "
                                "input (shape " +
                                shape_to_string(b_in.shape()) + ").");
  }
  Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(a_batch, b_batch);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("[matmul] batch dimensions of shapes " +
                                shape_to_string(a_in.shape()) + " and " +
                                shape_to_string(b_in.shape()) + " cannot be broadcast.");
  }
  int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {M, K});
  b_shape.insert(b_shape.end(), {K, N});
  out_shape.insert(out_shape.end(), {M, N});
  a = broadcast_to(astype(a, out_dtype, stream), a_shape, stream);
  b = broadcast_to(astype(b, out_dtype, stream), b_shape, stream);
  auto out = array(out_shape, out_dtype, std::make_shared<Matmul>(stream), {a, b});

  if (a_in.ndim() == 1 || b_in.ndim() == 1) {
    Shape squeezed = batch;
    if (a_in.ndim() != 1)
      squeezed.push_back(M);
    if (b_in.ndim() != 1)
      squeezed.push_back(N);
    out = reshape(out, squeezed, stream);
  }
  return out;
}

// MLX's AddMM: c broadcasts to the result as the user sees it (1-d operands' dims removed),
// then takes the primitive's (..., M, N) form.
array addmm(array c, array a, array b, const float& alpha, const float& beta, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw std::invalid_argument(
        "[addmm] Got 0 dimension input. Inputs must have at least one dimension.");
  }
  auto out_dtype = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  auto stream = to_stream(s);
  Shape a_in = a.shape(), b_in = b.shape();
  if (a_vec) {
    a = reshape(a, {1, a.shape(0)}, stream);
  }
  if (b_vec) {
    b = reshape(b, {b.shape(0), 1}, stream);
  }
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument(std::string("[addmm] Last dimension of first input with shape ") +
                                shape_to_string(a.shape()) +
                                " must match second to last dimension of second input with "
                                "shape " +
                                shape_to_string(b.shape()) + ".");
  }
  if (!is_floating_point(out_dtype)) {
    // MLX also takes complex64 (as matmul * alpha + beta * c); matmul has no complex here.
    throw std::invalid_argument(
        std::string("[addmm] Only real floating point types are supported but ") +
        dtype_to_string(c.dtype()) + ", " + dtype_to_string(a.dtype()) + " and " +
        dtype_to_string(b.dtype()) + " were provided which results in " +
        dtype_to_string(out_dtype) + ", which is not a real floating point type.");
  }
  Shape batch;
  try {
    batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                             Shape(b.shape().begin(), b.shape().end() - 2));
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(std::string("[addmm] batch dimensions of shapes ") +
                                shape_to_string(a_in) + " and " + shape_to_string(b_in) +
                                " cannot be broadcast.");
  }
  int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  Shape a_shape = batch, b_shape = batch, out_shape = batch, user_shape = batch;
  a_shape.insert(a_shape.end(), {M, K});
  b_shape.insert(b_shape.end(), {K, N});
  out_shape.insert(out_shape.end(), {M, N});
  if (!a_vec) {
    user_shape.push_back(M);
  }
  if (!b_vec) {
    user_shape.push_back(N);
  }
  bool c_fits = c.ndim() <= user_shape.size();
  if (c_fits) {
    try {
      c_fits = broadcast_shapes(c.shape(), user_shape) == user_shape;
    } catch (const std::invalid_argument&) {
      c_fits = false;
    }
  }
  if (!c_fits) {
    throw std::invalid_argument(
        std::string("[addmm] input c must broadcast to the output shape; c has shape ") +
        shape_to_string(c.shape()) + " and a @ b " + shape_to_string(user_shape) + ".");
  }
  c = reshape(broadcast_to(astype(c, out_dtype, stream), user_shape, stream), out_shape, stream);
  a = broadcast_to(astype(a, out_dtype, stream), a_shape, stream);
  b = broadcast_to(astype(b, out_dtype, stream), b_shape, stream);
  auto out = array(out_shape, out_dtype, std::make_shared<AddMM>(stream, alpha, beta), {a, b, c});
  if (a_vec || b_vec) {
    out = reshape(out, user_shape, stream);
  }
  return out;
}

}  // namespace mlx::core

namespace mlx::core {

array tensordot(const array& a, const array& b, const int axis, StreamOrDevice s) {
  if (axis < 0) {
    throw std::invalid_argument("[tensordot] axis must be greater or equal to 0.");
  }
  if (axis > static_cast<int>(std::min(a.ndim(), b.ndim()))) {
    throw std::invalid_argument(
        "[tensordot] axis must be less than the number of dimensions of a and b.");
  }
  // The last `axis` dims of a against the first `axis` of b.
  std::vector<int> axes_a, axes_b;
  for (int i = 0; i < axis; ++i) {
    axes_a.push_back(i - axis);
    axes_b.push_back(i);
  }
  return tensordot(a, b, axes_a, axes_b, s);
}

array tensordot(const array& a, const array& b, const std::vector<int>& axes_a,
                const std::vector<int>& axes_b, StreamOrDevice s) {
  if (axes_a.size() != axes_b.size()) {
    throw std::invalid_argument("[tensordot] axes must have the same size.");
  }
  int na = static_cast<int>(a.ndim()), nb = static_cast<int>(b.ndim());
  std::vector<bool> contracted_a(na, false), contracted_b(nb, false);
  std::vector<int> ca, cb;
  int64_t csize = 1;
  for (size_t i = 0; i < axes_a.size(); ++i) {
    int x = normalize_axis(axes_a[i], na, "tensordot");
    int y = normalize_axis(axes_b[i], nb, "tensordot");
    if (a.shape(x) != b.shape(y)) {
      throw std::invalid_argument(
          "[tensordot] a and b must have the same shape on the contracted axes.");
    }
    contracted_a[x] = contracted_b[y] = true;
    ca.push_back(x);
    cb.push_back(y);
    csize *= a.shape(x);
  }
  // a as [free_a, contracted], b as [contracted, free_b]: one matmul.
  std::vector<int> order_a, order_b;
  Shape result;
  int64_t free_a = 1, free_b = 1;
  for (int d = 0; d < na; ++d) {
    if (!contracted_a[d]) {
      order_a.push_back(d);
      result.push_back(a.shape(d));
      free_a *= a.shape(d);
    }
  }
  order_a.insert(order_a.end(), ca.begin(), ca.end());
  order_b = cb;
  for (int d = 0; d < nb; ++d) {
    if (!contracted_b[d]) {
      order_b.push_back(d);
      result.push_back(b.shape(d));
      free_b *= b.shape(d);
    }
  }
  auto x =
      reshape(transpose(a, order_a, s), {static_cast<int>(free_a), static_cast<int>(csize)}, s);
  auto y =
      reshape(transpose(b, order_b, s), {static_cast<int>(csize), static_cast<int>(free_b)}, s);
  return reshape(matmul(x, y, s), result, s);
}

array outer(const array& a, const array& b, StreamOrDevice s) {
  return multiply(reshape(a, {static_cast<int>(a.size()), 1}, s), flatten(b, s), s);
}

array inner(const array& a, const array& b, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    return multiply(a, b, s);
  }
  if (a.shape(-1) != b.shape(-1)) {
    throw std::invalid_argument("[inner] a and b must have the same last dimension.");
  }
  return tensordot(a, b, {-1}, {-1}, s);
}

array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  if (ndim < 2) {
    throw std::invalid_argument("[trace] Array must have at least two dimensions, but got " +
                                std::to_string(ndim) + " dimensions.");
  }
  int ax1 = axis1 < 0 ? axis1 + ndim : axis1;
  int ax2 = axis2 < 0 ? axis2 + ndim : axis2;
  if (ax1 < 0 || ax1 >= ndim) {
    throw std::out_of_range("[trace] Invalid axis1 " + std::to_string(axis1) + " for array with " +
                            std::to_string(ndim) + " dimensions.");
  }
  if (ax2 < 0 || ax2 >= ndim) {
    throw std::out_of_range("[trace] Invalid axis2 " + std::to_string(axis2) + " for array with " +
                            std::to_string(ndim) + " dimensions.");
  }
  if (ax1 == ax2) {
    throw std::invalid_argument("[trace] axis1 and axis2 cannot be the same axis");
  }
  return sum(astype(diagonal(a, offset, ax1, ax2, s), dtype, s), -1, false, s);
}

array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  return trace(a, offset, axis1, axis2, a.dtype(), s);
}

array trace(const array& a, StreamOrDevice s) {
  return trace(a, 0, 0, 1, a.dtype(), s);
}

}  // namespace mlx::core
