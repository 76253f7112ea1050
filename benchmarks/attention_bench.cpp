// scaled_dot_product_attention (the sdpa family) on the shapes: decode against the
// bandwidth peak measured in the same run (bytes: K and V read once), prefill in TFLOPS
// (4 * B * Hq * Lq * Lkv * D, halved for causal). Decode rows come twice: calls chained
// (each call's query the previous call's output: a call's latency, as in a decode loop) and
// independent (a batch's calls may overlap). docs/attention.md, docs/performance.md.
//
// Usage: attention_bench   (ATTENTION_BENCH_ONLY=decode,curve,prefill runs a subset;
// ATTENTION_BENCH_PREFILL_L=64,256 replaces the prefill lengths)
#include <cmath>
#include <cstdlib>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"

namespace mx = mlx::core;
using bench::measure_op;
using bench::TimedRow;
using bench::Timing;

namespace {

struct Shape {
  const char* name;
  int hq, hkv, lq, lkv, d;
  mx::Dtype dt;
  bool causal;
};

// chained: each call's query is the previous call's output (a decode step waits for the
// one before it), so the calls of a batch run one after another and the GPU time is a
// call's latency. Independent calls of a batch may overlap on the GPU, which hides the
// latency of a small grid.
Timing time_sdpa(const Shape& s, int batch, int reps, bool chained = false) {
  auto q = bench::gpu_uniform({1, s.hq, s.lq, s.d}, 1, s.dt);
  auto k = bench::gpu_uniform({1, s.hkv, s.lkv, s.d}, 2, s.dt);
  auto v = bench::gpu_uniform({1, s.hkv, s.lkv, s.d}, 3, s.dt);
  float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  auto cur = q;
  return measure_op(
      [&] {
        auto out = mx::fast::scaled_dot_product_attention(chained ? cur : q, k, v, scale,
                                                          s.causal ? "causal" : "");
        cur = out;
        return out;
      },
      batch, reps);
}

}  // namespace

int main() {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "attention_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  mx::vulkan::set_profiling(true);
  bench::set_stream_timing_default(true);  // also in a stream (bench_util.h; BENCH_STREAM=0: not)
  const int batch = 10, reps = 5;
  // The peak only scales the decode rows; it needs ~5 GB, so prefill alone skips it and
  // warms up on smaller arrays (lavapipe's 2 GB limit).
  bool decode_rows = bench::wanted("ATTENTION_BENCH_ONLY", "decode") ||
                     bench::wanted("ATTENTION_BENCH_ONLY", "curve");
  int n = decode_rows ? 1 << 26 : 1 << 22;
  auto i64a = mx::astype(bench::gpu_uniform({n}, 1, mx::float32), mx::int64);
  auto i64b = mx::astype(bench::gpu_uniform({n}, 2, mx::float32), mx::int64);
  bench::warm_gpu(i64a, 500);
  double peak = decode_rows ? bench::measure_peak(i64a, i64b, batch, reps) : 0.0;

  std::vector<TimedRow> rows, chained_rows;
  auto decode = [&](const Shape& s) {
    double bytes = 2.0 * s.hkv * s.lkv * s.d * mx::size_of(s.dt);
    chained_rows.push_back({s.name, bytes, time_sdpa(s, batch, reps, true)});
    rows.push_back({s.name, bytes, time_sdpa(s, batch, reps)});
  };
  if (bench::wanted("ATTENTION_BENCH_ONLY", "decode")) {
    decode({"decode f16 hd128 KV 8192 heads 32/8", 32, 8, 1, 8192, 128, mx::float16, false});
    decode({"decode bf16 hd128 KV 4096 heads 16/8", 16, 8, 1, 4096, 128, mx::bfloat16, false});
  }
  if (bench::wanted("ATTENTION_BENCH_ONLY", "curve")) {
    for (int lkv : {128, 1024, 32768, 131072}) {
      static std::string names[4];
      std::string& name = names[lkv == 128 ? 0 : lkv == 1024 ? 1 : lkv == 32768 ? 2 : 3];
      name = "decode f16 hd128 heads 32/8 KV " + std::to_string(lkv);
      decode({name.c_str(), 32, 8, 1, lkv, 128, mx::float16, false});
    }
  }
  if (decode_rows) {
    std::printf("\ndecode calls one after another (each call's query the previous output):\n");
    bench::print_timed_table(chained_rows, peak);
    std::printf("\nindependent decode calls (a batch's calls may overlap on the GPU):\n");
    bench::print_timed_table(rows, peak);
  }
  if (bench::wanted("ATTENTION_BENCH_ONLY", "prefill")) {
    std::printf(
        "\n| prefill | GPU time (us) | wall per op (us) | TFLOPS (GPU) |\n|---|---|---|---|\n");
    std::vector<Shape> shapes{
        Shape{"causal f16 L=512 hd128 heads 32/8", 32, 8, 512, 512, 128, mx::float16, true},
        Shape{"causal f16 L=4096 hd128 heads 32/8", 32, 8, 4096, 4096, 128, mx::float16, true}};
    // ATTENTION_BENCH_PREFILL_L=64,256: other lengths (a relative check on a slow device).
    std::vector<std::string> names;
    if (const char* ls = std::getenv("ATTENTION_BENCH_PREFILL_L"); ls && *ls) {
      for (std::string rest = ls; !rest.empty();) {
        size_t comma = rest.find(',');
        names.push_back(rest.substr(0, comma));
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      }
      shapes.clear();
      for (auto& n : names) {
        int l = std::atoi(n.c_str());
        n = "causal f16 L=" + std::to_string(l) + " hd128 heads 32/8";
        shapes.push_back(Shape{n.c_str(), 32, 8, l, l, 128, mx::float16, true});
      }
    }
    for (const Shape& s : shapes) {
      auto t = time_sdpa(s, s.lq >= 4096 ? 2 : batch, reps);
      double flops = 4.0 * s.hq * s.lq * s.lkv * s.d / (s.causal ? 2.0 : 1.0);
      std::printf("| %s | %.1f | %.1f | %.1f |\n", s.name, t.gpu_ms * 1e3, t.wall_ms * 1e3,
                  t.gpu_ms > 0 ? flops / (t.gpu_ms * 1e-3) / 1e12 : 0.0);
    }
  }
  return 0;
}
