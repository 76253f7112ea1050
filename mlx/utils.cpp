#include "mlx/utils.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "mlx/dtype_utils.h"
#include "mlx/ops.h"

namespace mlx::core {

int normalize_axis(int axis, int ndim, const char* op) {
  if (axis < -ndim || axis >= std::max(ndim, 0) || (ndim == 0)) {
    std::ostringstream msg;
    msg << "[" << op << "] axis " << axis << " is out of bounds for array with " << ndim
        << " dimensions.";
    throw std::invalid_argument(msg.str());
  }
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int ax : axes) {
    out.push_back(normalize_axis(ax, ndim, op));
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw std::invalid_argument(std::string("[") + op + "] received duplicate axes.");
  }
  return out;
}

ShapeElem checked_dim(int64_t n, const char* op) {
  if (n > std::numeric_limits<ShapeElem>::max()) {
    throw std::invalid_argument(std::string("[") + op + "] a dimension of " + std::to_string(n) +
                                " elements is more than a dimension can hold (2^31 - 1).");
  }
  return static_cast<ShapeElem>(n);
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    os << (i ? "," : "") << shape[i];
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << shape_to_string(s);
}

namespace {

template <typename T>
void print_value(std::ostream& os, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
    os << static_cast<int>(v);
  } else if constexpr (is_half_v<T>) {
    os << static_cast<float>(v);
  } else if constexpr (is_complex_v<T>) {
    os << v.real() << (v.imag() < 0 ? "-" : "+") << std::abs(v.imag()) << "j";
  } else {
    os << v;
  }
}

template <typename T>
void print_recursive(std::ostream& os, const T* data, const array& a, int dim, int64_t offset) {
  if (dim == static_cast<int>(a.ndim())) {
    print_value(os, data[offset]);
    return;
  }
  os << "[";
  int n = a.shape(dim);
  // Long dimensions print their first and last three entries, as MLX/NumPy do.
  bool elide = n > 6;
  for (int i = 0; i < n; ++i) {
    if (elide && i == 3) {
      os << ", ...";
      i = n - 3;
    }
    if (i > 0) {
      os << (dim + 1 == static_cast<int>(a.ndim()) ? ", " : ",\n" + std::string(dim + 7, ' '));
    }
    print_recursive(os, data, a, dim + 1, offset + i * a.strides(dim));
  }
  os << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, array a) {
  a.eval();
  os << "array(";
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    print_recursive(os, a.data<T>(), a, 0, 0);
  });
  os << ", dtype=" << a.dtype() << ")";
  return os;
}

}  // namespace mlx::core
