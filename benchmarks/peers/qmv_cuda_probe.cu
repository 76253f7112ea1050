// What a 4-bit, group-64 single-row product (qmv's shape of work: one bf16 row x times
// W^T, W's rows packed as MLX packs them) reaches in CUDA on the same GPU, by structure:
// warps a block, parts (warps sharing a row's K), rows a warp, and the arithmetic (none,
// f32 as templates/qmv.glsl's f32 sums, f16 pairs as its F16_DOT). Each launch reads one of
// 6 copies of the weights, so nothing is served from L2. "noload" makes the words from
// their index instead of loading them (the arithmetic alone). docs/matmul.md, "qmv in
// CUDA on the same GPU", has the numbers and what they say.
//
// The GPU machine only (CUDA toolkit; not part of the build):
//   nvcc -O3 -arch=sm_90 -o qmv_cuda_probe benchmarks/peers/qmv_cuda_probe.cu && ./qmv_cuda_probe
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <vector>
#define CK(x)                                                       \
  do {                                                              \
    cudaError_t e = (x);                                            \
    if (e != cudaSuccess) {                                         \
      printf("CUDA %s line %d\n", cudaGetErrorString(e), __LINE__); \
      exit(1);                                                      \
    }                                                               \
  } while (0)

__device__ __forceinline__ float bf(uint16_t h) {
  return __uint_as_float(uint32_t(h) << 16);
}

// Pack `pack` of rows row0 .. row0 + R - 1 (past N: the last row) with its group's scale and
// bias; MODE 2 makes them from their index instead (the arithmetic without the loads).
template <int R, int MODE>
__device__ __forceinline__ void load_packs(const uint4* __restrict__ W,
                                           const uint16_t* __restrict__ S,
                                           const uint16_t* __restrict__ B, int row0, int N,
                                           int pack, int packs, int groups, uint4 (&w)[R],
                                           uint16_t (&s)[R], uint16_t (&b)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    int row = min(row0 + r, N - 1);
    if (MODE == 2) {
      uint32_t h = (row * 2654435761u) ^ pack;
      w[r] = make_uint4(h, h * 3u, h * 5u, h * 7u);
      s[r] = static_cast<uint16_t>(h);
      b[r] = static_cast<uint16_t>(h >> 16);
    } else {
      w[r] = W[(size_t)row * packs + pack];
      s[r] = S[(size_t)row * groups + pack / 2];
      b[r] = B[(size_t)row * groups + pack / 2];
    }
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The parts of rows row0 .. row0 + R - 1 (each warp's sums, the same in every lane) meet in
// shared memory; the first part's lanes store them.
template <int WARPS, int P, int R>
__device__ __forceinline__ void store_rows(const float (&sums)[R], int row0, int N,
                                           float* __restrict__ out) {
  __shared__ float part[WARPS][R];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
      part[warp][r] = sums[r];
  }
  if (P > 1)
    __syncthreads();
  if (warp % P == 0 && lane < R) {
    float v = part[warp][lane];
    for (int q = 1; q < P; ++q)
      v += part[warp + q][lane];
    if (row0 + lane < N)
      out[row0 + lane] = v;
  }
}

// sum_j x_j q_j of one pack in f32: each 4-bit value shifted, masked and converted.
__device__ __forceinline__ float pack_dot(const float (&xf)[32], uint4 w) {
  uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  float d = 0.f;
#pragma unroll
  for (int t = 0; t < 4; ++t)
#pragma unroll
    for (int i = 0; i < 8; ++i)
      d = fmaf(xf[t * 8 + i], float((ws[t] >> (4 * i)) & 15u), d);
  return d;
}

// WARPS warps a block; P parts (warps) per row group; R rows per warp; MODE 0: XOR only, 1: f32
// arithmetic, 2: the same with no W loads, 3: f32 with bf16 x times a norm weight.
template <int WARPS, int P, int R, int MODE>
__global__ void __launch_bounds__(WARPS * 32)
    qmv(const uint4* __restrict__ W, const uint16_t* __restrict__ S, const uint16_t* __restrict__ B,
        const uint4* __restrict__ X, float* __restrict__ out, int K, int N) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int p = warp % P, g = warp / P;
  const int row0 = (blockIdx.x * (WARPS / P) + g) * R;
  const int packs = K / 32, groups = K / 64;
  const int ppl = packs / (32 * P);
  float ss = 0.f;  // MODE 3: the row's sum of squares (its norm), folded into the output
  float acc[R];
  uint32_t xacc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    acc[r] = 0.f;
    xacc[r] = 0;
  }
  for (int j = 0; j < ppl; ++j) {
    int pack = (j * P + p) * 32 + lane;
    uint4 w[R];
    uint16_t s[R], b[R];
    load_packs<R, MODE>(W, S, B, row0, N, pack, packs, groups, w, s, b);
    if (MODE == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r)
        xacc[r] ^= w[r].x ^ w[r].y ^ w[r].z ^ w[r].w ^ s[r] ^ (uint32_t(b[r]) << 16);
    } else {
      float xf[32];
      float xs = 0.f;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint4 v = X[pack * 4 + i];
        uint32_t a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          xf[i * 8 + 2 * t] = __uint_as_float(a[t] << 16);
          xf[i * 8 + 2 * t + 1] = __uint_as_float(a[t] & 0xffff0000u);
        }
        if (MODE == 3) {  // x times a norm weight (another part of the row), squares summed
          uint4 nw = X[(pack * 4 + i) ^ 1];
          uint32_t b[4] = {nw.x, nw.y, nw.z, nw.w};
#pragma unroll
          for (int t = 0; t < 4; ++t) {
            float x0 = xf[i * 8 + 2 * t], x1 = xf[i * 8 + 2 * t + 1];
            ss = fmaf(x0, x0, fmaf(x1, x1, ss));
            xf[i * 8 + 2 * t] = x0 * __uint_as_float(b[t] << 16);
            xf[i * 8 + 2 * t + 1] = x1 * __uint_as_float(b[t] & 0xffff0000u);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 32; ++i)
        xs += xf[i];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        acc[r] = fmaf(bf(s[r]), pack_dot(xf, w[r]), fmaf(bf(b[r]), xs, acc[r]));
      }
    }
  }
  float sums[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (MODE == 0) {
      uint32_t u = xacc[r];
      for (int o = 16; o; o >>= 1)
        u ^= __shfl_xor_sync(0xffffffffu, u, o);
      sums[r] = __uint_as_float(u);
    } else {
      sums[r] = warp_sum(acc[r] + ss);
    }
  }
  store_rows<WARPS, P, R>(sums, row0, N, out);
}

// Persistent: a grid of a few blocks an SM, each warp converting x once (all of K in
// registers) and then looping over row groups of R rows, the whole K a lane.
template <int WARPS, int R>
__global__ void __launch_bounds__(WARPS * 32)
    qmv_pers(const uint4* __restrict__ W, const uint16_t* __restrict__ S,
             const uint16_t* __restrict__ B, const uint4* __restrict__ X, float* __restrict__ out,
             int K, int N) {
  // One warp = R rows, whole K (packs/32 per lane); grid-stride over row groups.
  const int lane = threadIdx.x & 31;
  const int gw = blockIdx.x * WARPS + (threadIdx.x >> 5), nw = gridDim.x * WARPS;
  const int packs = K / 32, groups = K / 64, ppl = packs / 32;  // ppl <= 4 here
  float xf[4][32];
  float xs[4];
  for (int j = 0; j < ppl; ++j) {
    int pack = j * 32 + lane;
    xs[j] = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint4 v = X[pack * 4 + i];
      uint32_t a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        xf[j][i * 8 + 2 * t] = __uint_as_float(a[t] << 16);
        xf[j][i * 8 + 2 * t + 1] = __uint_as_float(a[t] & 0xffff0000u);
      }
    }
#pragma unroll
    for (int i = 0; i < 32; ++i)
      xs[j] += xf[j][i];
  }
  for (int grp = gw; grp * R < N; grp += nw) {
    int row0 = grp * R;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      acc[r] = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (j >= ppl)
        break;
      int pack = j * 32 + lane;
      uint4 w[R];
      uint16_t s[R], b[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        int row = min(row0 + r, N - 1);
        w[r] = W[(size_t)row * packs + pack];
        s[r] = S[(size_t)row * groups + pack / 2];
        b[r] = B[(size_t)row * groups + pack / 2];
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        acc[r] = fmaf(bf(s[r]), pack_dot(xf[j], w[r]), fmaf(bf(b[r]), xs[j], acc[r]));
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float v = acc[r];
      v = warp_sum(v);
      if (lane == r && row0 + r < N)
        out[row0 + r] = v;
    }
  }
}

// f16 pairs as templates/qmv.glsl's pack_values_f16 + pairs_dot. MODE 2: no W loads; 3: bf16
// x and a norm.
template <int WARPS, int P, int R, int MODE>
__global__ void __launch_bounds__(WARPS * 32)
    qmv16(const uint4* __restrict__ W, const uint16_t* __restrict__ S,
          const uint16_t* __restrict__ B, const uint4* __restrict__ X, float* __restrict__ out,
          int K, int N) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int p = warp % P, g = warp / P;
  const int row0 = (blockIdx.x * (WARPS / P) + g) * R;
  const int packs = K / 32, groups = K / 64;
  const int ppl = packs / (32 * P);
  float ss = 0.f;  // MODE 3: as in qmv
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    acc[r] = 0.f;
  for (int j = 0; j < ppl; ++j) {
    int pack = (j * P + p) * 32 + lane;
    uint4 w[R];
    uint16_t s[R], b[R];
    load_packs<R, MODE>(W, S, B, row0, N, pack, packs, groups, w, s, b);
    // x pairs (x_{8k+i}, x_{8k+i+4}): from f16 x, or (MODE 3) from bf16 x times a bf16 norm
    // weight in f32, its squares summed, then rounded to f16 pairs: what our PRENORM
    // product with bf16 rows would do per pack.
    __half2 xp[16];
    float xs = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint4 raw = X[pack * 4 + k];
      if (MODE == 3) {
        uint4 nwr = X[(pack * 4 + k) ^ 1];
        uint32_t a[4] = {raw.x, raw.y, raw.z, raw.w}, b[4] = {nwr.x, nwr.y, nwr.z, nwr.w};
        float v[8];
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          float x0 = __uint_as_float(a[t] << 16), x1 = __uint_as_float(a[t] & 0xffff0000u);
          v[2 * t] = x0 * __uint_as_float(b[t] << 16);
          v[2 * t + 1] = x1 * __uint_as_float(b[t] & 0xffff0000u);
          ss = fmaf(x0, x0, fmaf(x1, x1, ss));
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          xp[4 * k + i] = __floats2half2_rn(v[i], v[i + 4]);
          xs += v[i] + v[i + 4];
        }
        continue;
      }
      uint32_t pr[4];
      pr[0] = (raw.x & 0xffffu) | (raw.z << 16);
      pr[1] = (raw.x >> 16) | (raw.z & 0xffff0000u);
      pr[2] = (raw.y & 0xffffu) | (raw.w << 16);
      pr[3] = (raw.y >> 16) | (raw.w & 0xffff0000u);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        xp[4 * k + i] = *reinterpret_cast<__half2*>(&pr[i]);
        float2 f = __half22float2(xp[4 * k + i]);
        xs += f.x + f.y;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      uint32_t ws[4] = {w[r].x, w[r].y, w[r].z, w[r].w};
      __half2 a = __float2half2_rn(0.f);
      const __half2 moff = __float2half2_rn(-1024.f), s16 = __float2half2_rn(0.0625f),
                    moff16 = __float2half2_rn(-64.f);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        uint32_t wv = ws[k], w8 = wv >> 8;
        uint32_t t0 = (wv & 0x000F000Fu) | 0x64006400u, t1 = (wv & 0x00F000F0u) | 0x64006400u,
                 t2 = (w8 & 0x000F000Fu) | 0x64006400u, t3 = (w8 & 0x00F000F0u) | 0x64006400u;
        __half2 q0 = __hadd2(*reinterpret_cast<__half2*>(&t0), moff);
        __half2 q1 = __hfma2(*reinterpret_cast<__half2*>(&t1), s16, moff16);
        __half2 q2 = __hadd2(*reinterpret_cast<__half2*>(&t2), moff);
        __half2 q3 = __hfma2(*reinterpret_cast<__half2*>(&t3), s16, moff16);
        a = __hfma2(xp[4 * k], q0, a);
        a = __hfma2(xp[4 * k + 1], q1, a);
        a = __hfma2(xp[4 * k + 2], q2, a);
        a = __hfma2(xp[4 * k + 3], q3, a);
      }
      float2 fs = __half22float2(a);
      acc[r] = fmaf(bf(s[r]), fs.x + fs.y, fmaf(bf(b[r]), xs, acc[r]));
    }
  }
  float sums[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    sums[r] = warp_sum(acc[r] + ss);
  store_rows<WARPS, P, R>(sums, row0, N, out);
}

__global__ void readpeak(const uint4* __restrict__ a, size_t n, uint32_t* out) {
  uint32_t x = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = a[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x12345678u)
    out[0] = x;
}

struct Shape {
  int N, K;
  const char* name;
};
constexpr int NCOPY = 6;
uint4* gW[NCOPY];
uint16_t *gS[NCOPY], *gB[NCOPY];
uint4* gX;
float* gOut;

template <typename F>
float timeit(F launch, int iters = 60) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 6; ++i)
    launch(i % NCOPY);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i)
    launch(i % NCOPY);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  CK(cudaGetLastError());
  return ms * 1000.f / iters;
}

double g_peak = 0;
void report(const char* what, const Shape& sh, float us) {
  double bytes = (double)sh.N * sh.K / 2 + 4.0 * sh.N * (sh.K / 64);
  double gbs = bytes / (us * 1e-6) / 1e9;
  printf("%-10s %-28s %8.2f us %7.0f GB/s %.2f\n", sh.name, what, us, gbs, gbs / g_peak);
}

using Kernel = void (*)(const uint4*, const uint16_t*, const uint16_t*, const uint4*, float*, int,
                        int);

// One row of the table: `kernel` over a grid of `grid` blocks of `warps` warps.
void run_kernel(Kernel kernel, int grid, int warps, const Shape& sh, const char* name) {
  float us = timeit(
      [&](int c) { kernel<<<grid, warps * 32>>>(gW[c], gS[c], gB[c], gX, gOut, sh.K, sh.N); });
  report(name, sh, us);
}

template <int WARPS, int P, int R>
int row_grid(const Shape& sh) {
  return (sh.N + (WARPS / P) * R - 1) / ((WARPS / P) * R);
}

template <int WARPS, int P, int R, int MODE>
void run(const Shape& sh) {
  char name[64];
  snprintf(name, sizeof name, "w%d p%d r%d %s", WARPS, P, R,
           MODE == 3   ? "arith, norm"
           : MODE == 2 ? "noload"
           : MODE      ? "arith"
                       : "xor");
  run_kernel(qmv<WARPS, P, R, MODE>, row_grid<WARPS, P, R>(sh), WARPS, sh, name);
}
template <int WARPS, int P, int R, int MODE>
void run16(const Shape& sh) {
  char name[64];
  snprintf(name, sizeof name, "f16 w%d p%d r%d %s", WARPS, P, R,
           MODE == 2   ? "noload"
           : MODE == 3 ? "bf16 x, norm"
                       : "");
  run_kernel(qmv16<WARPS, P, R, MODE>, row_grid<WARPS, P, R>(sh), WARPS, sh, name);
}
template <int WARPS, int R>
void run_pers(const Shape& sh, int blocks_per_sm) {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  char name[64];
  snprintf(name, sizeof name, "pers w%d r%d b%d", WARPS, R, blocks_per_sm);
  run_kernel(qmv_pers<WARPS, R>, sms * blocks_per_sm, WARPS, sh, name);
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  size_t maxN = 24576, maxK = 12288;  // the largest shape below
  size_t wbytes = 24576 * 4096 / 2;   // largest W
  for (int c = 0; c < NCOPY; ++c) {
    CK(cudaMalloc(&gW[c], wbytes));
    CK(cudaMemset(gW[c], 0x5a + c, wbytes));
    CK(cudaMalloc(&gS[c], 24576 * 64 * 2));
    CK(cudaMemset(gS[c], 0x3c, 24576 * 64 * 2));
    CK(cudaMalloc(&gB[c], 24576 * 64 * 2));
    CK(cudaMemset(gB[c], 0x3c, 24576 * 64 * 2));
  }
  CK(cudaMalloc(&gX, maxK * 2));
  CK(cudaMemset(gX, 0x3c, maxK * 2));
  CK(cudaMalloc(&gOut, maxN * 4));
  // peak: read 1 GiB
  size_t pn = (1ull << 30) / 16;
  uint4* pa;
  uint32_t* po;
  CK(cudaMalloc(&pa, pn * 16));
  CK(cudaMemset(pa, 1, pn * 16));
  CK(cudaMalloc(&po, 4));
  for (int i = 0; i < 200; ++i)
    readpeak<<<prop.multiProcessorCount * 8, 256>>>(pa, pn, po);  // warm clocks
  float pus = timeit([&](int) { readpeak<<<prop.multiProcessorCount * 8, 256>>>(pa, pn, po); }, 20);
  g_peak = pn * 16.0 / (pus * 1e-6) / 1e9;
  printf("read peak %.0f GB/s\n", g_peak);
  Shape shapes[] = {{24576, 4096, "gate/up"}, {6144, 4096, "qkv"}, {4096, 12288, "down"}};
  for (auto& sh : shapes) {
    run<8, 2, 4, 0>(sh);
    run<8, 2, 4, 1>(sh);
    run<8, 2, 4, 2>(sh);
    run<8, 1, 4, 0>(sh);
    run<8, 1, 4, 1>(sh);
    run<8, 1, 4, 2>(sh);
    run<8, 1, 2, 1>(sh);
    run<8, 1, 1, 1>(sh);
    run<8, 2, 2, 1>(sh);
    run<8, 4, 4, 1>(sh);
    run<4, 1, 4, 1>(sh);
    run<4, 2, 4, 1>(sh);
    run<2, 1, 4, 1>(sh);
    run<8, 1, 8, 1>(sh);
    run16<8, 2, 4, 1>(sh);
    run16<8, 2, 4, 2>(sh);
    run16<8, 1, 4, 1>(sh);
    run16<8, 1, 4, 2>(sh);
    run16<8, 2, 2, 1>(sh);
    run16<8, 1, 2, 1>(sh);
    run16<8, 4, 4, 1>(sh);
    run16<8, 2, 8, 1>(sh);
    run16<8, 1, 8, 1>(sh);
    run16<4, 2, 4, 1>(sh);
    run16<4, 1, 4, 1>(sh);
    run<8, 2, 4, 3>(sh);
    run<4, 2, 4, 3>(sh);
    run16<8, 2, 4, 3>(sh);
    run16<4, 2, 4, 3>(sh);
    run16<8, 2, 8, 3>(sh);
    run16<4, 2, 8, 3>(sh);
    if (sh.K == 4096) {
      run_pers<8, 4>(sh, 2);
      run_pers<8, 4>(sh, 4);
      run_pers<8, 2>(sh, 4);
      run_pers<4, 4>(sh, 8);
    }
  }
  return 0;
}
