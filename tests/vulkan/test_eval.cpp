// Evaluation on the GPU: dispatch correctness for offsets, strided and broadcast views,
// ranges beyond maxStorageBufferRange, donation, async_eval, mixed CPU/GPU graphs,
// multiple streams, batching, barriers and the explicit CPU route.
//
// Each distinct kernel costs lavapipe 40-400 ms to build, so the cases reuse a small set:
// f32 Add/Multiply, f16 Add, i32 Add, f32 Exp, and copies.
#include "vk_test.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "codegen/elementwise.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
using namespace vk_test;

namespace {

const mx::Device gpu = mx::Device::gpu;
const mx::Device cpu = mx::Device::cpu;

mx::array iota_f32(const mx::Shape& shape, float scale = 1.0f) {
  size_t n = 1;
  for (auto d : shape)
    n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i % 1000) * scale - 3.0f;
  return mx::array(v.begin(), shape, mx::float32);
}

// GPU and CPU results of the same op, compared exactly for these exactly representable
// inputs (integers and small-integer floats: no rounding anywhere), else by dtype.
void check_same(mx::array got, mx::array want, const std::string& label, double rtol = 0) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  mlx_test::check_all_close(mlx_test::to_doubles(got), mlx_test::to_doubles(want), rtol, 0, label);
}

}  // namespace

TEST_CASE("binary ops on the GPU match the CPU for contiguous f32, f16 and i32") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({3, 37});
  auto b = iota_f32({3, 37}, 0.5f);
  check_same(mx::add(a, b, gpu), mx::add(a, b, cpu), "f32 add");
  check_same(mx::multiply(a, b, gpu), mx::multiply(a, b, cpu), "f32 multiply");
  auto ah = mx::astype(a, mx::float16, cpu), bh = mx::astype(b, mx::float16, cpu);
  check_same(mx::add(ah, bh, gpu), mx::add(ah, bh, cpu), "f16 add");
  auto ai = mx::astype(a, mx::int32, cpu), bi = mx::astype(b, mx::int32, cpu);
  check_same(mx::add(ai, bi, gpu), mx::add(ai, bi, cpu), "i32 add");
}

TEST_CASE("views at odd element offsets bind at aligned offsets and read the right elements") {
  VK_REQUIRE_DEVICE();
  // f16 slices starting 1..9 elements in: byte offsets 2..18, never 16-aligned in general.
  auto base = mx::astype(iota_f32({64}), mx::float16, cpu);
  for (int start = 1; start < 10; ++start) {
    auto x = mx::slice(base, {start}, {start + 40}, gpu);
    auto y = mx::slice(base, {start + 3}, {start + 43}, gpu);
    auto xc = mx::slice(base, {start}, {start + 40}, cpu);
    auto yc = mx::slice(base, {start + 3}, {start + 43}, cpu);
    check_same(mx::add(x, y, gpu), mx::add(xc, yc, cpu), "offset " + std::to_string(start));
  }
}

TEST_CASE("strided, transposed, broadcast and reversed views match the CPU") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({6, 10});
  auto b = iota_f32({10, 6}, 2.0f);
  auto row = iota_f32({10}, 3.0f);
  auto ops = [&](mx::Device d) {
    std::vector<mx::array> r;
    auto bt = mx::transpose(b, d);                            // strided 2-d
    r.push_back(mx::add(a, bt, d));                           // general strided
    r.push_back(mx::add(a, row, d));                          // broadcast row
    r.push_back(mx::add(a, mx::array(2.5f), d));              // scalar
    auto rev = mx::slice(a, {5, 9}, {-7, -11}, {-1, -1}, d);  // negative strides
    r.push_back(mx::add(rev, a, d));
    auto stepped = mx::slice(iota_f32({6, 30}), {0, 1}, {6, 30}, {1, 3}, d);  // step 3
    r.push_back(mx::add(stepped, a, d));
    auto x5 = mx::reshape(iota_f32({2, 3, 2, 5, 2}), {2, 3, 2, 5, 2}, d);
    r.push_back(mx::add(mx::transpose(x5, {4, 3, 2, 1, 0}, d),
                        mx::transpose(x5, {4, 3, 2, 1, 0}, d), d));  // 5-d general path
    r.push_back(mx::exp(mx::divide(bt, mx::array(100.0f), d), d));
    return r;
  };
  auto g = ops(gpu);
  auto c = ops(cpu);
  for (size_t i = 0; i < g.size(); ++i) {
    // exp: f32 device math may differ from the CPU libm by a few ulp.
    check_same(g[i], c[i], "case " + std::to_string(i), i == 6 ? 1e-5 : 0.0);
  }
}

TEST_CASE("reshape of a non-viewable view copies on the GPU") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({4, 6});
  auto t = mx::transpose(a, gpu);
  auto r = mx::reshape(t, {24}, gpu);
  check_same(r, mx::reshape(mx::transpose(a, cpu), {24}, cpu), "reshape");
  CHECK(vk::fallback_counts().count("Reshape") == 0);
}

TEST_CASE("concatenate and slice_update run on the GPU") {
  VK_REQUIRE_DEVICE();
  vk::reset_fallback_counts();
  auto a = iota_f32({4, 3});
  auto b = iota_f32({4, 5}, 2.0f);
  check_same(mx::concatenate({a, b}, 1, gpu), mx::concatenate({a, b}, 1, cpu), "concat axis 1");
  check_same(mx::concatenate({a, a}, 0, gpu), mx::concatenate({a, a}, 0, cpu), "concat axis 0");
  auto src = iota_f32({6, 8});
  auto upd = iota_f32({2, 3}, 5.0f);
  check_same(mx::slice_update(src, upd, {1, 2}, {5, 8}, {2, 2}, gpu),
             mx::slice_update(src, upd, {1, 2}, {5, 8}, {2, 2}, cpu), "slice_update");
  CHECK(vk::fallback_counts().empty());
}

TEST_CASE("arrays beyond maxStorageBufferRange are split into chunked dispatches") {
  VK_REQUIRE_DEVICE();
  size_t range = info_size("max_storage_buffer_range");
  if (range > (size_t(1) << 29)) {
    MESSAGE("maxStorageBufferRange is " << range << " bytes: chunking not exercised here");
    return;
  }
  // 1.25x the range in f32 elements, plus an odd tail.
  int n = static_cast<int>(range / 4 + range / 16 + 7);
  // A real (materialized) array of 1.5s, itself written in chunks.
  auto x = mx::add(mx::full({n}, 1.0f, gpu), mx::array(0.5f), gpu);
  auto y = mx::add(mx::slice(x, {3}, {n}, gpu), mx::array(2.0f), gpu);
  y.eval();
  REQUIRE(y.size() == static_cast<size_t>(n - 3));
  const float* p = y.data<float>();
  for (size_t i : {size_t(0), size_t(1), y.size() / 2, range / 4 - 5, range / 4 - 3, range / 4,
                   y.size() - 1}) {
    CHECK_MESSAGE(p[i] == 3.5f, "element " << i);
  }
}

TEST_CASE("a view no chunking can bring under maxStorageBufferRange is staged dense first") {
  VK_REQUIRE_DEVICE();
  size_t range = info_size("max_storage_buffer_range");
  if (range > (size_t(1) << 29)) {
    MESSAGE("maxStorageBufferRange is " << range << " bytes: skipped");
    return;
  }
  // A transposed matrix larger than the range: every output row reads all of it, so no cut
  // along dim 0 fits. Binary ops, copies and contiguous() of it copy it dense first
  // (copy_dense), then run as usual; this used to throw "maxStorageBufferRange".
  int rows = 4096;
  int cols = static_cast<int>(range / 4 / rows + 16);
  auto m = mx::add(mx::reshape(mx::arange(static_cast<double>(rows) * cols, mx::float32, gpu),
                               {rows, cols}, gpu),
                   mx::array(0.0f), gpu);
  auto mt = mx::transpose(m, gpu);
  auto t = mx::add(mt, mx::array(1.0f), gpu);
  auto c = mx::copy(mt, gpu);
  t.eval();
  c.eval();
  // Spot checks against the index arithmetic (the whole matrix twice would be slow on the
  // CPU reference): element (i, j) of the transpose is m[j][i] = j * cols + i.
  auto td = mlx_test::to_doubles(t);
  auto cd = mlx_test::to_doubles(c);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{cols} / 2, int64_t{cols} - 1}) {
    for (int64_t j : {int64_t{0}, int64_t{7}, int64_t{rows} - 1}) {
      double want = static_cast<double>(static_cast<float>(j * cols + i));
      CHECK(cd[i * rows + j] == want);
      CHECK(td[i * rows + j] == static_cast<double>(static_cast<float>(want + 1.0)));
    }
  }
  mx::synchronize();
}

TEST_CASE("donation reuses a dead intermediate's buffer") {
  VK_REQUIRE_DEVICE();
  mx::synchronize();
  mx::clear_cache();
  auto x = iota_f32({1 << 18});  // 1 MiB
  x.eval();
  mx::reset_peak_memory();
  size_t base = mx::get_active_memory();
  auto y = mx::add(x, mx::array(1.0f), gpu);
  for (int i = 0; i < 10; ++i) {
    y = mx::add(y, mx::array(1.0f), gpu);
  }
  y.eval();
  CHECK(mx::get_peak_memory() - base < 3 * x.nbytes() + (1 << 16));
  CHECK(mlx_test::to_doubles(y)[10] == doctest::Approx(11 * 1.0 + 7.0));
}

// A KV cache's update while the previous step's reader is still queued: the update writes
// into the cache's own buffer (no copy of the cache), and the queued reader still sees the
// values from before the update. Both forms: static start (SliceUpdate) and an array start
// (the dynamic form a decode loop uses).
TEST_CASE("an update donates a buffer that only queued batches of its stream still read") {
  VK_REQUIRE_DEVICE();
  for (bool dynamic : {false, true}) {
    CAPTURE(dynamic);
    auto cache = mx::add(iota_f32({4, 64}), mx::array(0.0f), gpu);
    cache.eval();
    auto data_of = [](const mx::array& a) {
      return reinterpret_cast<std::uintptr_t>(a.data_shared_ptr().get());
    };
    const auto before = data_of(cache);
    auto reader = mx::add(cache, cache, gpu);
    mx::async_eval({reader});  // recorded (and maybe submitted), not waited for
    auto update = mx::full({4, 1}, -1.0f, gpu);
    cache = dynamic ? mx::slice_update(cache, update, mx::array(5), {1}, gpu)
                    : mx::slice_update(cache, update, {0, 5}, {4, 6}, gpu);
    cache.eval();
    CHECK(data_of(cache) == before);
    auto got = mlx_test::to_doubles(cache);
    auto read = mlx_test::to_doubles(reader);
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 64; ++c) {
        double old = r * 64 + c - 3;  // iota_f32
        CHECK(got[r * 64 + c] == (c == 5 ? -1.0 : old));
        CHECK(read[r * 64 + c] == 2 * old);
      }
    }
  }
}

TEST_CASE("async_eval returns and reading the result waits for it") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({1000});
  auto y = mx::multiply(mx::add(a, a, gpu), mx::array(0.5f), gpu);
  mx::async_eval({y});
  CHECK(y.status() != mx::array::Status::unscheduled);
  check_same(y, a, "async");
}

TEST_CASE("reading a result waits for the work that wrote it, not for work recorded later") {
  VK_REQUIRE_DEVICE();
  // A chain of dependent ops long enough to run >= 200 ms on this device (sized from the
  // time of one op, so lavapipe and a fast GPU both get a chain that is still running when
  // the small result is read; reading it used to wait for the whole stream). 256 MiB per
  // array, larger than a GPU's cache: with 16 MiB an H200 ran each step from its 50 MiB L2
  // about as fast as the host recorded it, and the chain was done before the read.
  auto big = iota_f32({1 << 13, 1 << 13});
  auto step = [&](const mx::array& x) {
    return mx::add(mx::multiply(x, mx::array(0.5f), gpu), mx::array(1.0f), gpu);
  };
  mx::eval(step(big));
  // One step's time from a chain of 20 in one eval: a single eval's wall time is mostly
  // submission and wait latency on a fast GPU (an H200 host measured it long enough that
  // the chain below finished before the check).
  auto t0 = std::chrono::steady_clock::now();
  auto probe = big;
  for (int i = 0; i < 20; ++i) {
    probe = step(probe);
  }
  mx::eval(probe);
  double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 20;
  int chain = std::clamp(static_cast<int>(0.2 / std::max(one, 1e-6)), 4, 20000);
  auto a = iota_f32({1000});
  auto small = mx::add(a, a, gpu);
  mx::async_eval({small});
  for (int i = 0; i < chain; ++i) {
    big = step(big);
  }
  mx::async_eval({big});
  check_same(small, mx::add(a, a, cpu), "small");
  // On the staged path (discrete GPUs such as the H100, MLX_VK_STAGING=1) the host copy of
  // `small` was downloaded at the end of the batch that wrote it (gpu::prefetch_for_host),
  // so reading it does not wait behind the chain there either.
  CHECK_FALSE(big.is_available());
  big.eval();
  CHECK(big.is_available());
}

TEST_CASE("a small result asked for by eval is downloaded by the batch that wrote it") {
  VK_REQUIRE_DEVICE();
  auto* alloc = vk::vulkan_allocator();
  REQUIRE(alloc != nullptr);
  bool staged = info_string("memory_path") == "staged";
  auto a = iota_f32({1000});
  auto small = mx::add(a, a, gpu);
  auto big = mx::add(iota_f32({1 << 15}), iota_f32({1 << 15}), gpu);  // 128 KiB: not fetched
  mx::async_eval({small, big});
  uint64_t before = alloc->one_off_downloads();
  check_same(small, mx::add(a, a, cpu), "small");
  CHECK(alloc->one_off_downloads() == before);  // none on either path
  check_same(big, mx::add(iota_f32({1 << 15}), iota_f32({1 << 15}), cpu), "big");
  CHECK(alloc->one_off_downloads() == before + (staged ? 1 : 0));
  // A result already downloaded and then read again costs nothing either; a new write to
  // an array not asked for by the eval is downloaded when read.
  check_same(small, mx::add(a, a, cpu), "small again");
  auto other = mx::multiply(small, mx::array(2.0f), gpu);
  auto unread = mx::add(other, mx::array(1.0f), gpu);
  mx::eval({unread});
  uint64_t mid = alloc->one_off_downloads();
  check_same(other, mx::multiply(mx::add(a, a, cpu), mx::array(2.0f), cpu), "intermediate");
  CHECK(alloc->one_off_downloads() == mid + (staged ? 1 : 0));
}

TEST_CASE("mixed CPU/GPU graphs evaluate in order") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({257});
  auto g1 = mx::add(a, a, gpu);                      // GPU
  auto c1 = mx::multiply(g1, mx::array(2.0f), cpu);  // CPU reads a GPU result
  auto g2 = mx::add(c1, g1, gpu);                    // GPU reads a CPU result
  auto c2 = mx::add(g2, mx::array(1.0f), cpu);
  auto want = mx::add(mx::multiply(a, mx::array(6.0f), cpu), mx::array(1.0f), cpu);
  check_same(c2, want, "mixed");
}

TEST_CASE("a GPU op on one stream reads another stream's pending result") {
  VK_REQUIRE_DEVICE();
  auto s2 = mx::new_stream(gpu);
  auto a = iota_f32({513});
  // In one eval, x is recorded on s2 and still unsubmitted when y (default stream) reads it.
  auto x = mx::add(a, a, s2);
  auto y = mx::add(x, a, gpu);
  check_same(y, mx::multiply(a, mx::array(3.0f), cpu), "cross-stream");
}

TEST_CASE("ops without a GPU kernel take the counted CPU route") {
  VK_REQUIRE_DEVICE();
  vk::reset_fallback_counts();
  auto a = iota_f32({5, 7});
  auto idx = mx::array({4, 0, 2});
  // float64 is CPU-only: a float64 Take on a GPU stream takes the route.
  auto s = mx::take(mx::astype(mx::add(a, a, gpu), mx::float64, cpu), idx, 0, gpu);
  check_same(s, mx::take(mx::astype(mx::add(a, a, cpu), mx::float64, cpu), idx, 0, cpu), "take",
             1e-6);
  auto d = mx::exp(mx::astype(a, mx::float64, cpu), gpu);  // float64 is CPU-only
  d.eval();
  auto counts = vk::fallback_counts();
  CHECK(counts["Take"] == 1);
  CHECK(counts["Exp"] == 1);
  CHECK(counts.count("Add") == 0);
}

TEST_CASE("barriers separate dependent dispatches and only those") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({64});
  mx::add(a, a, gpu).eval();  // on the staged path this uploads `a` (a transfer write)
  mx::synchronize();
  auto before = vk::encoder_stats();
  auto x = mx::add(a, a, gpu);
  auto y = mx::multiply(a, a, gpu);
  mx::eval({x, y});  // independent: no barrier between them
  auto mid = vk::encoder_stats();
  // The staged path then downloads the small results asked for at the end of their batch
  // (gpu::prefetch_for_host): one barrier before those copies.
  bool staged = info_string("memory_path") == "staged";
  CHECK(mid.barriers == before.barriers + (staged ? 1 : 0));
  CHECK(mid.dispatches == before.dispatches + 2);
  auto z = mx::multiply(mx::add(a, a, gpu), a, gpu);  // reads what the batch wrote
  z.eval();
  auto after = vk::encoder_stats();
  CHECK(after.barriers >= mid.barriers + 1);
}

TEST_CASE("host operands and launch metadata reach the GPU without barriers between ops") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({4096});
  mx::add(a, a, gpu).eval();
  mx::synchronize();
  // Independent ops, each with a fresh host scalar (staged: an upload per op) and a
  // 4-d transposed operand of a new shape (a general-layout kernel reading a meta buffer).
  std::vector<mx::array> outs;
  for (int i = 0; i < 4; ++i) {
    outs.push_back(mx::multiply(a, mx::array(float(i + 2)), gpu));
    auto t = mx::transpose(mx::reshape(a, {2, 4, 4 << i, 128 >> i}, gpu), gpu);
    outs.push_back(mx::add(t, mx::array(float(i)), gpu));
  }
  auto before = vk::encoder_stats();
  mx::eval(outs);
  auto after = vk::encoder_stats();
  // The staged path uploads in the batch's prologue; then only the downloads of the small
  // results at the batch's end take a barrier (as above).
  bool staged = info_string("memory_path") == "staged";
  CHECK(after.barriers == before.barriers + (staged ? 1 : 0));
  for (int i = 0; i < 4; ++i) {
    check_same(outs[2 * i], mx::multiply(a, mx::array(float(i + 2)), cpu), "scalar product");
    auto t = mx::transpose(mx::reshape(a, {2, 4, 4 << i, 128 >> i}, cpu), cpu);
    check_same(outs[2 * i + 1], mx::add(t, mx::array(float(i)), cpu), "transposed sum");
  }
}

TEST_CASE("a stream commits its batch every MLX_VK_BUSY_OPS_PER_BUFFER ops even while busy") {
  VK_REQUIRE_DEVICE();
  setenv("MLX_VK_MAX_OPS_PER_BUFFER", "2", 1);
  setenv("MLX_VK_BUSY_OPS_PER_BUFFER", "2", 1);
  auto s = mx::new_stream(gpu);  // the limits are read when the stream is created
  unsetenv("MLX_VK_MAX_OPS_PER_BUFFER");
  unsetenv("MLX_VK_BUSY_OPS_PER_BUFFER");
  auto a = iota_f32({64});
  a.eval();
  auto before = vk::encoder_stats();
  auto y = a;
  for (int i = 0; i < 6; ++i) {
    y = mx::add(y, a, s);
  }
  y.eval();
  auto after = vk::encoder_stats();
  // 6 ops at 2 per batch: 3 submissions (the last may be the finalize one).
  CHECK(after.submissions - before.submissions >= 3);
  check_same(y, mx::multiply(a, mx::array(7.0f), cpu), "batched");
}

TEST_CASE("a batch past MLX_VK_MAX_OPS_PER_BUFFER ops grows while its stream is busy") {
  VK_REQUIRE_DEVICE();
  setenv("MLX_VK_MAX_OPS_PER_BUFFER", "2", 1);
  auto s = mx::new_stream(gpu);  // the limits are read when the stream is created
  unsetenv("MLX_VK_MAX_OPS_PER_BUFFER");
  auto big = iota_f32({1 << 25});
  auto small = iota_f32({64});
  mx::eval({big, small});
  auto run = [&] {
    // Two 128 MiB adds fill the first batch of 2 ops, found idle: it is submitted and keeps
    // the device busy for milliseconds (tens on lavapipe) while six small adds record in
    // microseconds. They find the stream busy, so they stay in the open batch until the
    // eval's end, where a fixed limit of 2 would have made 3 more submissions.
    auto before = vk::encoder_stats();
    auto b = mx::add(mx::add(big, big, s), big, s);
    auto y = small;
    for (int i = 0; i < 6; ++i) {
      y = mx::add(y, small, s);
    }
    mx::eval({b, y});
    auto after = vk::encoder_stats();
    check_same(y, mx::multiply(small, mx::array(7.0f), cpu), "small chain");
    check_same(b, mx::multiply(big, mx::array(3.0f), cpu), "big chain");
    return after.submissions - before.submissions;
  };
  run();  // builds the kernels
  size_t n = run();
  CHECK(n >= 2);
  CHECK(n <= 3);
}

TEST_CASE(
    "a batch past MLX_VK_MAX_MB_PER_BUFFER is submitted early only while its stream is idle") {
  vk::BatchLimits l{50, size_t{1} << 20, size_t{8} << 20, 256};
  CHECK(vk::batch_action(1, 0, l) == vk::BatchAction::keep);
  CHECK(vk::batch_action(49, (size_t{1} << 20) - 1, l) == vk::BatchAction::keep);
  CHECK(vk::batch_action(2, size_t{1} << 20, l) == vk::BatchAction::commit_if_idle);
  CHECK(vk::batch_action(2, (size_t{8} << 20) - 1, l) == vk::BatchAction::commit_if_idle);
  CHECK(vk::batch_action(2, size_t{8} << 20, l) == vk::BatchAction::commit);
  CHECK(vk::batch_action(50, 0, l) == vk::BatchAction::commit_if_idle);
  CHECK(vk::batch_action(255, 0, l) == vk::BatchAction::commit_if_idle);
  CHECK(vk::batch_action(256, 0, l) == vk::BatchAction::commit);

  VK_REQUIRE_DEVICE();
  // 2 MiB outputs against a 1 MiB limit. With the busy limit at 1 MiB too, every op is a
  // submission of its own; with it at 64 MiB, only ops that find the stream idle are.
  auto chain = [&](const char* busy_mb) {
    setenv("MLX_VK_MAX_MB_PER_BUFFER", "1", 1);
    setenv("MLX_VK_BUSY_MB_PER_BUFFER", busy_mb, 1);
    auto s = mx::new_stream(gpu);  // the limits are read when the stream is created
    unsetenv("MLX_VK_MAX_MB_PER_BUFFER");
    unsetenv("MLX_VK_BUSY_MB_PER_BUFFER");
    auto a = iota_f32({1 << 19});
    a.eval();
    auto before = vk::encoder_stats();
    auto y = a;
    for (int i = 0; i < 4; ++i) {
      y = mx::add(y, a, s);
    }
    y.eval();
    auto after = vk::encoder_stats();
    check_same(y, mx::multiply(a, mx::array(5.0f), cpu), "batched by size");
    return after.submissions - before.submissions;
  };
  chain("64");  // builds the kernel
  CHECK(chain("1") >= 4);
  size_t busy = chain("64");
  CHECK(busy >= 1);
  CHECK(busy <= 4);
}

TEST_CASE("the kernel library builds a key once when many threads ask at the same time") {
  VK_REQUIRE_DEVICE();
  auto& lib = vk::kernel_library();
  vk::codegen::ElementwiseGeometry g;
  g.shape = {33};
  g.in_strides = {{1}};
  g.in_offsets = {0};
  // A key no other test uses: unary Negative on i16.
  auto key = vk::codegen::elementwise_key("unary", "Negative", {"i16"}, "i16", g);
  size_t builds = lib.builds();
  std::vector<const vk::Kernel*> got(8, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { got[t] = &lib.get(key); });
  }
  for (auto& th : threads)
    th.join();
  CHECK(lib.builds() == builds + 1);
  for (auto* k : got) {
    CHECK(k == got[0]);
  }
  CHECK(got[0]->pipeline != VK_NULL_HANDLE);
}

TEST_CASE("10,000 evals in a loop keep active memory flat") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({256});
  a.eval();
  auto step = [&](int i) {
    auto y = mx::add(a, mx::array(static_cast<float>(i)), gpu);
    y.eval();
    return y.data<float>()[3];
  };
  for (int i = 0; i < 100; ++i)
    step(i);  // warm up kernels and the cache
  mx::synchronize();
  size_t base = mx::get_active_memory();
  float last = 0;
  for (int i = 0; i < 10000; ++i) {
    last = step(i);
  }
  mx::synchronize();
  CHECK(last == doctest::Approx(9999.0 + 0.0));  // element 3 of iota is 3 - 3 = 0
  CHECK(mx::get_active_memory() == base);
}

TEST_CASE("two threads evaluate on their own GPU streams at the same time") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32({300});
  a.eval();
  std::vector<mx::Stream> streams{mx::new_stream(gpu), mx::new_stream(gpu)};
  std::vector<int> bad(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto y = mx::add(mx::multiply(a, mx::array(static_cast<float>(t + 1)), streams[t]), a,
                         streams[t]);
        y.eval();
        // (t + 2) * a, exact for these small integers.
        if (y.data<float>()[7] != (t + 2) * (7.0f - 3.0f)) {
          bad[t]++;
        }
      }
    });
  }
  for (auto& th : threads)
    th.join();
  CHECK(bad[0] == 0);
  CHECK(bad[1] == 0);
}
