// quantize, dequantize and quantized_matmul: MLX's argument checks (and its wording where it
// has one), the output dtypes, and the casts and broadcasts that leave each primitive one
// float dtype and one layout (mlx/primitives.h). The format: docs/quantization.md.
#include <stdexcept>

#include "mlx/fusion.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

[[noreturn]] void fail(const char* op, const std::string& msg) {
  throw std::invalid_argument(std::string("[") + op + "] " + msg);
}

void check_mode(const char* op, const std::string& mode) {
  if (mode == "mxfp4" || mode == "mxfp8" || mode == "nvfp4") {
    fail(op, std::string("Quantization mode '") + mode +
                 "' is not supported here; only 'affine' is implemented.");
  }
  if (mode != "affine") {
    fail(op, std::string("Invalid quantization mode '") + mode + "'.");
  }
}

struct Params {
  int group_size;
  int bits;
};

// MLX's defaults for "affine", and the values its kernels exist for.
Params check_params(const char* op, std::optional<int> group_size_in, std::optional<int> bits_in) {
  Params p{group_size_in.value_or(64), bits_in.value_or(4)};
  if (p.group_size != 32 && p.group_size != 64 && p.group_size != 128) {
    fail(op, std::string("The requested group size ") + std::to_string(p.group_size) +
                 " is not supported. The supported group sizes are 32, 64, and 128.");
  }
  if (p.bits < 2 || p.bits > 8 || p.bits == 7) {
    fail(op, std::string("The requested number of bits ") + std::to_string(p.bits) +
                 " is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.");
  }
  return p;
}

// Affine mode needs biases, and scales/biases of a real float type; returns that type.
Dtype check_scales_biases(const char* op, const array& scales, const std::optional<array>& biases) {
  if (!biases) {
    fail(op, "Biases must be provided for affine quantization.");
  }
  Dtype t = promote_types(scales.dtype(), biases->dtype());
  if (!issubdtype(t, floating)) {
    fail(op, std::string("Only real floating types are supported but scales.dtype() == ") +
                 dtype_to_string(scales.dtype()) +
                 " and biases.dtype() == " + dtype_to_string(biases->dtype()) + ".");
  }
  return t;
}

// MLX's global scale belongs to "nvfp4", which does not exist here.
void check_no_global_scale(const char* op, const std::optional<array>& global_scale) {
  if (global_scale) {
    fail(op, "Global scale is only supported for 'nvfp4' quantization mode.");
  }
}

// The packed last dimension w_last holds scales_last groups: w_last * 32 == K * bits with
// K = scales_last * group_size (exact, so no truncating division can make a mismatch pass).
bool packed_matches(int w_last, int scales_last, Params p) {
  return int64_t{w_last} * 32 == int64_t{scales_last} * p.group_size * p.bits;
}

std::string params_text(Params p) {
  return std::string("group_size=") + std::to_string(p.group_size) +
         " and bits=" + std::to_string(p.bits);
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size_in,
                            std::optional<int> bits_in, const std::string& mode,
                            const std::optional<array>& global_scale, StreamOrDevice s) {
  check_mode("quantize", mode);
  // MLX checks the dtype, rank and divisibility before the parameter values; so do we, so
  // that one bad call gets MLX's message.
  Params p{group_size_in.value_or(64), bits_in.value_or(4)};
  if (!issubdtype(w.dtype(), floating)) {
    fail("quantize", std::string("Only real floating types can be quantized but w has type ") +
                         dtype_to_string(w.dtype()) + ".");
  }
  if (w.dtype() == float64) {
    // MLX accepts float64 here and then fails at eval: its CPU quantize has no float64 case.
    fail("quantize", "float64 cannot be quantized; use float32, float16 or bfloat16.");
  }
  if (w.ndim() < 2) {
    fail("quantize", std::string("The matrix to be quantized must have at least 2 dimension "
                                 "but it has only ") +
                         std::to_string(w.ndim()) + ".");
  }
  if (p.group_size > 0 && w.shape(-1) % p.group_size != 0) {
    fail("quantize", std::string("The last dimension of the matrix needs to be divisible by the "
                                 "quantization group size ") +
                         std::to_string(p.group_size) + ". However the provided matrix has shape " +
                         shape_to_string(w.shape()));
  }
  check_no_global_scale("quantize", global_scale);
  p = check_params("quantize", group_size_in, bits_in);

  auto stream = to_stream(s);
  Shape wq_shape = w.shape(), s_shape = w.shape();
  wq_shape.back() = w.shape(-1) / 32 * p.bits;  // K is a multiple of 32
  s_shape.back() = w.shape(-1) / p.group_size;
  return array::make_arrays({wq_shape, s_shape, s_shape}, {uint32, w.dtype(), w.dtype()},
                            std::make_shared<AffineQuantize>(stream, p.group_size, p.bits), {w});
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size_in, std::optional<int> bits_in,
                 const std::string& mode, const std::optional<array>& global_scale,
                 std::optional<Dtype> dtype, StreamOrDevice s) {
  check_mode("dequantize", mode);
  if (dtype && !issubdtype(*dtype, floating)) {
    fail("dequantize", std::string("Only real floating types are supported but output dtype == ") +
                           dtype_to_string(*dtype) + ".");
  }
  Dtype t = check_scales_biases("dequantize", scales, biases);
  Params p = check_params("dequantize", group_size_in, bits_in);
  if (w.dtype() != uint32) {
    fail("dequantize", "The matrix should be given as a uint32");
  }
  if (w.ndim() < 2) {
    fail("dequantize", std::string("The matrix to be dequantized must have at least 2 "
                                   "dimension but it has only ") +
                           std::to_string(w.ndim()) + ".");
  }
  check_no_global_scale("dequantize", global_scale);
  Shape ws(w.shape().begin(), w.shape().end() - 1);
  Shape ss(scales.shape().begin(), scales.shape().end() - (scales.ndim() > 0 ? 1 : 0));
  if (scales.ndim() != w.ndim() || ws != ss || biases->shape() != scales.shape()) {
    fail("dequantize",
         std::string("Shape of scales and biases does not match the matrix: w has shape ") +
             shape_to_string(w.shape()) + ", scales " + shape_to_string(scales.shape()) +
             " and biases " + shape_to_string(biases->shape()) +
             "; scales and biases must have w's shape but for the last dimension.");
  }
  if (!packed_matches(w.shape(-1), scales.shape(-1), p)) {
    fail("dequantize", std::string("Shape of scales and biases does not match the matrix given the "
                                   "quantization parameters. Provided matrix of shape ") +
                           shape_to_string(w.shape()) + " and scales/biases of shape " +
                           shape_to_string(scales.shape()) + " with " + params_text(p) + ".");
  }

  auto stream = to_stream(s);
  Shape out_shape = w.shape();
  out_shape.back() = scales.shape(-1) * p.group_size;
  auto prim = std::make_shared<Dequantize>(stream, p.group_size, p.bits);
  array out = [&] {
    if (scales.dtype() == biases->dtype()) {
      // A quantized embedding's lookup reads the table's rows through the indices itself.
      if (auto r = taken_rows(w, scales, *biases, stream)) {
        return array(out_shape, t, std::make_shared<Dequantize>(stream, p.group_size, p.bits, true),
                     {r->w, r->scales, r->biases, r->ids});
      }
      return array(out_shape, t, prim, {w, scales, *biases});
    }
    // Mixed dtypes: MLX multiplies in scales' dtype and adds in result_type(scales, biases).
    // Zero biases give exactly scale * q rounded to scales' dtype; add() does the rest.
    array scaled(out_shape, scales.dtype(), prim, {w, scales, zeros_like(scales, stream)});
    Shape grouped = scales.shape();
    grouped.push_back(p.group_size);
    return reshape(add(reshape(scaled, grouped, stream), expand_dims(*biases, -1, stream), stream),
                   out_shape, stream);
  }();
  return astype(out, dtype.value_or(t), stream);
}

array quantized_matmul(array x, array w, array scales, std::optional<array> biases, bool transpose,
                       std::optional<int> group_size_in, std::optional<int> bits_in,
                       const std::string& mode, StreamOrDevice s) {
  const char* op = "quantized_matmul";
  check_mode(op, mode);
  // A SwiGLU of a decode-sized product's halves becomes that product's epilogue
  // (mlx/fusion.h): x is then the activation computed inside the gate/up product.
  if (auto fused = glu_of_product(x, to_stream(s))) {
    x = *fused;
  }
  Dtype t = check_scales_biases(op, scales, biases);
  Params p = check_params(op, group_size_in, bits_in);
  if (w.dtype() != uint32) {
    fail(op, std::string("The weight matrix should be uint32 but received ") +
                 dtype_to_string(w.dtype()));
  }
  if (scales.shape() != biases->shape()) {
    fail(op, std::string("Scales and biases should have the same shape. Received scales with "
                         "shape ") +
                 shape_to_string(scales.shape()) + " and biases with " +
                 shape_to_string(biases->shape()));
  }
  if (x.ndim() == 0 || w.ndim() < 2) {
    fail(op, std::string("x must have at least 1 dimension and w at least 2 but x has shape ") +
                 shape_to_string(x.shape()) + " and w " + shape_to_string(w.shape()) + ".");
  }
  if (scales.ndim() != w.ndim() ||
      !std::equal(w.shape().begin(), w.shape().end() - 2, scales.shape().begin())) {
    fail(op, std::string("Weight and scales should have the same batch shape. Received weight "
                         "with shape ") +
                 shape_to_string(w.shape()) + ", scales with " + shape_to_string(scales.shape()) +
                 ".");
  }
  // MLX does not check this dimension; a mismatch would read past the scales.
  if (scales.shape(-2) != w.shape(-2)) {
    fail(op, std::string("Weight and scales should have the same number of rows. Received "
                         "weight with shape ") +
                 shape_to_string(w.shape()) + ", scales with " + shape_to_string(scales.shape()) +
                 ".");
  }
  if (!packed_matches(w.shape(-1), scales.shape(-1), p)) {
    fail(op, std::string("The shapes of the weight and scales are incompatible based on bits "
                         "and group_size. w.shape() == ") +
                 shape_to_string(w.shape()) + " and scales.shape() == " +
                 shape_to_string(scales.shape()) + " with " + params_text(p));
  }
  int unpacked = scales.shape(-1) * p.group_size;
  int w_inner = transpose ? unpacked : w.shape(-2);
  int w_outer = transpose ? w.shape(-2) : unpacked;
  if (x.shape(-1) != w_inner) {
    fail(op, std::string("Last dimension of first input with shape (..., ") +
                 std::to_string(x.shape(-1)) + ") does not match the expanded quantized matrix (" +
                 std::to_string(w_inner) + ", " + std::to_string(w_outer) +
                 ") computed from shape " + shape_to_string(w.shape()) + " with " + params_text(p) +
                 " and transpose=" + (transpose ? "true" : "false"));
  }
  Dtype out_type = promote_types(x.dtype(), t);
  if (!issubdtype(out_type, floating)) {
    fail(op, std::string("Only real floating types are supported but x.dtype() == ") +
                 dtype_to_string(x.dtype()) + ".");
  }
  if (out_type == float64) {
    // MLX accepts it here and then fails at eval: its CPU kernel has no float64 case either.
    fail(op, "float64 is not supported; use float32, float16 or bfloat16.");
  }

  auto stream = to_stream(s);
  bool vector_x = x.ndim() == 1;
  x = astype(vector_x ? reshape(x, {1, x.shape(0)}, stream) : x, out_type, stream);
  scales = astype(scales, out_type, stream);
  array b = astype(*biases, out_type, stream);
  if (w.ndim() > 2) {
    // Batched weights: every operand takes the common batch shape (MLX does this only when x
    // also has batch dims; with a 2-d x it keeps x's shape and reads w's first batch).
    Shape xb(x.shape().begin(), x.shape().end() - 2);
    Shape wb(w.shape().begin(), w.shape().end() - 2);
    Shape batch;
    try {
      batch = broadcast_shapes(xb, wb);
    } catch (const std::invalid_argument&) {
      fail(op, std::string("batch dimensions of x ") + shape_to_string(x.shape()) + " and w " +
                   shape_to_string(w.shape()) + " cannot be broadcast.");
    }
    auto widen = [&](const array& a) {
      Shape shape = batch;
      shape.insert(shape.end(), a.shape().end() - 2, a.shape().end());
      return broadcast_to(a, shape, stream);
    };
    x = widen(x);
    w = widen(w);
    scales = widen(scales);
    b = widen(b);
  }
  Shape out_shape = x.shape();
  out_shape.back() = w_outer;
  bool plain_w = w.ndim() == 2;
  // Moved, not listed in braces: a braced list copies each array twice.
  std::vector<array> inputs;
  inputs.reserve(5);
  inputs.push_back(std::move(x));
  inputs.push_back(std::move(w));
  inputs.push_back(std::move(scales));
  inputs.push_back(std::move(b));
  std::optional<float> norm_eps;
  // The product of an rms_norm's rows reads the norm's input (mlx/fusion.h).
  if (plain_w) {
    if (auto norm = absorbable_rms_norm(inputs[0], stream)) {
      inputs[0] = norm->x;
      inputs.push_back(norm->weight);
      norm_eps = norm->eps;
    }
  }
  array out(out_shape, out_type,
            std::make_shared<QuantizedMatmul>(stream, p.group_size, p.bits, transpose, norm_eps),
            std::move(inputs));
  if (vector_x) {
    out = squeeze(out, -2, stream);
  }
  return out;
}

}  // namespace mlx::core
