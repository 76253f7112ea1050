// where (select), astype/copy and concatenate on the GPU match the CPU reference.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

TEST_CASE("where on the GPU matches the CPU for every dtype and layout") {
  if (!gpu_present())
    return;
  Op op = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::where(in[0], in[1], in[2], s);
  };
  Tolerance exact{0, 0};
  sweep("where", op, {{mx::bool_, mx::float32, mx::float32}}, {}, &exact);
  for (auto dt : gpu_dtypes) {
    sweep("where", op, {{mx::bool_, dt, dt}}, {}, &exact, quick_shapes, quick_layouts);
  }
}

TEST_CASE("copy makes any layout contiguous on the GPU") {
  if (!gpu_present())
    return;
  Op op = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) { return mx::copy(in[0], s); };
  Tolerance exact{0, 0};
  sweep("copy", op, {{mx::float32}}, {}, &exact);
  for (auto dt : gpu_dtypes) {
    sweep("copy", op, {{dt}}, {}, &exact, quick_shapes, quick_layouts);
  }
}

TEST_CASE("concatenate along an inner axis of more than 64 rows stays on the GPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // 100 rows: a piece per row would pass MLX_VK_MAX_COPY_PIECES (64), so the inputs go
  // through a temporary with the axis first. Inputs of every layout, one of them empty.
  Op op = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    auto b = mx::slice(in[1], {0, 0, 0}, {in[1].shape(0), in[1].shape(1), 2}, s);
    auto empty = mx::zeros({in[0].shape(0), in[0].shape(1), 0}, in[0].dtype(), s);
    return mx::concatenate({in[0], empty, b, in[0]}, -1, s);
  };
  Tolerance exact{0, 0};
  sweep("concatenate many rows", op, {{mx::float32, mx::float32}}, {}, &exact,
        {{100, 3, 5}, {5, 20, 3}}, {Layout::contiguous, Layout::transposed, Layout::reversed});
  for (auto dt : {mx::uint8, mx::bfloat16, mx::int64}) {
    sweep("concatenate many rows", op, {{dt, dt}}, {}, &exact, {{100, 3, 5}}, {Layout::transposed});
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(counts.empty(), "a primitive took the CPU route: " << counts.begin()->first);
}

TEST_CASE("astype between every pair of GPU dtypes matches the CPU") {
  if (!gpu_present())
    return;
  // Values well outside the integer ranges exercise saturation; halves exercise rounding.
  for (auto from : gpu_dtypes) {
    for (auto to : gpu_dtypes) {
      if (from == to)
        continue;
      Op op = [to](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::astype(in[0], to, s);
      };
      Tolerance exact{0, 0};
      sweep("astype", op, {{from}}, {{-70000, 70000}}, &exact, {{67, 1031}}, {Layout::contiguous});
    }
  }
}

TEST_CASE("astype of NaN and infinities to integers saturates like the CPU") {
  if (!gpu_present())
    return;
  mx::array special({NAN, INFINITY, -INFINITY, 1e10f, -1e10f, 2.5f, -2.5f, 255.5f});
  for (auto to : {mx::uint8, mx::int8, mx::int32, mx::uint32, mx::int64, mx::uint64, mx::bool_}) {
    auto got = mlx_test::to_doubles(mx::astype(special, to, mx::Device::gpu));
    auto want = mlx_test::to_doubles(mx::astype(special, to, mx::Device::cpu));
    CHECK_MESSAGE(got == want, "to " << to);
  }
}

TEST_CASE("f16 conversions are exact at every rounding boundary") {
  if (!gpu_present())
    return;
  // Every f16 bit pattern to f32 (subnormals, infinities and NaN included), and for every
  // finite f16 h: h itself, the exact tie between h and the next f16 (rounds to the even
  // one), and the f32 values one ulp either side of the tie. Compared bit for bit with the
  // CPU (NaN: any NaN).
  std::vector<mx::float16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    all[i] = mx::float16_t::from_bits(static_cast<uint16_t>(i));
  }
  auto halves = mx::array(all.begin(), {65536}, mx::float16);
  auto up_gpu = mx::astype(halves, mx::float32, mx::Device::gpu);
  auto up_cpu = mx::astype(halves, mx::float32, mx::Device::cpu);
  // Equal values, or both NaN (an f16 -> f32 conversion is exact, so values decide).
  auto same = [](const mx::array& a, const mx::array& b) {
    auto cpu = mx::Device::cpu;
    return mx::all(mx::logical_or(mx::equal(a, b, cpu),
                                  mx::logical_and(mx::isnan(a, cpu), mx::isnan(b, cpu), cpu), cpu),
                   cpu)
        .item<bool>();
  };
  CHECK(same(up_gpu, up_cpu));
  auto up = mlx_test::to_doubles(up_cpu);
  std::vector<float> probes;
  for (size_t i = 0; i + 1 < up.size(); ++i) {
    double a = up[i], b = up[i + 1];
    if (!std::isfinite(a) || !std::isfinite(b) || (i & 0x7fff) == 0x7fff) {
      continue;  // no next finite value in this direction
    }
    float tie = static_cast<float>((a + b) / 2);  // exact: f16 ties are f32 values
    probes.push_back(static_cast<float>(a));
    probes.push_back(tie);
    probes.push_back(std::nextafter(tie, -INFINITY));
    probes.push_back(std::nextafter(tie, INFINITY));
  }
  probes.push_back(65520.0f);  // the overflow tie: rounds to inf
  probes.push_back(std::nextafter(65520.0f, 0.0f));
  auto x = mx::array(probes.begin(), {static_cast<int>(probes.size())});
  // f16 results compared as their exact f32 values: a wrong rounding changes the value.
  auto down_gpu =
      mx::astype(mx::astype(x, mx::float16, mx::Device::gpu), mx::float32, mx::Device::cpu);
  auto down_cpu =
      mx::astype(mx::astype(x, mx::float16, mx::Device::cpu), mx::float32, mx::Device::cpu);
  CHECK(same(down_gpu, down_cpu));
}

// f32 -> bf16 rounds to nearest even on every path (include/types.glsl's f32_to_bf16_bits,
// pack_bf16x2 and bf16_round; an NVIDIA hardware conversion tried in their place rounded
// some values one ulp differently, docs/codegen.md). For every
// positive finite bf16 h (and its negative): h, the exact tie between h and the next bf16,
// and the f32 values one ulp either side of the tie; through astype (vector and element
// stores) and through a fused group's rounding in registers. Compared bit for bit with the
// CPU except NaN (any NaN).
TEST_CASE("bf16 conversions round to nearest even at every rounding boundary") {
  if (!gpu_present())
    return;
  std::vector<float> probes;
  for (uint32_t h = 0; h < 0x7f80u; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      uint32_t bits = (h | sign) << 16;
      uint32_t tie = bits + 0x8000u;  // halfway to the next bf16 away from zero
      probes.push_back(std::bit_cast<float>(bits));
      probes.push_back(std::bit_cast<float>(tie));
      probes.push_back(std::bit_cast<float>(tie - 1));
      probes.push_back(std::bit_cast<float>(tie + 1));
    }
  }
  probes.push_back(NAN);
  probes.push_back(INFINITY);
  probes.push_back(-INFINITY);
  auto x = mx::array(probes.begin(), {static_cast<int>(probes.size())});
  auto cpu = mx::Device::cpu;
  auto same = [&](const mx::array& a, const mx::array& b) {
    return mx::all(mx::logical_or(mx::equal(a, b, cpu),
                                  mx::logical_and(mx::isnan(a, cpu), mx::isnan(b, cpu), cpu), cpu),
                   cpu)
        .item<bool>();
  };
  auto up = [&](const mx::array& a) { return mx::astype(a, mx::float32, cpu); };
  auto want = up(mx::astype(x, mx::bfloat16, cpu));
  CHECK(same(up(mx::astype(x, mx::bfloat16, mx::Device::gpu)), want));
  // An odd length and an offset: the element-by-element store too.
  auto tail = mx::slice(x, {1}, {static_cast<int>(probes.size())});
  CHECK(same(up(mx::astype(tail, mx::bfloat16, mx::Device::gpu)),
             up(mx::astype(tail, mx::bfloat16, cpu))));
  // Rounded in registers: a compiled astype to bf16 times a bf16 one is one fused kernel
  // whose astype node is rounded by bf16_round before the multiply.
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto fused = mx::compile([](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::multiply(mx::astype(in[0], mx::bfloat16), in[1])};
  });
  // The multiply is arithmetic, which a GPU may flush to zero for subnormal values (NVIDIA
  // does, docs/codegen.md): those compare as zero.
  auto ones = mx::ones({static_cast<int>(probes.size())}, mx::bfloat16);
  auto got = fused({x, ones})[0];
  mx::set_default_device(saved);
  auto tiny = mx::less(mx::abs(want, cpu), mx::array(std::numeric_limits<float>::min()), cpu);
  auto flushed = mx::where(tiny, mx::zeros_like(want, cpu), want, cpu);
  CHECK(same(up(got), mx::where(mx::equal(up(got), mx::array(0.0f), cpu), flushed, want, cpu)));
}

TEST_CASE("astype between integer types of one width shares the buffer and keeps the bits") {
  // uint32 -> int32 (argmax's index as a token id) and back, int8 <-> uint8: wrapping
  // conversions, so the output is the input's buffer on both devices.
  std::vector<uint32_t> big{0u, 1u, 2147483647u, 2147483648u, 4294967295u};
  std::vector<int8_t> small{-128, -1, 0, 1, 127};
  for (auto dev : {mx::Device::cpu, mx::Device::gpu}) {
    if (dev == mx::Device::gpu && !gpu_present()) {
      continue;
    }
    auto u = on_device(mx::array(big.begin(), {5}, mx::uint32), dev);
    auto i = mx::astype(u, mx::int32, dev);
    i.eval();
    CHECK(i.buffer().ptr() == u.buffer().ptr());
    CHECK(i.data<int32_t>()[3] == -2147483647 - 1);
    CHECK(i.data<int32_t>()[4] == -1);
    auto back = mx::astype(i, mx::uint32, dev);
    CHECK(mx::array_equal(back, u, false).item<bool>());
    auto s8 = on_device(mx::array(small.begin(), {5}, mx::int8), dev);
    auto u8 = mx::astype(s8, mx::uint8, dev);
    u8.eval();
    CHECK(u8.buffer().ptr() == s8.buffer().ptr());
    CHECK(u8.data<uint8_t>()[0] == 128);
    CHECK(u8.data<uint8_t>()[1] == 255);
    // A strided view keeps its strides.
    auto view = mx::slice(u, {1}, {5}, {2}, dev);
    auto vi = mx::astype(view, mx::int32, dev);
    vi.eval();
    CHECK(vi.data<int32_t>()[vi.strides(0)] == -2147483647 - 1);
  }
}
