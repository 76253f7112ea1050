// The math is the row kernel's (templates/norm.glsl), in f32 and rounded once into the
// output: the row statistics come from the reduce family, which cuts long rows into
// segments itself, and everything else from elementwise launches, one per row where a row
// is combined with its own statistic (a broadcast row wider than a binding cannot be cut
// along dim 0 by launch_elementwise). Rows this long are few (each is over 128 MiB on
// lavapipe), so the launches per row do not matter.
#include "mlx/backend/vulkan/norm_long.h"

#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/dense_copy.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/primitives.h"

namespace mlx::core::vulkan {

namespace {

struct RowMath {
  Stream stream;
  CommandEncoder& enc;
  int64_t count;
  int64_t len;

  // A new f32 array, kept alive until the batch completes.
  array temp(Shape shape) const {
    array a(std::move(shape), float32, nullptr, {});
    a.set_data(allocator::malloc(a.nbytes()));
    enc.retain(a.data_shared_ptr());
    return a;
  }

  // `a`'s elements in f32, row-contiguous: `a` itself when it already is, else a copy.
  array f32(const array& a) const {
    if (a.dtype() == float32 && a.flags().row_contiguous) {
      return a;
    }
    array t = temp(a.shape());
    copy_dense(stream.index, view_of(a), a.shape(), view_of(t));
    return t;
  }

  // [count, 1] of `type` over each row of t.
  array stat(const array& t, ReduceType type) const {
    array s({static_cast<int>(count), 1}, float32, nullptr, {});
    Reduce(stream, type, {1}).eval_gpu({t}, s);
    enc.retain(s.data_shared_ptr());
    return s;
  }

  void unary(const std::string& op, const array& in, const array& out) const {
    launch_elementwise(stream.index, "norm", "unary", op, {view_of(in)}, view_of(out), in.shape());
  }

  // v = v (op) c for a [count, 1] statistic and a constant.
  void with_constant(const std::string& op, const array& v, float c) const {
    array k = temp({1});
    enc.write({allocation(k.buffer()), 0, 4, false}, &c, 4);
    View kv = view_of(k);
    kv.strides = {0, 0};
    launch_elementwise(stream.index, "norm", "binary", op, {view_of(v), kv}, view_of(v), v.shape());
  }

  // Row r of t = row r of t (op) element r of v (or, with per_row false, v[i * stride] for
  // element i of every row: a weight or bias).
  void rows(const std::string& op, const array& t, const array& v, bool per_row,
            int64_t stride = 1) const {
    auto isz = static_cast<int64_t>(sizeof(float));
    for (int64_t r = 0; r < count; ++r) {
      View row{t.buffer(), static_cast<int64_t>(t.offset()) + r * len * isz, float32, {1}};
      View other = view_of(v);
      if (per_row) {
        other.offset += r * isz;
        other.strides = {0};
      } else {
        other.strides = {stride};
      }
      launch_elementwise(stream.index, "norm", "binary", op, {row, other}, row,
                         {static_cast<int>(len)});
    }
  }

  // rsqrt(sum / len + eps) from a [count, 1] sum of squares, in place.
  void inverse_rms(const array& v, float eps) const {
    with_constant("Multiply", v, 1.0f / static_cast<float>(len));
    with_constant("Add", v, eps);
    unary("Rsqrt", v, v);
  }
};

}  // namespace

void eval_norm_long_rows(Primitive& p, const std::string& op, float eps,
                         const std::vector<array>& inputs, array& out) {
  const array& x = inputs[0];
  int64_t len = x.shape(-1);
  int64_t count = static_cast<int64_t>(x.size()) / len;
  RowMath m{p.stream(), encoder(p.stream().index), count, len};
  // The working rows: the output itself when it is f32 (no final copy), else a temporary.
  Shape rows{static_cast<int>(count), static_cast<int>(len)};
  array t = out.dtype() == float32 ? array(out.buffer(), rows, float32, [](allocator::Buffer) {})
                                   : m.temp(rows);
  copy_dense(p.stream().index, view_of(x), x.shape(), view_of(t));
  if (op == "softmax") {
    m.rows("Subtract", t, m.stat(t, ReduceType::Max), true);
    m.unary("Exp", t, t);
    m.rows("Divide", t, m.stat(t, ReduceType::Sum), true);
  } else {
    if (op == "layer") {
      array mean = m.stat(t, ReduceType::Sum);
      m.with_constant("Multiply", mean, 1.0f / static_cast<float>(len));
      m.rows("Subtract", t, mean, true);
    }
    array squares = m.temp(t.shape());
    m.unary("Square", t, squares);
    array scale = m.stat(squares, ReduceType::Sum);
    m.inverse_rms(scale, eps);
    m.rows("Multiply", t, scale, true);
    m.rows("Multiply", t, m.f32(inputs[1]), false, inputs[1].size() == 1 ? 0 : 1);
    if (op == "layer") {
      m.rows("Add", t, m.f32(inputs[2]), false, inputs[2].size() == 1 ? 0 : 1);
    }
  }
  if (out.dtype() != float32) {
    copy_dense(p.stream().index, view_of(t), t.shape(), view_of(out));
  }
}

}  // namespace mlx::core::vulkan
