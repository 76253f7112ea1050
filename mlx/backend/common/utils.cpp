#include "mlx/backend/common/utils.h"

#include <algorithm>
#include <limits>

namespace mlx::core {

void collapse_contiguous_dims(const Shape& shape, const std::vector<Strides>& strides,
                              Shape& out_shape, std::vector<Strides>& out_strides) {
  out_shape.clear();
  out_strides.resize(strides.size());
  for (auto& s : out_strides) {
    s.clear();
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) {
      continue;
    }
    // A merged dim must still fit a Shape element (int32): 65536 x 32768 stays two dims.
    bool merge = !out_shape.empty() &&
                 int64_t(out_shape.back()) * shape[i] <= std::numeric_limits<int32_t>::max();
    for (size_t k = 0; merge && k < strides.size(); ++k) {
      merge = out_strides[k].back() == strides[k][i] * shape[i];
    }
    if (merge) {
      out_shape.back() *= shape[i];
      for (size_t k = 0; k < strides.size(); ++k) {
        out_strides[k].back() = strides[k][i];
      }
    } else {
      out_shape.push_back(shape[i]);
      for (size_t k = 0; k < strides.size(); ++k) {
        out_strides[k].push_back(strides[k][i]);
      }
    }
  }
}

std::tuple<Shape, std::vector<Strides>> collapse_contiguous_dims(
    const Shape& shape, const std::vector<Strides>& strides) {
  Shape out_shape;
  std::vector<Strides> out_strides;
  collapse_contiguous_dims(shape, strides, out_shape, out_strides);
  return {out_shape, out_strides};
}

std::tuple<Shape, std::vector<Strides>> collapse_contiguous_dims(const std::vector<array>& xs) {
  std::vector<Strides> strides;
  for (auto& x : xs) {
    strides.push_back(x.strides());
  }
  return collapse_contiguous_dims(xs[0].shape(), strides);
}

ViewLayout view_layout(const Shape& shape, const Strides& strides) {
  size_t size = 1;
  for (auto d : shape) {
    size *= static_cast<size_t>(d);
  }
  if (size == 0) {
    return {{true, true, true}, 0};
  }
  // Row-major check, ignoring size-1 dims whose stride never matters.
  bool row = true, col = true;
  int64_t expect = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] == 1) {
      continue;
    }
    row &= strides[i] == expect;
    expect *= shape[i];
  }
  expect = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) {
      continue;
    }
    col &= strides[i] == expect;
    expect *= shape[i];
  }
  // MLX's `contiguous`: no gaps in the data the view reads. Broadcast (stride-0) dims
  // repeat data rather than add any, so they are left out; the other dims, sorted by
  // stride, must form a row-major layout of permuted dims. data_size is then the number
  // of distinct elements (a broadcast of 4 values to 16 has data_size 4).
  std::vector<std::pair<int64_t, int32_t>> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 1 && strides[i] != 0) {
      dims.emplace_back(strides[i], shape[i]);
    }
  }
  std::sort(dims.begin(), dims.end());
  bool dense = true;
  int64_t span = 1;
  for (auto& [st, sh] : dims) {
    dense &= st == span;
    span *= sh;
  }
  size_t extent = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    extent += static_cast<size_t>(std::abs(strides[i])) * static_cast<size_t>(shape[i] - 1);
  }
  return {{dense, row, col}, dense ? static_cast<size_t>(span) : extent};
}

}  // namespace mlx::core
