// complex64 storage type: two float32 values, as in MLX.
#pragma once

#include <complex>

namespace mlx::core {

struct complex64_t : public std::complex<float> {
  using std::complex<float>::complex;
  complex64_t(const std::complex<float>& c) : std::complex<float>(c) {}
  template <typename T>
    requires std::is_arithmetic_v<T>
  complex64_t(T v) : std::complex<float>(static_cast<float>(v), 0.0f) {}
  // Casting complex to a real type keeps the real part, as MLX does.
  template <typename T>
    requires std::is_arithmetic_v<T>
  explicit operator T() const {
    return static_cast<T>(real());
  }
};

} // namespace mlx::core
