// Dtype conversions of templates/include/types.glsl compiled as C++ (glsl_as_cpp.h), against
// the CPU's float16_t / bfloat16_t (mlx/types/half_types.h) and cast_value
// (mlx/dtype_utils.h): bit-exact, since GPU and CPU must store the same values.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "glsl_as_cpp.h"
#include "mlx/dtype_utils.h"
#include "mlx/types/half_types.h"

using mlx::core::bfloat16_t;
using mlx::core::cast_value;
using mlx::core::float16_t;

namespace {

// Every exponent with many mantissas, plus all the rounding boundaries of f16 and bf16.
template <typename F>
void for_sample_floats(F&& f) {
  for (uint32_t hi = 0; hi < 512; ++hi) {  // sign and exponent
    for (uint32_t k = 0; k < 4096; ++k) {
      uint32_t mant = (k * 2654435761u) & 0x7fffffu;
      f(std::bit_cast<float>((hi << 23) | mant));
    }
    for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffu, 0x8000u, 0x8001u,
                         0x18000u, 0x7fffffu, 0x400000u}) {
      f(std::bit_cast<float>((hi << 23) | low));
    }
  }
}

}  // namespace

TEST_CASE("GLSL f16 conversions are bit-identical to the CPU's float16_t") {
  int mismatches = 0;
  for_sample_floats([&](float x) {
    uint32_t got = glsl::f32_to_f16_bits(x);
    uint32_t want = float16_t(x).bits_;
    if (got != want && mismatches++ < 5) {
      FAIL_CHECK("f32 " << x << " (0x" << std::hex << std::bit_cast<uint32_t>(x) << ") -> f16 0x"
                        << got << ", CPU 0x" << want);
    }
  });
  for (uint32_t h = 0; h < 65536; ++h) {
    float got = glsl::f16_bits_to_f32(h);
    float want = float16_t::from_bits(static_cast<uint16_t>(h));
    if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want) && mismatches++ < 5) {
      FAIL_CHECK("f16 0x" << std::hex << h << " -> " << got << ", CPU " << want);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("GLSL bf16 conversions are bit-identical to the CPU's bfloat16_t") {
  int mismatches = 0;
  for_sample_floats([&](float x) {
    uint32_t got = glsl::f32_to_bf16_bits(x);
    uint32_t want = bfloat16_t(x).bits_;
    if (got != want && mismatches++ < 5) {
      FAIL_CHECK("f32 " << x << " -> bf16 0x" << std::hex << got << ", CPU 0x" << want);
    }
  });
  for (uint32_t b = 0; b < 65536; ++b) {
    float got = glsl::bf16_bits_to_f32(b);
    float want = bfloat16_t::from_bits(static_cast<uint16_t>(b));
    if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want) && mismatches++ < 5) {
      FAIL_CHECK("bf16 0x" << std::hex << b << " -> " << got << ", CPU " << want);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("GLSL pair packing stores each lane as the CPU rounds it") {
  // pack_bf16x2 rounds on its own path; pack_f16x2 (software) reuses f32_to_f16_bits. Each
  // sample meets a fixed partner in both halves, so a swapped or smeared lane shows.
  int mismatches = 0;
  for (float partner : {0.0f, -1.5f, std::numeric_limits<float>::quiet_NaN(), 65520.0f}) {
    for_sample_floats([&](float x) {
      uint32_t bf_lo = bfloat16_t(x).bits_, bf_hi = bfloat16_t(partner).bits_;
      uint32_t f_lo = float16_t(x).bits_, f_hi = float16_t(partner).bits_;
      uint32_t got_bf = glsl::pack_bf16x2(x, partner), got_bf2 = glsl::pack_bf16x2(partner, x);
      uint32_t got_f = glsl::pack_f16x2(x, partner);
      bool ok = got_bf == (bf_lo | bf_hi << 16) && got_bf2 == (bf_hi | bf_lo << 16) &&
                got_f == (f_lo | f_hi << 16);
      if (!ok && mismatches++ < 5) {
        FAIL_CHECK("pack of " << x << " and " << partner << ": bf16 0x" << std::hex << got_bf
                              << ", f16 0x" << got_f);
      }
    });
  }
  CHECK(mismatches == 0);
}

TEST_CASE("GLSL bf16 packing without the NaN test rounds every value that is not NaN") {
  // pack_bf16x8_not_nan serves values known not to be NaN (dequantized with a finite scale
  // and bias): each lane as the CPU rounds it, infinities and values that round to them
  // included. finite_f32 is what the callers test scales and biases with.
  int mismatches = 0;
  const float inf = std::numeric_limits<float>::infinity();
  float lane[8] = {0.0f, -1.5f, inf, -inf, 3.4028235e38f, -3.4028235e38f, 1e-40f, 65520.0f};
  for_sample_floats([&](float x) {
    if (std::isnan(x)) {
      return;
    }
    for (int at : {0, 5}) {  // a low and a high half
      float v[8];
      std::copy(std::begin(lane), std::end(lane), v);
      v[at] = x;
      glsl::uvec4 got = glsl::pack_bf16x8_not_nan(v);
      uint32_t words[4] = {got.x, got.y, got.z, got.w};
      for (int j = 0; j < 8; ++j) {
        uint32_t half = (words[j / 2] >> (16 * (j % 2))) & 0xffffu;
        if (half != bfloat16_t(v[j]).bits_ && mismatches++ < 5) {
          FAIL_CHECK("lane " << j << " of " << v[j] << ": 0x" << std::hex << half);
        }
      }
    }
  });
  CHECK(mismatches == 0);
  CHECK(glsl::finite_f32(3.4028235e38f));
  CHECK(glsl::finite_f32(-0.0f));
  CHECK_FALSE(glsl::finite_f32(inf));
  CHECK_FALSE(glsl::finite_f32(-inf));
  CHECK_FALSE(glsl::finite_f32(std::numeric_limits<float>::quiet_NaN()));
}

TEST_CASE("GLSL float-to-int casts saturate and map NaN to 0 like cast_value") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float edges[] = {0.0f,           -0.0f,
                         0.5f,           -0.5f,
                         0.99999994f,    -0.99999994f,
                         1.5f,           -1.5f,
                         127.0f,         127.5f,
                         128.0f,         -128.0f,
                         -128.5f,        -129.0f,
                         255.0f,         255.9f,
                         256.0f,         32767.0f,
                         32768.0f,       -32768.0f,
                         -32769.0f,      65535.0f,
                         65536.0f,       2147483520.0f,
                         2147483648.0f,  -2147483648.0f,
                         -2147483904.0f, 4294967040.0f,
                         4294967296.0f,  9.2233715e18f,
                         9.223372e18f,   -9.223372e18f,
                         -9.2233730e18f, 1.8446743e19f,
                         1.8446744e19f,  1e30f,
                         -1e30f,         inf,
                         -inf,           std::numeric_limits<float>::quiet_NaN()};
  for (float x : edges) {
    CAPTURE(x);
    CHECK(glsl::float_to_i8(x) == cast_value<int8_t>(x));
    CHECK(glsl::float_to_i16(x) == cast_value<int16_t>(x));
    CHECK(glsl::float_to_i32(x) == cast_value<int32_t>(x));
    CHECK(glsl::float_to_i64(x) == cast_value<int64_t>(x));
    CHECK(glsl::float_to_u8(x) == cast_value<uint8_t>(x));
    CHECK(glsl::float_to_u16(x) == cast_value<uint16_t>(x));
    CHECK(glsl::float_to_u32(x) == cast_value<uint32_t>(x));
    CHECK(glsl::float_to_u64(x) == cast_value<uint64_t>(x));
  }
}

// The dequantize kernel's rounding of scale * q to f16 (templates/quantize.glsl): the
// integer shortcut must give f16_round's bits wherever it applies, and at its range ends.
TEST_CASE("GLSL f16_round_fast rounds exactly as f16_round") {
  int mismatches = 0;
  auto check = [&](float x) {
    uint32_t got = std::bit_cast<uint32_t>(glsl::f16_round_fast(x));
    uint32_t want = std::bit_cast<uint32_t>(static_cast<float>(float16_t(x)));
    if (got != want && !(std::isnan(x)) && mismatches++ < 5) {
      FAIL_CHECK("f32 " << x << " (0x" << std::hex << std::bit_cast<uint32_t>(x) << ") -> 0x" << got
                        << ", CPU 0x" << want);
    }
  };
  for_sample_floats(check);
  for (float x : {6.103515625e-05f, 6.1035152e-05f, 65504.0f, 65519.0f, 65519.996f, 65520.0f,
                  -65520.0f, 0.0f, -0.0f}) {
    check(x);
  }
  CHECK(mismatches == 0);
}
