// The composite ops of issue 14's item 5 (clip, pad, tile, repeat, roll, outer, inner,
// tensordot, diag, diagonal, trace, meshgrid, nan_to_num, round with decimals, median) on the
// GPU against the CPU reference: seeded sweeps over dtypes x shapes x the harness layouts
// (contiguous, transposed, broadcast, strided, reversed, scalar), NaN / inf / -0.0 inputs
// where the op defines what they give, outputs poisoned and guarded (run_case), and no
// primitive taking the CPU route.
//
// Tolerances, by what an output element is:
// - kExact (every dtype): a value moved (pad, tile, repeat, roll, diag, diagonal, meshgrid),
//   selected (clip's maximum / minimum, nan_to_num's where), or made by the same correctly
//   rounded IEEE operations in the same order on both devices (outer's multiply, round's
//   scale / round half to even / rescale, median's sort then (a + b) * 0.5).
// - sums (trace, inner, tensordot): the CPU sums in double and rounds once, the GPU sums in
//   float32 in another order. float32: rtol 2e-5 plus atol 1e-6 * K for K terms of magnitude
//   <= 4 (K * 2^-24 * 16, test_matmul.cpp's bound); float16 / bfloat16: one rounding of the
//   dtype (default_tolerance: 4e-3 / 3e-2 relative); integers exact (they wrap in any order).
//
// Kernel count (lavapipe JITs each new pipeline in 40-400 ms): every op runs its dtypes on
// two shapes and two layouts, and every layout and standard shape on float32 only.
#include <doctest/doctest.h>

#include <algorithm>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

const Tolerance kExact{0, 0};

// A sum of k terms (see the top of the file).
Tolerance sum_tolerance(mx::Dtype dt, int k) {
  if (dt == mx::float32) {
    return {2e-5, 1e-6 * std::max(k, 1)};
  }
  return default_tolerance(dt);
}

const std::vector<mx::Dtype> kFloats = {mx::float32, mx::float16, mx::bfloat16};
const std::vector<mx::Dtype> kNumeric = {mx::uint8,   mx::int16,    mx::uint32, mx::int64,
                                         mx::float16, mx::bfloat16, mx::float32};

// The standard shapes of at least `rank` dims, none of them empty when `nonempty`.
std::vector<mx::Shape> shapes_of(size_t rank, bool nonempty, bool small = false) {
  std::vector<mx::Shape> out;
  for (const auto& s : standard_shapes) {
    bool empty = std::find(s.begin(), s.end(), 0) != s.end();
    bool big = s == mx::Shape{67, 1031} || s.size() > 3;
    if (s.size() >= rank && !(nonempty && empty) && !(small && big)) {
      out.push_back(s);
    }
  }
  return out;
}

struct Sweep {
  std::string name;
  int inputs = 1;
  std::vector<mx::Dtype> dtypes;
  std::vector<mx::Shape> shapes;  // every layout on float32; the dtypes on two of them
  bool specials = false;          // NaN / inf / -0.0 in the first input
  Domain domain = {};
  // The tolerance for an input dtype and shape (default: exact).
  std::function<Tolerance(mx::Dtype, const mx::Shape&)> tolerance = nullptr;
};

// Runs `op` over every layout x shape on float32, then over every dtype on the first two
// shapes of at least 2 elements (contiguous and transposed), with seeds from the op's name.
void sweep_op(const Sweep& w, const Op& op) {
  uint64_t seed = 1469598103934665603ULL;  // FNV-1a of the name, as harness.cpp's sweep
  for (char ch : w.name) {
    seed = (seed ^ static_cast<uint8_t>(ch)) * 1099511628211ULL;
  }
  seed %= 100000;
  Domain first = w.domain;
  first.specials = w.specials;
  std::vector<Domain> domains{first};
  domains.resize(w.inputs, w.domain);
  int failures = 0;
  auto run = [&](mx::Dtype dt, const mx::Shape& shape, Layout layout) {
    if (layout == Layout::broadcast && shape.size() < 2) {
      return;
    }
    Case c{w.name, std::vector<mx::Dtype>(w.inputs, dt), shape, layout, ++seed};
    Tolerance tol = w.tolerance ? w.tolerance(dt, shape) : kExact;
    if (failures < 5 && !run_case(c, op, domains, tol)) {
      ++failures;  // enough to diagnose; don't flood the log
    }
  };
  for (const auto& shape : w.shapes) {
    for (auto layout : all_layouts) {
      run(mx::float32, shape, layout);
    }
  }
  std::vector<mx::Shape> quick;
  for (const auto& shape : w.shapes) {
    int64_t n = 1;
    for (auto d : shape) {
      n *= d;
    }
    if (n >= 2 && quick.size() < 2) {
      quick.push_back(shape);
    }
  }
  for (auto dt : w.dtypes) {
    for (const auto& shape : quick) {
      for (auto layout : quick_layouts) {
        run(dt, shape, layout);
      }
    }
  }
}

// No primitive took the CPU route since the last reset.
void check_no_route() {
  auto routes = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
}

}  // namespace

TEST_CASE("clip and nan_to_num on the GPU match the CPU with NaN and inf inputs") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // A lower bound per element (second input, <= 0) and a scalar upper bound: NaN propagates.
  Sweep clip{"clip", 2, gpu_dtypes, shapes_of(0, false), true};
  sweep_op(clip, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::clip(in[0], mx::minimum(in[1], mx::zeros({}, in[1].dtype(), s), s),
                    mx::astype(mx::array(2.5f), in[0].dtype(), s), s);
  });
  Sweep upper{"clip upper only", 1, kNumeric, {{7}, {4, 3, 5}}, true};
  sweep_op(upper, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::clip(in[0], std::nullopt, mx::astype(mx::array(1), in[0].dtype(), s), s);
  });
  // Integers pass through unchanged.
  Sweep nan{"nan_to_num", 1, gpu_dtypes, shapes_of(0, false), true};
  sweep_op(nan, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::nan_to_num(in[0], 0.0f, std::nullopt, std::nullopt, s);
  });
  Sweep nan_values{"nan_to_num with values", 1, kFloats, {{7}, {4, 3, 5}}, true};
  sweep_op(nan_values, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::nan_to_num(in[0], 1.5f, 100.0f, -200.0f, s);
  });
  check_no_route();
}

TEST_CASE("pad, tile, repeat and roll on the GPU move every value as the CPU does") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  Sweep constant{"pad constant", 1, gpu_dtypes, shapes_of(0, false), true};
  sweep_op(constant, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::pad(in[0], std::pair<int, int>{1, 2}, mx::array(3), "constant", s);
  });
  // Edge padding needs every padded axis non-empty; the first and last axes only.
  Sweep edge{"pad edge", 1, gpu_dtypes, shapes_of(1, true), true};
  sweep_op(edge, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    if (in[0].ndim() == 1) {
      return mx::pad(in[0], {0}, {2}, {3}, mx::array(0), "edge", s);
    }
    return mx::pad(in[0], {0, -1}, {2, 0}, {1, 3}, mx::array(0), "edge", s);
  });
  Sweep tile{"tile", 1, gpu_dtypes, shapes_of(0, false), true};
  sweep_op(tile, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::tile(in[0], {2, 1, 3}, s);
  });
  Sweep repeat{"repeat", 1, gpu_dtypes, shapes_of(1, false), true};
  sweep_op(repeat, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::repeat(in[0], 3, 0, s);
  });
  Sweep repeat_flat{"repeat flattened", 1, {mx::int8, mx::int64}, shapes_of(0, false), true};
  sweep_op(repeat_flat, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::repeat(in[0], 2, s);
  });
  Sweep roll{"roll two axes", 1, gpu_dtypes, shapes_of(1, false), true};
  sweep_op(roll, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    if (in[0].ndim() == 1) {
      return mx::roll(in[0], 3, 0, s);
    }
    return mx::roll(in[0], mx::Shape{-1, 4}, {0, -1}, s);
  });
  Sweep roll_flat{"roll flattened", 1, {mx::uint16, mx::bfloat16}, shapes_of(0, false), true};
  sweep_op(roll_flat, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::roll(in[0], -5, s);
  });
  check_no_route();
}

TEST_CASE("diag, diagonal, trace and meshgrid on the GPU match the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // diagonal of the first and last axes at offsets 1 and -2 (a view of a dense copy).
  Sweep diagonal{"diagonal", 1, gpu_dtypes, shapes_of(2, false), true};
  sweep_op(diagonal, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::concatenate({mx::flatten(mx::diagonal(in[0], 1, 0, -1, s), s),
                            mx::flatten(mx::diagonal(in[0], -2, -1, 0, s), s)},
                           0, s);
  });
  // diag of a vector builds a matrix (pad, eye, where); of a matrix takes its diagonal.
  Sweep diag{"diag", 1, gpu_dtypes, {{7}, {3, 5}, {1}, {0}, {67, 1031}}, true};
  sweep_op(diag, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::flatten(in[0].ndim() == 1 ? mx::diag(in[0], -2, s) : mx::diag(in[0], 1, s), s);
  });
  // trace sums the diagonal in the input's dtype (integers wrap, bool counts in int32); NaN
  // and inf propagate through the sum.
  Sweep trace{"trace", 1, gpu_dtypes, shapes_of(2, false), true};
  trace.tolerance = [](mx::Dtype dt, const mx::Shape& shape) {
    return sum_tolerance(dt, std::min(shape.front(), shape.back()));
  };
  sweep_op(trace, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::trace(in[0], 1, 0, -1, s);
  });
  // meshgrid flattens its inputs: dense "xy" of two (stacked), sparse "ij" of three
  // (concatenated: their shapes differ).
  Sweep mesh{"meshgrid xy", 2, gpu_dtypes, shapes_of(0, false, true), true};
  sweep_op(mesh, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::stack(mx::meshgrid(in, false, "xy", s), 0, s);
  });
  Sweep sparse{"meshgrid sparse ij", 3, {mx::int32, mx::float16}, shapes_of(0, false, true)};
  sweep_op(sparse, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    std::vector<mx::array> flat;
    for (const auto& g : mx::meshgrid(in, true, "ij", s)) {
      flat.push_back(mx::flatten(g, s));
    }
    return mx::concatenate(flat, 0, s);
  });
  check_no_route();
}

TEST_CASE("outer, inner and tensordot on the GPU match the CPU within a sum's tolerance") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // outer multiplies every pair once: exact, NaN and inf included.
  Sweep outer{"outer", 2, gpu_dtypes, shapes_of(0, false, true), true};
  sweep_op(outer, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::outer(in[0], in[1], s);
  });
  // inner and tensordot are matmuls (float dtypes); K terms per output.
  auto last = [](mx::Dtype dt, const mx::Shape& shape) {
    return sum_tolerance(dt, shape.empty() ? 1 : shape.back());
  };
  Sweep inner{"inner", 2, kFloats, shapes_of(0, false)};
  inner.tolerance = last;
  sweep_op(inner, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::inner(in[0], in[1], s);
  });
  // The last two axes of both operands (the second may have fewer dims: the broadcast layout).
  Sweep tensordot{"tensordot", 2, kFloats, shapes_of(1, false)};
  tensordot.tolerance = [](mx::Dtype dt, const mx::Shape& shape) {
    int k = shape.back() * (shape.size() > 2 ? shape[shape.size() - 2] : 1);
    return sum_tolerance(dt, k);
  };
  sweep_op(tensordot, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    if (std::min(in[0].ndim(), in[1].ndim()) > 2) {
      return mx::tensordot(in[0], in[1], {-2, -1}, {-2, -1}, s);
    }
    return mx::tensordot(in[0], in[1], {-1}, {-1}, s);
  });
  check_no_route();
}

TEST_CASE("round with decimals and median on the GPU match the CPU with NaN and inf inputs") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Floats to hundredths; integers to tens (values in [-400, 400)).
  Sweep round{"round decimals 2", 1, kFloats, shapes_of(0, false), true};
  sweep_op(round, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::round(in[0], 2, s);
  });
  Sweep round_int{
      "round decimals -1", 1, {mx::int8, mx::int32, mx::uint16, mx::int64}, {{7}, {4, 3, 5}}};
  round_int.domain = {-400, 400};
  sweep_op(round_int, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::round(in[0], -1, s);
  });
  // Along the last axis (even and odd counts), and over every axis; any NaN gives NaN.
  Sweep median{"median",
               1,
               {mx::float16, mx::bfloat16, mx::int32, mx::uint8},
               {{6}, {3, 5, 4}, {1}, {7}, {4, 3, 5}, {2, 3, 2, 3, 2}, {67, 1031}},
               true};
  sweep_op(median, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::median(in[0], -1, false, s);
  });
  Sweep median_all{"median over all axes", 1, {mx::int16}, shapes_of(0, true), true};
  sweep_op(median_all, [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::median(in[0], false, s);
  });
  check_no_route();
}
