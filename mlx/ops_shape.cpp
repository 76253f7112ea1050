// Shape and view ops: reshape, broadcast, transpose, slicing, joining and indexing.
#include <numeric>
#include <sstream>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

Shape broadcast_shapes(const Shape& s1, const Shape& s2) {
  size_t ndim = std::max(s1.size(), s2.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int a = i < ndim - s1.size() ? 1 : s1[i - (ndim - s1.size())];
    int b = i < ndim - s2.size() ? 1 : s2[i - (ndim - s2.size())];
    if (a != b && a != 1 && b != 1) {
      throw std::invalid_argument("[broadcast_shapes] shapes " + shape_to_string(s1) + " and " +
                                  shape_to_string(s2) + " cannot be broadcast.");
    }
    out[i] = a == 1 ? b : a;
  }
  return out;
}

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) {
    return a;
  }
  if (shape.size() < a.ndim() || broadcast_shapes(a.shape(), shape) != shape) {
    throw std::invalid_argument("[broadcast_to] cannot broadcast array of shape " +
                                shape_to_string(a.shape()) + " to shape " +
                                shape_to_string(shape) + ".");
  }
  return array(shape, a.dtype(), std::make_shared<Broadcast>(to_stream(s), shape), {a});
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  Shape shape;
  for (auto& in : inputs) {
    shape = broadcast_shapes(shape, in.shape());
  }
  std::vector<array> out;
  out.reserve(inputs.size());
  for (auto& in : inputs) {
    out.push_back(broadcast_to(in, shape, s));
  }
  return out;
}

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  int infer = -1;
  size_t size = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw std::invalid_argument("[reshape] can only infer one dimension.");
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument("[reshape] invalid negative dimension " +
                                  std::to_string(shape[i]) + ".");
    } else {
      size *= static_cast<size_t>(shape[i]);
    }
  }
  if (infer >= 0) {
    if (size == 0 || a.size() % size != 0) {
      throw std::invalid_argument("[reshape] cannot infer the shape of an array of size " +
                                  std::to_string(a.size()) + " reshaped to " +
                                  shape_to_string(shape) + ".");
    }
    shape[infer] = static_cast<ShapeElem>(a.size() / size);
    size = a.size();
  }
  if (size != a.size()) {
    throw std::invalid_argument("[reshape] cannot reshape array of size " +
                                std::to_string(a.size()) + " into shape " +
                                shape_to_string(shape) + ".");
  }
  if (shape == a.shape()) {
    return a;
  }
  auto out_shape = shape;
  return array(std::move(out_shape), a.dtype(), std::make_shared<Reshape>(to_stream(s), shape),
               {a});
}

} // namespace mlx::core
