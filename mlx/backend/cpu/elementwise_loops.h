// Loop drivers shared by the CPU elementwise primitives (unary, binary, divmod, select):
// output allocation with buffer donation, and a walk over the output in row-major order
// that hands a kernel one row at a time (a start offset and a stride per input).
#pragma once

#include <array>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/common/utils.h"

namespace mlx::core::cpu {

// True when every element of the view reads the same buffer element (a broadcast scalar).
inline bool is_scalar_view(const array& a) {
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (a.shape()[i] != 1 && a.strides()[i] != 0) {
      return false;
    }
  }
  return true;
}

// Gives `out` a row-contiguous buffer. Reuses a donor's buffer when nothing else can see it
// (the graph holds the only reference to the array and to its data) and it has out's shape,
// row-major layout and element size: kernels read element i of every input before writing
// element i of the output, so writing in place is safe.
inline void set_output_buffer(array& out, std::initializer_list<const array*> donors) {
  for (const array* in : donors) {
    if (in->is_donatable() && in->flags().row_contiguous && in->shape() == out.shape() &&
        in->itemsize() == out.itemsize() && in->data_size() == out.size()) {
      out.copy_shared_buffer(*in);
      return;
    }
  }
  out.set_data(allocator::malloc(out.nbytes()));
}

// Inputs of an elementwise primitive are broadcast to the output shape by the op layer.
inline void check_same_shape(const char* op, const std::vector<array>& inputs, const Shape& shape,
                             size_t count) {
  if (inputs.size() != count) {
    throw std::invalid_argument(std::string("[") + op + "] expected " + std::to_string(count) +
                                " inputs, got " + std::to_string(inputs.size()) + ".");
  }
  for (auto& in : inputs) {
    if (in.shape() != shape) {
      throw std::invalid_argument(std::string("[") + op +
                                  "] inputs must already be broadcast to the output shape.");
    }
  }
}

// Calls row(base, inc, out_start, count) for runs of output elements: output element
// out_start + t reads input k at element offset base[k] + t * inc[k]. Handles contiguous
// and broadcast-scalar inputs as one run, and any other strides (broadcast, transposed,
// sliced, negative) by collapsing dimensions and iterating over the outer ones.
template <size_t N, typename RowFn>
void for_each_row(const std::array<const array*, N>& ins, const Shape& shape, RowFn&& row) {
  size_t n = 1;
  for (auto d : shape) {
    n *= static_cast<size_t>(d);
  }
  if (n == 0) {
    return;
  }
  std::array<int64_t, N> base{};
  std::array<int64_t, N> inc{};

  bool flat = true;
  for (size_t k = 0; k < N; ++k) {
    bool scalar = is_scalar_view(*ins[k]);
    flat &= scalar || ins[k]->flags().row_contiguous;
    inc[k] = scalar ? 0 : 1;
  }
  if (flat) {
    row(base, inc, size_t(0), n);
    return;
  }

  std::vector<Strides> strides{row_major_strides(shape)};
  for (auto* in : ins) {
    strides.push_back(in->strides());
  }
  auto [cshape, cstrides] = collapse_contiguous_dims(shape, strides);
  if (cshape.empty()) {  // every dimension has size 1
    row(base, inc, size_t(0), size_t(1));
    return;
  }
  size_t last = cshape.size() - 1;
  size_t len = static_cast<size_t>(cshape[last]);
  for (size_t k = 0; k < N; ++k) {
    inc[k] = cstrides[k + 1][last];
  }
  // The output is row-major, so run r starts at output element r * len.
  Shape outer(cshape.begin(), cshape.begin() + last);
  std::vector<StridedIterator> its;
  its.reserve(N);
  for (size_t k = 0; k < N; ++k) {
    Strides s(cstrides[k + 1].begin(), cstrides[k + 1].begin() + last);
    its.emplace_back(outer, s);
  }
  size_t rows = n / len;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < N; ++k) {
      base[k] = its[k].loc();
      its[k].step();
    }
    row(base, inc, r * len, len);
  }
}

}  // namespace mlx::core::cpu
