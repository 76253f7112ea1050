// Index math shared by the CPU and GPU backends.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// Offset (in elements) of the element with flat row-major index `elem` in a strided view.
inline int64_t elem_to_loc(int64_t elem, const Shape& shape, const Strides& strides) {
  int64_t loc = 0;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * strides[i];
    elem /= shape[i];
  }
  return loc;
}

// Merges adjacent dimensions that are contiguous with each other in every one of the
// stride sets, so strided loops run over as few dimensions as possible. Size-1 dims go.
std::tuple<Shape, std::vector<Strides>> collapse_contiguous_dims(
    const Shape& shape, const std::vector<Strides>& strides);
std::tuple<Shape, std::vector<Strides>> collapse_contiguous_dims(const std::vector<array>& xs);
// The same into `out_shape` / `out_strides`, reusing their capacity (for per-dispatch paths).
void collapse_contiguous_dims(const Shape& shape, const std::vector<Strides>& strides,
                              Shape& out_shape, std::vector<Strides>& out_strides);

// Contiguity flags of a view with this shape and strides, and the number of buffer elements
// it spans when contiguous (else the span from its lowest to highest element).
struct ViewLayout {
  array::Flags flags;
  size_t data_size;
};
ViewLayout view_layout(const Shape& shape, const Strides& strides);

// Walks the element offsets of a strided view in row-major order without a division per
// element: call loc() for the current offset, then step().
class StridedIterator {
 public:
  StridedIterator(const Shape& shape, const Strides& strides)
      : shape_(shape), strides_(strides), pos_(shape.size(), 0) {}
  int64_t loc() const {
    return loc_;
  }
  void step() {
    for (int i = static_cast<int>(shape_.size()) - 1; i >= 0; --i) {
      loc_ += strides_[i];
      if (++pos_[i] < shape_[i]) {
        return;
      }
      loc_ -= strides_[i] * shape_[i];
      pos_[i] = 0;
    }
  }

 private:
  Shape shape_;
  Strides strides_;
  std::vector<int32_t> pos_;
  int64_t loc_ = 0;
};

}  // namespace mlx::core
