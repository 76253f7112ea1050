// Matrix products (the gemv and gemm families) against the device's own bandwidth and
// against the arithmetic rate of the run's best GEMM (docs/performance.md, docs/matmul.md).
//
// 1. Inputs first, then the bandwidth peak of the run: our copy kernel and a
//    read-dominated kernel (equal on int64 -> bool) on 1 GiB, as reduce_bench.
// 2. Matrix-vector rows (bound by reading the matrix once): GPU time per op from timestamp
//    queries after >= 200 ms of warm-up; GB/s and the ratio to the peak.
// 3. GEMM rows: TFLOPS from the GPU time (2 * M * N * K per product), including the
//    quantized M = 512 product (qmm) against the f16 GEMM.
//
// 4. Qwen3 lm_head products (huge N, short K), and a dependent chain of decode-sized
//    quantized products (GPU time per link, with L2-resident and with cold weights).
//
// 5. A Qwen3-8B decode step's products with the ops they absorb (fused).
//
// 6. The coop GEMM's tiles forced in turn by rows (tiles; not in the default run).
//
// Usage: matmul_bench   (MATMUL_BENCH_ONLY=gemv,qmv,qrows,lmhead,chain,fused,gemm,qmm,tiles
//                        runs a subset; MATMUL_BENCH_QROWS=2,4,8 sets qrows' row counts,
//                        MATMUL_BENCH_QMM_ROWS=256,512 qmm's, MATMUL_BENCH_TILE_ROWS tiles',
//                        MATMUL_BENCH_TILES=coopkhr128x256x16w64x64,... the tiles forced,
//                        MATMUL_BENCH_TILE_LAYOUT=nn|tn their operands' layout)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"
#include "mlx/backend/vulkan/lookahead.h"
#include "mlx/backend/vulkan/matmul.h"

namespace mx = mlx::core;
using bench::measure_op;
using bench::TimedRow;

int main() {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "matmul_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  // The f16 cooperative path's 16x8x16 shape decides qmvc's fragments (frag=n8).
  for (const char* dtype : {"f16", "bf16"}) {
    auto it = info.find(std::string("cooperative_matrix_") + dtype + "_16x8x16");
    if (it != info.end()) {
      std::printf("cooperative matrices 16x8x16 (%s): %s\n", dtype,
                  std::get<size_t>(it->second) == 1 ? "yes" : "no");
    }
  }
  if (auto it = info.find("compute_units"); it != info.end()) {
    std::printf("compute units (the GEMM's tile rule counts waves with them): %zu\n",
                std::get<size_t>(it->second));
  }
  if (auto it = info.find("cooperative_matrix_khr_shapes"); it != info.end()) {
    std::printf("VK_KHR_cooperative_matrix shapes: %s\n",
                std::get<std::string>(it->second).c_str());
  }
  mx::vulkan::set_profiling(true);
  if (!mx::vulkan::profiling_enabled()) {
    std::fprintf(stderr, "matmul_bench: this device cannot time kernels; GPU times read 0\n");
  }
  const int batch = 10, reps = 5;
  // The rows time independent products of one weight, `batch` to an eval: with prefetching
  // each would bring the next one's (the same) weights into L2 and add their reads to its
  // own. Off here; the chain section measures it as shipped (docs/matmul.md).
  mx::vulkan::force_prefetch_weights(false);

  int n = 1 << 26;
  auto i64a = mx::astype(bench::gpu_uniform({n}, 1), mx::int64);
  auto i64b = mx::astype(bench::gpu_uniform({n}, 2), mx::int64);
  bool gemv = bench::wanted("MATMUL_BENCH_ONLY", "gemv"),
       qmv = bench::wanted("MATMUL_BENCH_ONLY", "qmv"),
       gemm = bench::wanted("MATMUL_BENCH_ONLY", "gemm");
  // Decode shapes: an 8B-class MLP projection both ways, and Qwen3-0.6B's tied lm_head.
  auto w_kn = gemv ? bench::gpu_uniform({14336, 4096}, 3, mx::float16) : mx::array(0.0f);
  auto w_nk = gemv ? bench::gpu_uniform({14336, 4096}, 4, mx::float16) : mx::array(0.0f);
  auto x14 = bench::gpu_uniform({1, 14336}, 5, mx::float16);
  auto x14_rows = bench::gpu_uniform({16, 14336}, 10, mx::float16);
  auto x4 = bench::gpu_uniform({8, 4096}, 6, mx::float16);
  auto emb = gemv ? bench::gpu_uniform({151936, 1024}, 7, mx::bfloat16) : mx::array(0.0f);
  auto h1 = bench::gpu_uniform({1, 1024}, 8, mx::bfloat16);
  mx::eval({i64a, i64b});

  bench::warm_gpu(i64a, 500);
  double peak = bench::measure_peak(i64a, i64b, batch, reps);

  std::vector<TimedRow> rows;
  auto add = [&](const char* name, double bytes, const std::function<mx::array()>& make) {
    rows.push_back({name, bytes, measure_op(make, batch, reps)});
  };
  if (gemv) {
    double w_bytes = 2.0 * 14336 * 4096;
    add("f16 [1,14336] x [14336,4096] (axpy)", w_bytes, [&] { return mx::matmul(x14, w_kn); });
    auto w_t = mx::transpose(w_nk);
    for (int m : {1, 4, 8}) {
      auto x = mx::slice(x4, {0, 0}, {m, 4096});
      std::string name = "f16 [" + std::to_string(m) + ",4096] x [14336,4096]^T (dot)";
      rows.push_back({name, w_bytes, measure_op([&] { return mx::matmul(x, w_t); }, batch, reps)});
    }
    auto emb_t = mx::transpose(emb);
    add("bf16 [1,1024] x [151936,1024]^T (lm_head)", 2.0 * 151936 * 1024,
        [&] { return mx::matmul(h1, emb_t); });
  }
  if (qmv) {
    // quantized_matmul (qmv): an 8B-class down projection, 4-bit and 8-bit, group 64.
    auto wq_src = bench::gpu_uniform({4096, 14336}, 9, mx::float16);
    for (int bits : {4, 8}) {
      auto q = mx::quantize(wq_src, 64, bits);
      mx::eval(q);
      double bytes = 4.0 * q[0].size() + 2.0 * q[1].size() + 2.0 * q[2].size();
      for (int m : {1, 4, 8, 16}) {
        auto x = mx::slice(x14_rows, {0, 0}, {m, 14336});
        char name[64];
        std::snprintf(name, sizeof(name), "q%d g64 [%d,14336] x [4096,14336]^T", bits, m);
        rows.push_back(
            {name, bytes,
             measure_op([&] { return mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, bits); },
                        batch, reps)});
      }
    }
    // An 8B-class model's other decode products: gate/up [14336,4096] and q/o [4096,4096],
    // 4- and 8-bit (K = 4096: fewer packs a lane than the down projection above).
    for (int bits : {4, 8}) {
      for (int n : {14336, 4096}) {
        auto q = mx::quantize(bench::gpu_uniform({n, 4096}, 13, mx::float16), 64, bits);
        mx::eval(q);
        double bytes = 4.0 * q[0].size() + 2.0 * q[1].size() + 2.0 * q[2].size();
        auto x = mx::slice(x4, {0, 0}, {1, 4096});
        std::string name =
            "q" + std::to_string(bits) + " g64 [1,4096] x [" + std::to_string(n) + ",4096]^T";
        rows.push_back(
            {name, bytes,
             measure_op([&] { return mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, bits); },
                        batch, reps)});
      }
    }
  }
  if (qmv || bench::wanted("MATMUL_BENCH_ONLY", "lmhead")) {
    // Qwen3 lm_heads (tied embeddings, 4-bit, bf16): huge N, short K (0.6B, 8B, 14B / 32B).
    for (int k : {1024, 4096, 5120}) {
      auto q = mx::quantize(bench::gpu_uniform({151936, k}, 14, mx::bfloat16), 64, 4);
      auto x = bench::gpu_uniform({1, k}, 15, mx::bfloat16);
      mx::eval(q);
      double bytes = 4.0 * q[0].size() + 2.0 * q[1].size() + 2.0 * q[2].size();
      char name[80];
      std::snprintf(name, sizeof(name), "q4 g64 bf16 [1,%d] x [151936,%d]^T (lm_head)", k, k);
      rows.push_back(
          {name, bytes,
           measure_op([&] { return mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4); }, batch,
                      reps)});
    }
  }
  if (qmv) {
    // The same 4-bit product in bf16, the dtype of MLX's community LLM weights.
    auto wq_bf = bench::gpu_uniform({4096, 14336}, 11, mx::bfloat16);
    auto qb = mx::quantize(wq_bf, 64, 4);
    auto xb = bench::gpu_uniform({1, 14336}, 12, mx::bfloat16);
    mx::eval(qb);
    double qb_bytes = 4.0 * qb[0].size() + 2.0 * qb[1].size() + 2.0 * qb[2].size();
    add("q4 g64 bf16 [1,14336] x [4096,14336]^T", qb_bytes,
        [&] { return mx::quantized_matmul(xb, qb[0], qb[1], qb[2], true, 64, 4); });
    auto qb8 = mx::quantize(wq_bf, 64, 8);
    mx::eval(qb8);
    add("q8 g64 bf16 [1,14336] x [4096,14336]^T",
        4.0 * qb8[0].size() + 2.0 * qb8[1].size() + 2.0 * qb8[2].size(),
        [&] { return mx::quantized_matmul(xb, qb8[0], qb8[1], qb8[2], true, 64, 8); });
    // The K = 4096 products of an 8B-class model in bf16 (gate/up and q/o sized): two packs
    // a lane in two parts, where the f16 rows above load a step ahead (docs/matmul.md).
    auto xb4 = bench::gpu_uniform({1, 4096}, 18, mx::bfloat16);
    for (int n : {14336, 4096}) {
      auto qn = mx::quantize(bench::gpu_uniform({n, 4096}, 17, mx::bfloat16), 64, 4);
      mx::eval(qn);
      double bytes = 4.0 * qn[0].size() + 2.0 * qn[1].size() + 2.0 * qn[2].size();
      std::string name = "q4 g64 bf16 [1,4096] x [" + std::to_string(n) + ",4096]^T";
      rows.push_back(
          {name, bytes,
           measure_op([&] { return mx::quantized_matmul(xb4, qn[0], qn[1], qn[2], true, 64, 4); },
                      batch, reps)});
    }
    // Several rows (batched decode) in bf16, whose x lanes need no conversion instruction.
    auto xb_rows = bench::gpu_uniform({8, 14336}, 16, mx::bfloat16);
    for (int m : {4, 8}) {
      auto x = mx::slice(xb_rows, {0, 0}, {m, 14336});
      char name[64];
      std::snprintf(name, sizeof(name), "q4 g64 bf16 [%d,14336] x [4096,14336]^T", m);
      rows.push_back(
          {name, qb_bytes,
           measure_op([&] { return mx::quantized_matmul(x, qb[0], qb[1], qb[2], true, 64, 4); },
                      batch, reps)});
    }
  }
  if (bench::wanted("MATMUL_BENCH_ONLY", "fused")) {
    // A Qwen3-8B decode step's four products as the model makes them (bf16, 4-bit, group 64),
    // each with the ops it absorbs (mlx/fusion.h): the input norm into q/k/v, the residual
    // add into o and down, the norm and the compiled SwiGLU into gate/up.
    auto swiglu = mx::compile(
        [](const std::vector<mx::array>& in) {
          return std::vector<mx::array>{in[0] * mx::sigmoid(in[0]) * in[1]};
        },
        true);
    // Values of a model's size and sign (bench::gpu_uniform is [0, 1)): with all-positive
    // data the SwiGLU's outputs pass f16's range, and the down product's f16 pair sums
    // would redo every pack in f32 (templates/qmv.glsl, F16_DOT).
    auto centered = [](const mx::Shape& shape, int seed, float scale, float shift = 0.0f) {
      auto u = bench::gpu_uniform(shape, seed, mx::float32);
      auto v = mx::astype(mx::add(mx::multiply(mx::subtract(u, mx::array(0.5f)), mx::array(scale)),
                                  mx::array(shift)),
                          mx::bfloat16);
      v.eval();
      return v;
    };
    auto quant = [&](int n, int k, int seed) {
      auto q = mx::quantize(centered({n, k}, seed, 0.05f), 64, 4);  // std ~1 / sqrt(4096)
      mx::eval(q);
      return q;
    };
    auto bytes_of = [](const std::vector<mx::array>& q) {
      return 4.0 * q[0].size() + 2.0 * q[1].size() + 2.0 * q[2].size();
    };
    auto h = centered({1, 4096}, 30, 4.0f);
    auto norm_w = centered({4096}, 31, 1.0f, 1.0f);
    auto mid = centered({1, 12288}, 32, 0.2f);
    auto qkv = quant(6144, 4096, 33), o = quant(4096, 4096, 34), gate_up = quant(24576, 4096, 35),
         down = quant(4096, 12288, 36);
    auto qmm = [](const mx::array& x, const std::vector<mx::array>& q) {
      return mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4);
    };
    add("8B q/k/v: rms_norm -> q4 bf16 [1,4096] x [6144,4096]^T", bytes_of(qkv),
        [&] { return qmm(mx::fast::rms_norm(h, norm_w, 1e-6f), qkv); });
    add("8B o: q4 bf16 [1,4096] x [4096,4096]^T + residual", bytes_of(o),
        [&] { return mx::add(h, qmm(h, o)); });
    add("8B down: q4 bf16 [1,12288] x [4096,12288]^T + residual", bytes_of(down),
        [&] { return mx::add(h, qmm(mid, down)); });
    // The normed gate/up product's SwiGLU.
    auto glu = [&] {
      auto halves = mx::split(qmm(mx::fast::rms_norm(h, norm_w, 1e-6f), gate_up), 2, -1);
      return swiglu({halves[0], halves[1]})[0];
    };
    // The SwiGLU becomes the gate/up product's epilogue only where a product reads it: the
    // whole MLP, whose gate/up share is this row's time less the down row's.
    add("8B MLP: rms_norm -> q4 [1,4096] x [24576,4096]^T -> SwiGLU -> down + residual",
        bytes_of(gate_up) + bytes_of(down), [&] { return mx::add(h, qmm(glu(), down)); });
    // The gate/up product by what it absorbs: alone, with the norm, and with the norm and
    // the SwiGLU (read by a 64-column product, timed alone in the last row).
    auto tail = quant(64, 12288, 37);
    add("8B gate/up alone: q4 bf16 [1,4096] x [24576,4096]^T", bytes_of(gate_up),
        [&] { return qmm(h, gate_up); });
    add("8B gate/up: rms_norm -> q4 bf16 [1,4096] x [24576,4096]^T", bytes_of(gate_up),
        [&] { return qmm(mx::fast::rms_norm(h, norm_w, 1e-6f), gate_up); });
    add("8B gate/up: rms_norm -> q4 [24576,4096]^T -> SwiGLU -> q4 [64,12288]^T",
        bytes_of(gate_up) + bytes_of(tail), [&] { return qmm(glu(), tail); });
    add("q4 bf16 [1,12288] x [64,12288]^T", bytes_of(tail), [&] { return qmm(mid, tail); });
  }
  if (bench::wanted("MATMUL_BENCH_ONLY", "qrows")) {
    // The 4-bit down and gate/up projections of an 8B-class model by rows, f16 and bf16:
    // where qmvc (MLX_VK_QMV_COOP=on) and qmv (off) cross. MATMUL_BENCH_QROWS=2,4,8 picks
    // the row counts (the gate/up shape runs only for <= 8 rows, qmv's).
    std::vector<int> ms{2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 33, 48, 64, 96};
    if (!bench::env_counts("MATMUL_BENCH_QROWS", 96, ms)) {
      return 1;
    }
    for (auto dt : {mx::float16, mx::bfloat16}) {
      const char* dn = dt == mx::float16 ? "f16" : "bf16";
      for (auto [n, k] : {std::pair{4096, 14336}, std::pair{14336, 4096}}) {
        auto q = mx::quantize(bench::gpu_uniform({n, k}, 17, dt), 64, 4);
        auto xr = bench::gpu_uniform({96, k}, 18, dt);
        mx::eval(q);
        double bytes = 4.0 * q[0].size() + 2.0 * q[1].size() + 2.0 * q[2].size();
        for (int m : ms) {
          if (k == 4096 && m > 8) {
            continue;
          }
          auto x = mx::slice(xr, {0, 0}, {m, k});
          char name[64];
          std::snprintf(name, sizeof(name), "q4 g64 %s [%d,%d] x [%d,%d]^T", dn, m, k, n, k);
          rows.push_back(
              {name, bytes,
               measure_op([&] { return mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4); },
                          batch, reps)});
        }
      }
    }
  }
  if (!rows.empty()) {
    bench::print_timed_table(rows, peak);
  }

  if (bench::wanted("MATMUL_BENCH_ONLY", "chain")) {
    // A dependent chain of decode-sized 4-bit products, each reading the previous output (a
    // decode step's shape of work): the same weights every link (resident in L2) against
    // distinct weights per link (more than L2 holds). GPU time per link: what a dependent
    // launch costs, and how much of it reading cold weights adds (docs/performance.md).
    std::printf("\n| chain | distinct weights | GPU us per link |\n|---|---|---|\n");
    mx::vulkan::force_prefetch_weights(std::nullopt);  // a decode chain, as shipped
    // 128 x 0.56 MiB and 64 x 2.25 MiB of cold weights: more than an H200's 50 MB of L2.
    struct Chain {
      int k, distinct;
    };
    for (Chain c : {Chain{1024, 1}, Chain{1024, 128}, Chain{2048, 1}, Chain{2048, 64}}) {
      const int k = c.k;
      std::vector<std::vector<mx::array>> ws;
      for (int i = 0; i < c.distinct; ++i) {
        auto u = bench::gpu_uniform({k, k}, 100 + i, mx::bfloat16);
        auto w = mx::multiply(mx::subtract(u, mx::array(0.5f, mx::bfloat16)),
                              mx::array(0.1f, mx::bfloat16));
        auto q = mx::quantize(w, 64, 4);
        mx::eval(q);
        ws.push_back(q);
      }
      auto x = bench::gpu_uniform({1, k}, 99, mx::bfloat16);
      const int links = 64;
      auto run = [&] {
        auto y = x;
        for (int i = 0; i < links; ++i) {
          auto& q = ws[i % ws.size()];
          y = mx::quantized_matmul(y, q[0], q[1], q[2], true, 64, 4);
        }
        return y;
      };
      for (int w = 0; w < 20; ++w) {
        mx::eval(run());
      }
      mx::synchronize();
      mx::vulkan::reset_kernel_times();
      for (int r = 0; r < 5; ++r) {
        mx::eval(run());
        mx::synchronize();
      }
      double us = mx::vulkan::gpu_busy_us() / (5.0 * links);
      std::printf("| [1,%d] x [%d,%d]^T q4 | %d | %.2f |\n", k, k, k, static_cast<int>(ws.size()),
                  us);
    }
    mx::vulkan::force_prefetch_weights(false);
  }

  if (gemm) {
    struct Gemm {
      const char* name;
      int m, n, k;
      mx::Dtype dt;
      bool b_t;
      bool a_t = false;
    };
    std::printf(
        "\n| product | GPU time (us) | wall per op (us) | TFLOPS (GPU) |\n|---|---|---|---|\n");
    for (const Gemm& g :
         {Gemm{"f16 4096x4096x4096", 4096, 4096, 4096, mx::float16, false},
          Gemm{"bf16 4096x4096x4096", 4096, 4096, 4096, mx::bfloat16, false},
          Gemm{"f16 4096x[4096,4096]^T", 4096, 4096, 4096, mx::float16, true},
          Gemm{"bf16 4096x[4096,4096]^T", 4096, 4096, 4096, mx::bfloat16, true},
          Gemm{"f16 [4096,4096]^T x 4096x4096", 4096, 4096, 4096, mx::float16, false, true},
          Gemm{"f32 4096x4096x4096", 4096, 4096, 4096, mx::float32, false},
          Gemm{"bf16 M=1024 x [12288,4096]^T", 1024, 12288, 4096, mx::bfloat16, true},
          Gemm{"bf16 M=2048 x [12288,4096]^T", 2048, 12288, 4096, mx::bfloat16, true},
          Gemm{"bf16 M=1024 x 4096x12288", 1024, 12288, 4096, mx::bfloat16, false},
          Gemm{"bf16 M=2048 x [4096,12288]^T", 2048, 4096, 12288, mx::bfloat16, true},
          Gemm{"f16 M=512 x [14336,4096]^T", 512, 14336, 4096, mx::float16, true},
          Gemm{"f16 M=64 x [4096,4096]^T", 64, 4096, 4096, mx::float16, true}}) {
      auto a = g.a_t ? mx::transpose(bench::gpu_uniform({g.k, g.m}, 20, g.dt))
                     : bench::gpu_uniform({g.m, g.k}, 20, g.dt);
      auto b = g.b_t ? mx::transpose(bench::gpu_uniform({g.n, g.k}, 21, g.dt))
                     : bench::gpu_uniform({g.k, g.n}, 21, g.dt);
      int reps_g = g.m >= 4096 ? 2 : reps;
      auto t = measure_op([&] { return mx::matmul(a, b); }, batch, reps_g);
      double flops = 2.0 * g.m * g.n * g.k;
      std::printf("| %s | %.1f | %.1f | %.1f |\n", g.name, t.gpu_ms * 1e3, t.wall_ms * 1e3,
                  t.gpu_ms > 0 ? flops / (t.gpu_ms * 1e-3) / 1e12 : 0.0);
    }
    auto x512 = bench::gpu_uniform({512, 14336}, 22, mx::float16);
    auto q = mx::quantize(bench::gpu_uniform({4096, 14336}, 23, mx::float16), 64, 4);
    mx::eval(q);
    auto t = measure_op([&] { return mx::quantized_matmul(x512, q[0], q[1], q[2], true, 64, 4); },
                        batch, reps);
    double flops = 2.0 * 512 * 4096 * 14336;
    std::printf("| q4 g64 M=512 x [4096,14336]^T (qmm) | %.1f | %.1f | %.1f |\n", t.gpu_ms * 1e3,
                t.wall_ms * 1e3, t.gpu_ms > 0 ? flops / (t.gpu_ms * 1e-3) / 1e12 : 0.0);
  }
  if (bench::wanted("MATMUL_BENCH_ONLY", "qmm")) {
    // Prefill-sized 4-bit products of an 8B-class MLP by rows, f16 and bf16: where
    // dequantizing first (MLX_VK_QMM_DEQUANT=on) and the qmm tiles (off) cross.
    // MATMUL_BENCH_QMM_ROWS=256,512 sets the row counts.
    std::vector<int> ms{128, 256, 512, 1024, 4096};
    if (!bench::env_counts("MATMUL_BENCH_QMM_ROWS", 8192, ms)) {
      return 1;
    }
    std::printf(
        "\n| quantized product | GPU time (us) | wall per op (us) | TFLOPS (GPU) "
        "|\n|---|---|---|---|\n");
    for (auto dt : {mx::float16, mx::bfloat16}) {
      const char* dn = dt == mx::float16 ? "f16" : "bf16";
      for (auto [n, k] : {std::pair{4096, 14336}, std::pair{14336, 4096}}) {
        auto q = mx::quantize(bench::gpu_uniform({n, k}, 24, dt), 64, 4);
        auto xr = bench::gpu_uniform({ms.empty() ? 1 : *std::max_element(ms.begin(), ms.end()), k},
                                     25, dt);
        mx::eval(q);
        for (int m : ms) {
          auto x = mx::slice(xr, {0, 0}, {m, k});
          auto t =
              measure_op([&] { return mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4); },
                         batch, m >= 2048 ? 2 : reps);
          double flops = 2.0 * m * n * k;
          std::printf("| q4 g64 %s [%d,%d] x [%d,%d]^T | %.1f | %.1f | %.1f |\n", dn, m, k, n, k,
                      t.gpu_ms * 1e3, t.wall_ms * 1e3,
                      t.gpu_ms > 0 ? flops / (t.gpu_ms * 1e-3) / 1e12 : 0.0);
        }
      }
    }
    // The dequantize op alone (the first of the two launches above, rounded twice as the
    // op is): bytes read and written against the peak.
    std::vector<TimedRow> deq;
    for (auto dt : {mx::float16, mx::bfloat16}) {
      auto q = mx::quantize(bench::gpu_uniform({14336, 4096}, 26, dt), 64, 4);
      mx::eval(q);
      double bytes = 4.0 * q[0].size() + 2.0 * q[1].size() + 2.0 * q[2].size() + 2.0 * 14336 * 4096;
      deq.push_back(
          {dt == mx::float16 ? "dequantize q4 g64 f16 [14336,4096]"
                             : "dequantize q4 g64 bf16 [14336,4096]",
           bytes,
           measure_op([&] { return mx::dequantize(q[0], q[1], q[2], 64, 4); }, batch, reps)});
    }
    // What writing the output alone takes (a broadcast scalar filled into the same shape).
    auto one = mx::array(1.0f, mx::bfloat16);
    auto fill = [&] { return mx::full({14336, 4096}, one); };
    deq.push_back({"write only: bf16 [14336,4096] filled", 2.0 * 14336 * 4096,
                   measure_op(fill, batch, reps)});
    bench::print_timed_table(deq, peak);
  }
  if (std::getenv("MATMUL_BENCH_ONLY") && bench::wanted("MATMUL_BENCH_ONLY", "tiles")) {
    // The coop GEMM's tiles by rows on prefill's shapes (bf16 x times a weight's transpose,
    // as a dequantized product runs): each tile forced in turn against the planned choice,
    // for the tile rule's ragged row counts (docs/matmul.md). MATMUL_BENCH_TILE_ROWS sets
    // the row counts.
    std::vector<int> ms{128, 192, 256, 320, 384, 448, 512, 640, 768, 1024, 1536, 2048};
    if (!bench::env_counts("MATMUL_BENCH_TILE_ROWS", 8192, ms)) {
      return 1;
    }
    std::vector<std::string> tiles{"", "coopkhr128x256x16w64x64", "coopkhr128x128x32w64x32",
                                   "coopkhr64x64x32w32x32"};
    if (const char* list = std::getenv("MATMUL_BENCH_TILES")) {
      tiles = {""};
      for (std::string rest = list; !rest.empty();) {
        auto comma = rest.find(',');
        tiles.push_back(rest.substr(0, comma));
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      }
    }
    std::printf("\n| bf16 product | planned (us) |");
    for (size_t t = 1; t < tiles.size(); ++t) {
      std::printf(" %s (us) |", tiles[t].c_str());
    }
    std::printf(" best TFLOPS |\n|---|---|");
    for (size_t t = 1; t < tiles.size(); ++t) {
      std::printf("---|");
    }
    std::printf("---|\n");
    bench::warm_gpu(i64a, 300);
    // The last shape multiplies by B as stored (k rows of n), not by a weight's transpose.
    struct Shape {
      int n, k;
      bool b_t;
    };
    // MATMUL_BENCH_TILE_LAYOUT=nn: every B as stored (k rows of n, as a dequantized weight's
    // transpose); tn: that, with x read as the transpose of k rows of m.
    const char* layout_env = std::getenv("MATMUL_BENCH_TILE_LAYOUT");
    const std::string layout = layout_env ? layout_env : "";
    const int m_max = *std::max_element(ms.begin(), ms.end());
    for (auto [n, k, b_t] :
         {Shape{4096, 4096, true}, Shape{6144, 4096, true}, Shape{12288, 4096, true},
          Shape{4096, 12288, true}, Shape{3072, 1024, true}, Shape{1024, 3072, true},
          Shape{4096, 4096, false}}) {
      b_t = b_t && layout != "nn" && layout != "tn";
      auto w = bench::gpu_uniform(b_t ? mx::Shape{n, k} : mx::Shape{k, n}, 27, mx::bfloat16);
      auto xr = layout == "tn" ? bench::gpu_uniform({k, m_max}, 28, mx::bfloat16)
                               : bench::gpu_uniform({m_max, k}, 28, mx::bfloat16);
      for (int m : ms) {
        auto x = layout == "tn" ? mx::transpose(mx::slice(xr, {0, 0}, {k, m}))
                                : mx::slice(xr, {0, 0}, {m, k});
        std::vector<double> us;
        for (const auto& tile : tiles) {
          mx::vulkan::set_forced_gemm_tile(tile);
          us.push_back(
              measure_op([&] { return mx::matmul(x, b_t ? mx::transpose(w) : w); }, batch, 3, 50.0)
                  .gpu_ms *
              1e3);
        }
        double best = *std::min_element(us.begin(), us.end());
        std::printf("| [%d,%d]%s x [%d,%d]%s |", layout == "tn" ? k : m, layout == "tn" ? m : k,
                    layout == "tn" ? "^T" : "", b_t ? n : k, b_t ? k : n, b_t ? "^T" : "");
        for (double u : us) {
          std::printf(" %.1f |", u);
        }
        std::printf(" %.1f |\n", best > 0 ? 2.0 * m * n * k / best / 1e6 : 0.0);
      }
    }
    mx::vulkan::set_forced_gemm_tile("");
  }
  return 0;
}
