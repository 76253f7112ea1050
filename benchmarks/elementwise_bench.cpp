// Elementwise and copy kernels against the device's own measured bandwidth.
//
// 0. Warm-up: ~500 ms of copies first. A freshly started GPU sits at idle clocks and a
//    first measurement there read a peak of 1671 GB/s on an H200 (issue 17).
// 1. Peak: vkCmdCopyBuffer, our copy kernel and a read-dominated kernel (equal on int64 ->
//    bool), each moving >= 1 GiB; the best of the three is the peak, printed beside the
//    device's physical peak where this file knows it.
// 2. Large contiguous unary, binary (also broadcast and bf16) and copy/transposed copy:
//    time, GB/s and the ratios to that peak and to the copy kernel's bandwidth.
// 3. CPU cost per recorded dispatch (graph walk + encoding, kernels already built).
// 4. First-use compile time per kernel: glslang, optimizer, pipeline creation.
//
// Usage: elementwise_bench [size_mb]   (default: 256, capped by maxStorageBufferRange)
#include <algorithm>
#include <cstdlib>

#include "bench_util.h"
#include "codegen/elementwise.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/kernel_library.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
namespace codegen = mlx::core::vulkan::codegen;
using bench::Row;
using bench::time_gpu_op;

namespace {

// vkCmdCopyBuffer between two device arrays: the driver's copy path, our reference point.
double time_driver_copy(const mx::array& src, const mx::array& dst, int batch, int reps) {
  auto* s = static_cast<vk::Allocation*>(src.buffer().ptr());
  auto* d = static_cast<vk::Allocation*>(dst.buffer().ptr());
  auto stream = mx::default_stream(mx::Device::gpu);
  auto& enc = vk::encoder(stream.index);
  vk::Binding from{s, 0, src.nbytes(), false}, to{d, 0, dst.nbytes(), true};
  double best = 1e30;
  for (int r = 0; r <= reps; ++r) {
    mx::synchronize();
    double t0 = bench::now_ms();
    for (int i = 0; i < batch; ++i) {
      enc.copy(from, to);
    }
    enc.synchronize();
    if (r > 0)
      best = std::min(best, (bench::now_ms() - t0) / batch);
  }
  return best;
}

// Microseconds of host time per recorded dispatch: a chain of small adds, kernels warm.
// Best of several repetitions, like every other timing here: one short sample is at the
// mercy of the host CPU's frequency ramp.
double dispatch_cost_us(int count, int reps) {
  // Recorded on this thread: with the eval thread (docs/eval.md) async_eval would return
  // after queuing, and the same recording would happen out of sight.
  bench::EvalThreadOff inline_recording;
  auto a = mx::ones({1024});
  auto warm = mx::add(a, a);
  mx::eval(warm);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto y = a;
    for (int i = 0; i < count; ++i) {
      y = mx::add(y, a);
    }
    mx::synchronize();
    double t0 = bench::now_ms();
    mx::async_eval(y);  // graph walk + encoding + submission, no waiting
    best = std::min(best, bench::now_ms() - t0);
    y.eval();
  }
  return best * 1e3 / count;
}

void report_compile_times() {
  // Keys no earlier part of the run used, so each is a genuine first use.
  std::vector<std::pair<std::string, std::vector<std::string>>> ops = {
      {"unary:Tanh", {"f32"}},
      {"unary:Erf", {"f16"}},
      {"binary:LogAddExp", {"f32", "f32"}},
      {"binary:Power", {"i32", "i32"}},
      {"select:Select", {"b", "bf16", "bf16"}}};
  codegen::ElementwiseGeometry g;
  g.shape = {1 << 20};
  g.binding_alignment = 32;  // as the runtime binds: the vector-path kernels it would use
  std::printf(
      "\n| kernel (first use) | glslang (ms) | optimizer (ms) | pipeline (ms) | total (ms) |\n");
  std::printf("|---|---|---|---|---|\n");
  for (auto& [name, dts] : ops) {
    auto family = name.substr(0, name.find(':'));
    auto op = name.substr(name.find(':') + 1);
    g.in_strides.assign(dts.size(), {1});
    g.in_offsets.assign(dts.size(), 0);
    std::string out = family == "select" ? dts[1] : dts[0];
    auto key = codegen::elementwise_key(family, op, dts, out, g);
    double t0 = bench::now_ms();
    const auto& k = vk::kernel_library().get(key);
    double total = bench::now_ms() - t0;
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", key.canonical().c_str(), k.glslang_ms,
                k.optimize_ms, k.pipeline_ms, total);
  }
}

// The vendor's memory bandwidth for devices this project measures on (GB/s), or 0.
double physical_peak_gbs(const std::string& name) {
  const std::pair<const char*, double> known[] = {
      {"H200", 4800.0}, {"H100 80GB HBM3", 3350.0}, {"H100 PCIe", 2000.0}, {"H100 NVL", 3900.0}};
  for (const auto& [part, gbs] : known) {
    if (name.find(part) != std::string::npos) {
      return gbs;
    }
  }
  return 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "elementwise_bench: no Vulkan device found\n");
    return 1;
  }
  auto& dev = vk::device();
  double max_range_mb = static_cast<double>(dev.limits().maxStorageBufferRange) / (1 << 20);
  double size_mb = std::min(argc > 1 ? std::atof(argv[1]) : 256.0, max_range_mb);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  std::printf("array size: %.0f MiB of float32 per operand\n", size_mb);

  int n = static_cast<int>(size_mb * (1 << 20) / 4);
  int rows_2d = 4096, cols_2d = n / 4096;
  n = rows_2d * cols_2d;
  double bytes = 4.0 * n;
  // ELEMENTWISE_BENCH_BATCH: ops per timed batch (10), to separate per-op from per-batch
  // costs (synchronization, the first submission).
  const char* batch_env = std::getenv("ELEMENTWISE_BENCH_BATCH");
  const int batch = batch_env ? std::max(1, std::atoi(batch_env)) : 10, reps = 5;

  auto a = mx::random::uniform({rows_2d, cols_2d}, mx::float32, mx::random::key(1));
  auto b = mx::random::uniform({rows_2d, cols_2d}, mx::float32, mx::random::key(2));
  auto a_gpu = mx::copy(a, mx::Device::gpu);
  auto b_gpu = mx::copy(b, mx::Device::gpu);
  auto row =
      mx::copy(mx::random::uniform({cols_2d}, mx::float32, mx::random::key(3)), mx::Device::gpu);
  auto a16 = mx::astype(a_gpu, mx::bfloat16);
  auto b16 = mx::astype(b_gpu, mx::bfloat16);
  auto dst = mx::zeros_like(a_gpu);
  auto dst_owned = mx::copy(dst, mx::Device::gpu);
  mx::eval({a_gpu, b_gpu, row, a16, b16, dst_owned});
  bench::warm_gpu(a_gpu, 500);

  double driver_ms = time_driver_copy(a_gpu, dst_owned, batch, reps);
  double copy_ms = time_gpu_op([&] { return mx::copy(a_gpu); }, batch, reps);
  double driver_gbs = 2 * bytes / (driver_ms * 1e-3) / 1e9;
  // The peak's copy and read kernels run on int64 arrays of n elements: the copy moves 4x
  // the f32 operand (>= 1 GiB at the default size), the read 4.25x.
  double kernel_gbs = 0, read_gbs = 0;
  {
    auto i64a = mx::astype(a_gpu, mx::int64);
    auto i64b = mx::astype(b_gpu, mx::int64);
    mx::eval({i64a, i64b});
    bench::warm_gpu(i64a, 200);
    double ms = time_gpu_op([&] { return mx::copy(i64a); }, batch, reps);
    kernel_gbs = 16.0 * n / (ms * 1e-3) / 1e9;
    // equal() on two int64 arrays writes one bool per 16 bytes read: 94% reads.
    ms = time_gpu_op([&] { return mx::equal(i64a, i64b); }, batch, reps);
    read_gbs = (16.0 + 1.0) * n / (ms * 1e-3) / 1e9;
  }
  std::printf("copy bandwidth: vkCmdCopyBuffer %.0f GB/s (%.0f MiB), copy kernel %.0f GB/s "
              "(int64, %.0f MiB moved)\n",
              driver_gbs, 2 * bytes / (1 << 20), kernel_gbs, 16.0 * n / (1 << 20));
  std::printf("read bandwidth (equal int64 -> bool, 94%% reads, %.0f MiB): %.0f GB/s\n",
              17.0 * n / (1 << 20), read_gbs);
  // The peak is the best bandwidth measured in this run: a slow copy path (vkCmdCopyBuffer
  // on a compute queue) must not flatter the ratios.
  double peak = std::max({driver_gbs, kernel_gbs, read_gbs});
  std::printf("peak (best measured in this run): %.0f GB/s\n", peak);
  std::string name = std::get<std::string>(info.at("device_name"));
  if (double phys = physical_peak_gbs(name); phys > 0) {
    std::printf("physical peak (vendor): %.0f GB/s; measured / physical %.2f\n", phys,
                peak / phys);
  }

  std::vector<Row> rows;
  rows.push_back({"copy f32 (kernel)", 2 * bytes, copy_ms});
  rows.push_back({"exp f32", 2 * bytes, time_gpu_op([&] { return mx::exp(a_gpu); }, batch, reps)});
  rows.push_back(
      {"add f32", 3 * bytes, time_gpu_op([&] { return mx::add(a_gpu, b_gpu); }, batch, reps)});
  rows.push_back({"multiply f32 by scalar", 2 * bytes,
                  time_gpu_op([&] { return mx::multiply(a_gpu, mx::array(2.0f)); }, batch, reps)});
  rows.push_back({"add f32 broadcast row", 2 * bytes,
                  time_gpu_op([&] { return mx::add(a_gpu, row); }, batch, reps)});
  rows.push_back(
      {"add bf16", 1.5 * bytes, time_gpu_op([&] { return mx::add(a16, b16); }, batch, reps)});
  rows.push_back({"astype f32->bf16", 1.5 * bytes,
                  time_gpu_op([&] { return mx::astype(a_gpu, mx::bfloat16); }, batch, reps)});
  rows.push_back({"transposed copy f32", 2 * bytes,
                  time_gpu_op([&] { return mx::contiguous(mx::transpose(a_gpu)); }, batch, reps)});
  bench::print_table(rows, peak, kernel_gbs);

  std::printf("\nhost cost per recorded dispatch: %.2f us (chain of 2000 adds, best of 5)\n",
              dispatch_cost_us(2000, 5));
  report_compile_times();
  return 0;
}
