// templates/include/int_ops.glsl compiled as C++ (glsl_as_cpp.h) against the CPU reference
// ops (mlx/backend/cpu/elementwise_ops.h): every integer dtype, computed the way the GPU
// does (8/16-bit values in 32 bits, truncated on store), on edge values and all their pairs.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "glsl_as_cpp.h"
#include "mlx/backend/cpu/elementwise_ops.h"

namespace cpu = mlx::core::cpu::elementwise;

namespace {

template <typename T>
std::vector<T> edge_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),     T(1),
                      T(2),     T(3),
                      T(7),     T(8),
                      T(15),    T(16),
                      T(31),    T(32),
                      T(63),    T(64),
                      L::max(), T(L::max() - 1),
                      L::min(), T(L::min() + 1),
                      T(100)};
  if constexpr (std::is_signed_v<T>) {
    for (T x : {T(-1), T(-2), T(-3), T(-7), T(-8), T(-100), T(-64)}) {
      v.push_back(x);
    }
  }
  return v;
}

// The GPU's view of a T value: its compute type (32-bit for narrow types) wrapped.
template <typename T, typename W>
W load(T x) {
  return W(x);  // sign- or zero-extends, as GLSL's int(int8_t) / uint(uint8_t)
}

template <typename T, typename W>
T store(W v) {
  return static_cast<T>(v.v);  // truncation, as GLSL's int8_t(int)
}

#define EXPECT_INT_BINARY(ns, T, name, gpu_fn, Ref)                                            \
  for (T a : edge_values<T>()) {                                                               \
    for (T b : edge_values<T>()) {                                                             \
      using W = decltype(glsl::ns::op_negative(glsl::ns::OP_T_of(0)));                         \
      T got = store<T>(glsl::ns::gpu_fn(load<T, W>(a), load<T, W>(b)));                        \
      T want = cpu::Ref{}(a, b);                                                               \
      if (got != want) {                                                                       \
        FAIL_CHECK(name << "<" #T ">(" << +a << ", " << +b << ") = " << +got << ", CPU gives " \
                        << +want);                                                             \
      }                                                                                        \
    }                                                                                          \
  }

}  // namespace

// Give each namespace a way to name its OP_T for the macro above.
namespace glsl {
#define MLX_OP_T_OF(ns, W)  \
  namespace ns {            \
  inline W OP_T_of(int x) { \
    return W(x);            \
  }                         \
  }
MLX_OP_T_OF(ops_i8, Wrap<int32_t>)
MLX_OP_T_OF(ops_i16, Wrap<int32_t>)
MLX_OP_T_OF(ops_i32, Wrap<int32_t>)
MLX_OP_T_OF(ops_i64, Wrap<int64_t>)
MLX_OP_T_OF(ops_u8, Wrap<uint32_t>)
MLX_OP_T_OF(ops_u16, Wrap<uint32_t>)
MLX_OP_T_OF(ops_u32, Wrap<uint32_t>)
MLX_OP_T_OF(ops_u64, Wrap<uint64_t>)
#undef MLX_OP_T_OF
}  // namespace glsl

#define EXPECT_ALL_BINARY(ns, T)                                         \
  EXPECT_INT_BINARY(ns, T, "floor_divide", op_floor_divide, FloorDivide) \
  EXPECT_INT_BINARY(ns, T, "remainder", op_remainder, Remainder)         \
  EXPECT_INT_BINARY(ns, T, "power", op_power, Power)                     \
  EXPECT_INT_BINARY(ns, T, "maximum", op_maximum, Maximum)               \
  EXPECT_INT_BINARY(ns, T, "minimum", op_minimum, Minimum)               \
  EXPECT_INT_BINARY(ns, T, "left_shift", op_left_shift, LeftShift)       \
  EXPECT_INT_BINARY(ns, T, "right_shift", op_right_shift, RightShift)

#define EXPECT_INT_UNARY(ns, T, name, gpu_fn, Ref)                                        \
  for (T a : edge_values<T>()) {                                                          \
    using W = decltype(glsl::ns::OP_T_of(0));                                             \
    T got = store<T>(glsl::ns::gpu_fn(load<T, W>(a)));                                    \
    T want = cpu::Ref{}(a);                                                               \
    if (got != want) {                                                                    \
      FAIL_CHECK(name << "<" #T ">(" << +a << ") = " << +got << ", CPU gives " << +want); \
    }                                                                                     \
  }

#define EXPECT_ALL_UNARY(ns, T)                              \
  EXPECT_INT_UNARY(ns, T, "abs", op_abs, Abs)                \
  EXPECT_INT_UNARY(ns, T, "negative", op_negative, Negative) \
  EXPECT_INT_UNARY(ns, T, "sign", op_sign, Sign)             \
  EXPECT_INT_UNARY(ns, T, "square", op_square, Square)

TEST_CASE("GLSL integer ops match the CPU reference for signed dtypes"){
    EXPECT_ALL_BINARY(ops_i8, int8_t) EXPECT_ALL_BINARY(ops_i16, int16_t)
        EXPECT_ALL_BINARY(ops_i32, int32_t) EXPECT_ALL_BINARY(ops_i64, int64_t)
            EXPECT_ALL_UNARY(ops_i8, int8_t) EXPECT_ALL_UNARY(ops_i16, int16_t)
                EXPECT_ALL_UNARY(ops_i32, int32_t) EXPECT_ALL_UNARY(ops_i64, int64_t)}

TEST_CASE("GLSL integer ops match the CPU reference for unsigned dtypes"){
    EXPECT_ALL_BINARY(ops_u8, uint8_t) EXPECT_ALL_BINARY(ops_u16, uint16_t)
        EXPECT_ALL_BINARY(ops_u32, uint32_t) EXPECT_ALL_BINARY(ops_u64, uint64_t)
            EXPECT_ALL_UNARY(ops_u8, uint8_t) EXPECT_ALL_UNARY(ops_u16, uint16_t)
                EXPECT_ALL_UNARY(ops_u32, uint32_t) EXPECT_ALL_UNARY(ops_u64, uint64_t)}

// bool computes as uint 0/1 with the unsigned helpers (OP_BITS 8) and stores != 0.
TEST_CASE("GLSL bool arithmetic matches the CPU reference") {
  using W = glsl::Wrap<uint32_t>;
  for (bool a : {false, true}) {
    for (bool b : {false, true}) {
      auto st = [](W v) { return v.v != 0; };
      CHECK(st(glsl::ops_u8::op_floor_divide(W(a), W(b))) == cpu::FloorDivide{}(a, b));
      CHECK(st(glsl::ops_u8::op_remainder(W(a), W(b))) == cpu::Remainder{}(a, b));
      CHECK(st(glsl::ops_u8::op_power(W(a), W(b))) == cpu::Power{}(a, b));
      CHECK(st(glsl::ops_u8::op_maximum(W(a), W(b))) == cpu::Maximum{}(a, b));
      CHECK(st(glsl::ops_u8::op_minimum(W(a), W(b))) == cpu::Minimum{}(a, b));
      // Add/Subtract/Multiply are plain +, -, * on uint in the kernel.
      CHECK(st(W(a) + W(b)) == cpu::Add{}(a, b));
      CHECK(st(W(a) - W(b)) == cpu::Subtract{}(a, b));
      CHECK(st(W(a) * W(b)) == cpu::Multiply{}(a, b));
    }
  }
}
