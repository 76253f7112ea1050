#include "harness.h"

#include <cmath>
#include <functional>
#include <numeric>

#include "mlx/backend/gpu/device_info.h"

namespace gpu_diff {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::transposed:
      return "transposed";
    case Layout::broadcast:
      return "broadcast";
    case Layout::strided:
      return "strided";
    case Layout::reversed:
      return "reversed";
    case Layout::scalar:
      return "scalar";
  }
  return "?";
}

Tolerance default_tolerance(mx::Dtype out) {
  if (out == mx::float16)
    return {4e-3, 1e-3};
  if (out == mx::bfloat16)
    return {3e-2, 1e-2};
  if (out == mx::float32)
    return {2e-5, 1e-6};
  return {0, 0};
}

std::string Case::describe() const {
  std::ostringstream os;
  os << op_name << " dtypes=(";
  for (size_t i = 0; i < dtypes.size(); ++i) {
    os << (i ? "," : "") << dtypes[i];
  }
  os << ") shape=" << mx::shape_to_string(shape) << " layout=" << layout_name(layout)
     << " seed=" << seed;
  return os.str();
}

mx::array make_input(const mx::Shape& shape, mx::Dtype dtype, Layout layout, uint64_t seed,
                     const Domain& domain, mx::Device device) {
  mlx_test::Rng rng(seed);
  auto base_of = [&](const mx::Shape& s) {
    if (!domain.specials || !mx::issubdtype(dtype, mx::floating)) {
      return mlx_test::random_array(s, dtype, rng, domain.lo, domain.hi);
    }
    const double specials[] = {NAN, INFINITY, -INFINITY, -0.0};
    std::vector<double> vals;
    for (int64_t i = 0, n = std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
         i < n; ++i) {
      double v = rng.uniform(domain.lo, domain.hi);
      uint64_t r = rng.next();
      vals.push_back(r % 8 == 0 ? specials[(r >> 3) % 4] : v);
    }
    return mx::array(vals.begin(), s, dtype);
  };
  int nd = static_cast<int>(shape.size());
  switch (layout) {
    case Layout::contiguous:
      return base_of(shape);
    case Layout::transposed: {
      mx::Shape rev(shape.rbegin(), shape.rend());
      return mx::transpose(base_of(rev), device);
    }
    case Layout::broadcast: {
      mx::Shape small = shape;
      for (int i = 0; i < nd; i += 2) {
        small[i] = 1;
      }
      return mx::broadcast_to(base_of(small), shape, device);
    }
    case Layout::strided: {
      if (nd == 0)
        return base_of(shape);
      mx::Shape wide = shape;
      wide[nd - 1] = wide[nd - 1] * 2;
      mx::Shape start(nd, 0), stop = wide, step(nd, 1);
      step[nd - 1] = 2;
      return mx::slice(base_of(wide), start, stop, step, device);
    }
    case Layout::reversed: {
      if (nd == 0)
        return base_of(shape);
      mx::Shape start(nd, 0), stop = shape, step(nd, 1);
      start[0] = shape[0] - 1;
      stop[0] = -shape[0] - 1;
      step[0] = -1;
      return mx::slice(base_of(shape), start, stop, step, device);
    }
    case Layout::scalar:
      return mx::broadcast_to(base_of({}), shape, device);
  }
  return base_of(shape);
}

bool run_case(const Case& c, const Op& op, const std::vector<Domain>& domains, Tolerance tol) {
  std::vector<mx::array> cpu_in, gpu_in;
  for (size_t i = 0; i < c.dtypes.size(); ++i) {
    Domain d = i < domains.size() ? domains[i] : Domain{};
    // Only the first input takes the case's layout; the others are contiguous of the
    // same shape, except that the broadcast layout gives them a trailing-dims shape.
    Layout l = i == 0 ? c.layout : Layout::contiguous;
    mx::Shape shape = c.shape;
    if (i > 0 && c.layout == Layout::broadcast && !shape.empty()) {
      shape.erase(shape.begin());
    }
    uint64_t seed = c.seed * 31 + i;
    cpu_in.push_back(make_input(shape, c.dtypes[i], l, seed, d, mx::Device::cpu));
    gpu_in.push_back(make_input(shape, c.dtypes[i], l, seed, d, mx::Device::gpu));
  }
  auto want = op(cpu_in, mx::Device::cpu);
  mx::array got = want;
  {
    mx::gpu::debug::PoisonScope poison;
    got = op(gpu_in, mx::Device::gpu);
    got.eval();
    auto bad = mx::gpu::debug::check_guards();
    CHECK_MESSAGE(bad == 0, c.describe() << ": " << bad << " buffer guard region(s) overwritten");
    if (bad != 0) {
      return false;
    }
  }
  bool same_kind = got.shape() == want.shape() && got.dtype() == want.dtype();
  CHECK_MESSAGE(same_kind, c.describe()
                               << ": GPU gave shape " << mx::shape_to_string(got.shape()) << " "
                               << got.dtype() << ", CPU " << mx::shape_to_string(want.shape())
                               << " " << want.dtype());
  if (!same_kind) {
    return false;
  }
  auto g = mlx_test::to_doubles(got);
  auto w = mlx_test::to_doubles(want);
  size_t first_bad = g.size();
  for (size_t i = 0; i < g.size() && first_bad == g.size(); ++i) {
    if (!mlx_test::close(g[i], w[i], tol.rtol, tol.atol)) {
      first_bad = i;
    }
  }
  // One assertion per case: every element within tolerance (poison shows as a mismatch).
  CHECK_MESSAGE(first_bad == g.size(),
                c.describe() << ": element " << first_bad << " GPU "
                             << (first_bad < g.size() ? g[first_bad] : 0.0) << " CPU "
                             << (first_bad < g.size() ? w[first_bad] : 0.0) << " (rtol " << tol.rtol
                             << ", atol " << tol.atol << ")");
  return first_bad == g.size();
}

std::vector<mx::array> gpu_eval_checked(const std::function<std::vector<mx::array>()>& make,
                                        const std::string& what) {
  mx::gpu::debug::PoisonScope poison;
  auto outs = make();
  mx::eval(outs);
  auto bad = mx::gpu::debug::check_guards();
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " buffer guard region(s) overwritten");
  return outs;
}

bool all_close(const mx::array& got, const mx::array& want, Tolerance tol,
               const std::string& what) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    FAIL_CHECK(what << ": GPU gave " << mx::shape_to_string(got.shape()) << " " << got.dtype()
                    << ", reference " << mx::shape_to_string(want.shape()) << " " << want.dtype());
    return false;
  }
  auto g = mlx_test::to_doubles(got);
  auto w = mlx_test::to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!mlx_test::close(g[i], w[i], tol.rtol, tol.atol)) {
      FAIL_CHECK(what << ": element " << i << " GPU " << g[i] << " reference " << w[i] << " (rtol "
                      << tol.rtol << ", atol " << tol.atol << ")");
      return false;
    }
  }
  return true;
}

size_t small_binding_range() {
  if (!gpu_present()) {
    return 0;
  }
  size_t range = std::get<size_t>(mx::gpu::device_info(0).at("max_storage_buffer_range"));
  if (range > (size_t{1} << 28)) {
    MESSAGE("maxStorageBufferRange is " << range << " bytes: wide operands not exercised here");
    return 0;
  }
  return range;
}

mx::array small_ints(int rows, int cols, uint64_t seed) {
  // Drawn on the host (xorshift64): random bits on lavapipe take seconds at this size.
  std::vector<float> v(static_cast<size_t>(rows) * static_cast<size_t>(cols));
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(static_cast<int>(s % 13) - 6);
  }
  return mx::array(v.begin(), {rows, cols}, mx::float32);
}

mx::array on_device(const mx::array& a, mx::Device d) {
  auto c = mx::copy(a, d);
  c.eval();
  return c;
}

void sweep(const std::string& name, const Op& op, const std::vector<std::vector<mx::Dtype>>& dtypes,
           const std::vector<Domain>& domains, const Tolerance* tol,
           const std::vector<mx::Shape>& shapes, const std::vector<Layout>& layouts) {
  // FNV-1a of the name: the same seeds on every platform.
  uint64_t seed = 1469598103934665603ULL;
  for (char ch : name) {
    seed = (seed ^ static_cast<uint8_t>(ch)) * 1099511628211ULL;
  }
  seed %= 100000;
  int failures = 0;
  for (auto& dts : dtypes) {
    for (auto& shape : shapes) {
      for (auto layout : layouts) {
        if (layout == Layout::broadcast && shape.size() < 2)
          continue;
        Case c{name, dts, shape, layout, ++seed};
        Tolerance t = tol ? *tol : default_tolerance(mx::float32);
        if (!tol) {
          // The output dtype decides the tolerance; infer it from a 0-d CPU run.
          std::vector<mx::array> zs;
          for (auto dt : dts)
            zs.push_back(mx::zeros({}, dt, mx::Device::cpu));
          t = default_tolerance(op(zs, mx::Device::cpu).dtype());
        }
        if (!run_case(c, op, domains, t) && ++failures >= 5) {
          return;  // enough to diagnose; don't flood the log
        }
      }
    }
  }
}

}  // namespace gpu_diff
