// The reduce, arg_reduce, norm (softmax, rms_norm, layer_norm), rope and scan families
// against the device's own bandwidth, measured in the same run (docs/performance.md).
//
// 1. Inputs are made first (random numbers come from the CPU, which leaves the GPU idle
//    long enough to drop its clocks), then the peak: our copy kernel and a read-dominated
//    kernel (equal on int64 -> bool) on 1 GiB.
// 2. Each row: >= 200 ms of warm-up, then GPU time per op from timestamp queries (every
//    kernel of the op) and the best wall time per op; GB/s and the ratio to the peak use
//    the GPU time. Then the same batches timed in a stream (two timestamps per command
//    buffer, none per kernel: how torch's CUDA events time a batch; bench_util.h).
//
// Usage: reduce_bench   (REDUCE_BENCH_ONLY=sum,rows,softmax,argmax,decode,norm,rope,scan
//                        runs a subset; REDUCE_BENCH_SUSTAIN=<s> first runs softmax back to
//                        back for that long, printing the time per op as clocks ramp;
//                        BENCH_KERNELS=1 prints each row's kernels, bench_util.h)
#include <cstdlib>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"

namespace mx = mlx::core;
using bench::measure_op;
using bench::TimedRow;

namespace {

void sustain(const mx::array& s, double seconds) {
  double t0 = bench::now_ms();
  while (bench::now_ms() - t0 < 1000.0 * seconds) {
    double t = bench::now_ms();
    std::vector<mx::array> outs;
    for (int i = 0; i < 100; ++i) {
      outs.push_back(mx::softmax(s, -1));
    }
    mx::eval(outs);
    mx::synchronize();
    std::printf("t=%7.1f ms  softmax %.1f us/op (wall)\n", t - t0, (bench::now_ms() - t) * 10.0);
  }
}

}  // namespace

int main() {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "reduce_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  mx::vulkan::set_profiling(true);
  bench::set_stream_timing_default(true);  // also in a stream (bench_util.h; BENCH_STREAM=0: not)
  if (!mx::vulkan::profiling_enabled()) {
    std::fprintf(stderr, "reduce_bench: this device cannot time kernels; GPU times read 0\n");
  }
  const int batch = 10, reps = 5;

  // Every input first.
  int n = 1 << 26;
  auto i64a = mx::astype(bench::gpu_uniform({n}, 1), mx::int64);
  auto i64b = mx::astype(bench::gpu_uniform({n}, 2), mx::int64);
  auto big = bench::gpu_uniform({1 << 28}, 3);  // 256M float32 = 1 GiB
  auto m = bench::gpu_uniform({8192, 8192}, 4);
  auto s = bench::gpu_uniform({5, 4096, 4096}, 5);
  auto logits = bench::gpu_uniform({512, 32000}, 6);
  auto s1 = bench::gpu_uniform({1, 1024}, 7);
  auto s16 = bench::gpu_uniform({16, 1024}, 8);
  auto vocab = bench::gpu_uniform({1, 151936}, 17);
  auto h = bench::gpu_uniform({4096, 4096}, 9, mx::bfloat16);
  auto w = bench::gpu_uniform({4096}, 10, mx::bfloat16);
  auto b = bench::gpu_uniform({4096}, 11, mx::bfloat16);
  auto h32 = bench::gpu_uniform({4096, 4096}, 18);
  auto w32 = bench::gpu_uniform({4096}, 19);
  auto h1 = bench::gpu_uniform({1, 1024}, 12, mx::bfloat16);
  auto h16 = bench::gpu_uniform({16, 1024}, 13, mx::bfloat16);
  auto w1 = bench::gpu_uniform({1024}, 14, mx::bfloat16);
  auto q16 = bench::gpu_uniform({1, 32, 4096, 128}, 15, mx::float16);
  auto qb = bench::gpu_uniform({1, 32, 4096, 128}, 16, mx::bfloat16);
  auto one = bench::gpu_uniform({1}, 20);
  mx::eval({i64a, i64b});

  if (const char* secs = std::getenv("REDUCE_BENCH_SUSTAIN")) {
    sustain(s, std::atof(secs));
  }

  bench::warm_gpu(i64a, 500);
  // Peak: 2 x 512 MiB of int64 read and 64 MiB of bool written; 512 MiB copied.
  double peak = bench::measure_peak(i64a, i64b, batch, reps);

  std::vector<TimedRow> rows;
  auto add = [&](const char* name, double bytes, const std::function<mx::array()>& make) {
    rows.push_back({name, bytes, measure_op(make, batch, reps)});
  };
  if (bench::wanted("REDUCE_BENCH_ONLY", "sum")) {
    add("sum f32 256M (all)", 4.0 * (1 << 28), [&] { return mx::sum(big); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "rows")) {
    double bytes = 4.0 * 8192 * 8192;
    add("row sum f32 8192x8192", bytes, [&] { return mx::sum(m, 1); });
    add("column sum f32 8192x8192", bytes, [&] { return mx::sum(m, 0); });
    add("max f32 8192x8192 (rows)", bytes, [&] { return mx::max(m, 1); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "softmax")) {
    add("softmax f32 5x4096x4096", 2 * 4.0 * 5 * 4096 * 4096, [&] { return mx::softmax(s, -1); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "argmax")) {
    add("argmax f32 512x32000", 4.0 * 512 * 32000, [&] { return mx::argmax(logits, -1); });
    add("argmax f32 1x151936 (decode)", 4.0 * 151936, [&] { return mx::argmax(vocab, -1); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "decode")) {
    add("softmax f32 1x1024 (decode)", 2 * 4.0 * 1024, [&] { return mx::softmax(s1, -1); });
    add("softmax f32 16x1024", 2 * 4.0 * 16 * 1024, [&] { return mx::softmax(s16, -1); });
    add("rms_norm bf16 1x1024 (decode)", 2 * 2.0 * 1024,
        [&] { return mx::fast::rms_norm(h1, w1, 1e-5f); });
    add("rms_norm bf16 16x1024", 2 * 2.0 * 16 * 1024,
        [&] { return mx::fast::rms_norm(h16, w1, 1e-5f); });
    // The floor every timed kernel pays: one launch that moves 8 bytes.
    add("copy f32 of 1 element (dispatch floor)", 8.0, [&] { return mx::copy(one); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "norm")) {
    double bytes = 2 * 2.0 * 4096 * 4096;
    add("rms_norm bf16 4096x4096", bytes, [&] { return mx::fast::rms_norm(h, w, 1e-5f); });
    add("layer_norm bf16 4096x4096", bytes, [&] { return mx::fast::layer_norm(h, w, b, 1e-5f); });
    add("rms_norm bf16 4096x4096 (no weight)", bytes,
        [&] { return mx::fast::rms_norm(h, std::nullopt, 1e-5f); });
    add("rms_norm f32 4096x4096", 2 * bytes, [&] { return mx::fast::rms_norm(h32, w32, 1e-5f); });
    // What the same bytes cost our copy kernel: the bound for a one-pass row kernel.
    add("copy bf16 4096x4096 (the norms' bytes)", bytes, [&] { return mx::copy(h); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "rope")) {
    double bytes = 2 * 2.0 * 32 * 4096 * 128;
    add("rope f16 1x32x4096x128", bytes,
        [&] { return mx::fast::rope(q16, 128, false, 10000.0f, 1.0f, 7); });
    add("rope bf16 1x32x4096x128", bytes,
        [&] { return mx::fast::rope(qb, 128, false, 10000.0f, 1.0f, 7); });
    add("copy f16 1x32x4096x128 (rope's bytes)", bytes, [&] { return mx::copy(q16); });
  }
  if (bench::wanted("REDUCE_BENCH_ONLY", "scan")) {
    add("cumsum f32 8192x8192 (rows)", 2 * 4.0 * 8192 * 8192, [&] { return mx::cumsum(m, 1); });
    add("copy f32 8192x8192 (cumsum's bytes)", 2 * 4.0 * 8192 * 8192, [&] { return mx::copy(m); });
    // One vocabulary-wide row (top-p sampling, categorical's inverse CDF): segments.
    add("cumsum f32 1x151936 (sampling)", 2 * 4.0 * 151936, [&] { return mx::cumsum(vocab, 1); });
  }
  bench::print_timed_table(rows, peak);
  return 0;
}
