// Compile-time dispatch from a runtime Dtype to its C++ storage type, and value casts
// between any two storage types with MLX's semantics.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "mlx/dtype.h"

namespace mlx::core {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T the storage type of dt.
template <typename F>
decltype(auto) dispatch_dtype(Dtype dt, F&& f) {
  switch (dt) {
    case bool_:
      return f(TypeTag<bool>{});
    case uint8:
      return f(TypeTag<uint8_t>{});
    case uint16:
      return f(TypeTag<uint16_t>{});
    case uint32:
      return f(TypeTag<uint32_t>{});
    case uint64:
      return f(TypeTag<uint64_t>{});
    case int8:
      return f(TypeTag<int8_t>{});
    case int16:
      return f(TypeTag<int16_t>{});
    case int32:
      return f(TypeTag<int32_t>{});
    case int64:
      return f(TypeTag<int64_t>{});
    case float16:
      return f(TypeTag<float16_t>{});
    case bfloat16:
      return f(TypeTag<bfloat16_t>{});
    case float32:
      return f(TypeTag<float>{});
    case float64:
      return f(TypeTag<double>{});
    case complex64:
      return f(TypeTag<complex64_t>{});
  }
  throw std::invalid_argument("[dispatch_dtype] unknown dtype.");
}

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

template <typename T>
inline constexpr bool is_complex_v = std::is_same_v<T, complex64_t>;

// The type arithmetic is done in: f32 for 16-bit floats, the type itself otherwise.
template <typename T>
using compute_type_t = std::conditional_t<is_half_v<T>, float, T>;

// Float to integer casts are defined for every input: NaN becomes 0 and values outside
// the target range saturate. C++ (and SPIR-V) leave these undefined; GPU kernels do the same.
template <typename To, typename From>
To saturating_float_to_int(From v) {
  double d = static_cast<double>(v);
  if (std::isnan(d)) {
    return To(0);
  }
  if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) {
    return std::numeric_limits<To>::lowest();
  }
  if (d >= static_cast<double>(std::numeric_limits<To>::max())) {
    return std::numeric_limits<To>::max();
  }
  return static_cast<To>(d);
}

// Converts one value between storage types: complex->real keeps the real part (->bool
// tests both parts), 16-bit
// floats round to nearest-even, float->int saturates.
template <typename To, typename From>
To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<From> && std::is_same_v<To, bool>) {
    return v.real() != 0.0f || v.imag() != 0.0f;  // as MLX: any non-zero part is true
  } else if constexpr (is_complex_v<From>) {
    return cast_value<To>(v.real());
  } else if constexpr (is_complex_v<To>) {
    return To(static_cast<float>(cast_value<float>(v)), 0.0f);
  } else if constexpr (is_half_v<From>) {
    return cast_value<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return saturating_float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace mlx::core
