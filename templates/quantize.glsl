#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// MLX's affine quantization format (docs/quantization.md), both ways, over dense rows of K
// values: BITS-bit values packed little-endian into uint32 words (K * BITS / 32 per row),
// one scale and one bias per GS values.
//   QUANT_OP 0, dequantize: chunks of 8 values (BITS bytes of the row's bit stream, inside
//     one group), DEQ_CHUNKS an invocation: out = T(T(scale * q) + bias), the product
//     rounded to the output dtype T before the add, as the CPU reference (and MLX's
//     multiply-then-add) computes it. Consecutive invocations write consecutive chunks, so
//     a subgroup's stores are contiguous; with VEC_OUT each chunk is one 16-byte store
//     (two for f32).
//   QUANT_OP 1, quantize: one invocation per group, in f32 step by step as the CPU
//     reference, so the words, scales and biases are the same: min and max (NaN skipped),
//     scale = max((max - min) / n_bins, 1e-7) signed toward the end of larger magnitude
//     (the edge), moved so that the edge is a grid point, then
//     q = clamp(rint((w - bias) / scale), 0, n_bins) (NaN gives 0).
// The divisions must be correctly rounded for the words to match (div_rn, exact on every
// device).
//
// The engine defines QUANT_OP, BITS, GS, IN0_* (dequantize: the scales and biases;
// quantize: w) and OUT_* (dequantize: the output; quantize: the scales and biases).
#ifndef QUANT_OP
#define QUANT_OP 0
#endif
#ifndef BITS
#define BITS 4
#define GS 64
#endif

#include "include/operands.glsl"

#ifndef VEC_OUT
#define VEC_OUT 0
#endif
#ifndef OUT_WIDTH
#define OUT_WIDTH 16
#endif
// ROUND_ONCE: out = T(scale * q + bias), rounded once at the store, as the qmm tiles
// dequantize a product's weights (mlx/backend/vulkan/qmm_dequant.h); else the op's two.
#ifndef ROUND_ONCE
#define ROUND_ONCE 0
#endif
#ifndef OUT_F16
#define OUT_F16 0
#endif
#ifndef DEQ_CHUNKS
#define DEQ_CHUNKS 4
#endif
// TRANS_OUT: dequantize into w's transpose (below, before the plain main).
#ifndef TRANS_OUT
#define TRANS_OUT 0
#endif
#define MASK ((1u << BITS) - 1u)
#define WORDS_PER_GROUP (GS * BITS / 32)

layout(local_size_x_id = 0) in;

#if QUANT_OP == 0
layout(std430, set = 0, binding = 0) readonly buffer W {
  uint wq[];
};
layout(std430, set = 0, binding = 1) readonly buffer Scales {
  IN0_ST scales[];
};
layout(std430, set = 0, binding = 2) readonly buffer Biases {
  IN0_ST qbiases[];
};
layout(std430, set = 0, binding = 3) writeonly buffer Out {
  OUT_ST outv[];
};
// The same output as 16-byte vectors (VEC_OUT: the output's offset is a multiple of 8).
layout(std430, set = 0, binding = 3) writeonly buffer Out4 {
  uvec4 out4[];
};
#ifndef IDS
#define IDS 0
#endif
#if IDS
// Output row r is row ids[r] of w, scales and biases (a quantized embedding's lookup).
layout(std430, set = 0, binding = 4) readonly buffer Ids {
  int idsv[];
};
#endif
#else
layout(std430, set = 0, binding = 0) readonly buffer W {
  IN0_ST w[];
};
layout(std430, set = 0, binding = 1) writeonly buffer Wq {
  uint wq[];
};
layout(std430, set = 0, binding = 2) writeonly buffer Scales {
  OUT_ST scales[];
};
layout(std430, set = 0, binding = 3) writeonly buffer Biases {
  OUT_ST qbiases[];
};
#endif

// codegen/matmul.cpp packs exactly these fields, each IDX_T. Offsets are elements (words
// for the packed operand) within each binding.
layout(push_constant) uniform Params {
  IDX_T count;  // chunks of 8 values (dequantize) or groups (quantize)
  IDX_T k;      // values per row
  IDX_T w_offset;
  IDX_T s_offset;
  IDX_T b_offset;
  IDX_T out_offset;  // dequantize: the output's offset
#if QUANT_OP == 0 && IDS
  IDX_T src_rows;    // rows of w, scales and biases
  IDX_T ids_offset;  // the indices' element 0
#endif
}
pc;

IDX_T invocation() {
  return IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) * IDX_T(gl_WorkGroupSize.x) +
         IDX_T(gl_GlobalInvocationID.x);
}

#if QUANT_OP == 0
// bf16 output: groups whose scale and bias are finite give no NaN (scale * q + bias with
// q >= 0 is finite or an infinity), so their chunks are packed without the NaN test
// (pack_bf16x8_not_nan, types.glsl); the others keep it.
#define BF16_OUT (OUT_WIDTH == 16 && !OUT_F16)

// Stores chunk i's 8 values. One invocation per 32-value pack, each storing its values one
// by one 64 bytes from its neighbour's, dequantized at about 0.05 of the bandwidth on an
// H200 (docs/quantization.md).
void store_chunk(IDX_T i, float v[8], bool finite) {
  IDX_T at = pc.out_offset + i * 8;
#if VEC_OUT && BF16_OUT
  if (finite) {
    out4[uint(at / 8)] = pack_bf16x8_not_nan(v);
    return;
  }
#endif
#if VEC_OUT && OUT_F16 && MLX_F16_HW
  // Two values a conversion (exact alone on such drivers; types.glsl).
  out4[uint(at / 8)] = uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])),
                             packHalf2x16(vec2(v[4], v[5])), packHalf2x16(vec2(v[6], v[7])));
#elif VEC_OUT && OUT_WIDTH == 16
  uint h[8];
  [[unroll]] for (uint j = 0; j < 8u; ++j) {
    h[j] = uint(OUT_STORE(v[j]));
  }
  out4[uint(at / 8)] = uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16),
                             h[6] | (h[7] << 16));
#elif VEC_OUT
  out4[uint(at / 4)] = floatBitsToUint(vec4(v[0], v[1], v[2], v[3]));
  out4[uint(at / 4) + 1] = floatBitsToUint(vec4(v[4], v[5], v[6], v[7]));
#else
  [[unroll]] for (uint j = 0; j < 8u; ++j) {
    outv[uint(at + j)] = OUT_STORE(v[j]);
  }
#endif
}

// What one chunk's dequantization reads: its one or two words, its group's scale and bias.
struct ChunkIn {
  uint lo, hi, sh;
  float s, b;
  bool inside;  // IDS: the row index was in range (else the chunk is zeros)
};

// Loads chunk i's inputs (i must be a chunk of the output). Rows hold whole groups and
// whole words (K is a multiple of GS, and K * BITS of 32), so without IDS chunk i's bits
// start at bit i * 8 * BITS of w's stream and its group is i * 8 / GS: no division by the
// row length per chunk.
ChunkIn load_chunk(IDX_T i) {
  ChunkIn r;
  r.inside = true;
#if !IDS
  // Bit i * 8 * BITS is byte i * BITS (so no index passes the value count).
  IDX_T byte = i * BITS;
  IDX_T word = pc.w_offset + (byte >> 2);
  IDX_T bitpos = (byte & 3) * 8;
  IDX_T g = i / (GS / 8);
#else
  IDX_T chunks_per_row = pc.k / 8;
  IDX_T row = i / chunks_per_row;
  IDX_T c = i - row * chunks_per_row;
  // As the GPU's take: a negative index counts from the end once; one still out of range
  // reads row 0 and stores zeros.
  int raw = idsv[uint(pc.ids_offset + row)];
#if IDS_UNSIGNED
  r.inside = uint(raw) < uint(pc.src_rows);
  IDX_T srow = IDX_T(uint(raw));
#else
  IDX_T srow = raw < 0 ? IDX_T(raw) + pc.src_rows : IDX_T(raw);
  r.inside = srow >= 0 && srow < pc.src_rows;
#endif
  row = r.inside ? srow : IDX_T(0);
  // The chunk's BITS bytes start at bit c * 8 * BITS of its row, within one or two words.
  IDX_T bitpos = c * (8 * BITS);
  IDX_T word = pc.w_offset + row * (pc.k * BITS / 32) + (bitpos >> 5);
  IDX_T g = row * (pc.k / GS) + c * 8 / GS;
#endif
  r.sh = uint(bitpos & 31);
  r.lo = wq[uint(word)];
  r.hi = r.sh + 8u * BITS > 32u ? wq[uint(word + 1)] : 0u;
  r.s = float(IN0_LOAD(scales[uint(pc.s_offset + g)]));
  r.b = float(IN0_LOAD(qbiases[uint(pc.b_offset + g)]));
  return r;
}

// Value j of a chunk from its inputs.
float chunk_value(ChunkIn r, uint j) {
  uint bit = r.sh + j * BITS;
  uint q = bit >= 32u ? r.hi >> (bit - 32u)
                      : (r.lo >> bit) | (bit + BITS > 32u ? r.hi << (32u - bit) : 0u);
#if ROUND_ONCE
  float v = r.s * float(q & MASK) + r.b;
#else
  precise float scaled = r.s * float(q & MASK);
#if OUT_F16
  precise float v = f16_round_fast(scaled) + r.b;
#else
  precise float v = float(OUT_ROUND(scaled)) + r.b;
#endif
#endif
  return r.inside ? v : 0.0;
}

#if TRANS_OUT
// The output is w transposed: [k][rows] (a GEMM then reads the weights as k rows of n,
// which its wide tile reads faster than their transpose: docs/matmul.md). Each invocation
// takes the same chunk (8 values) of 8 consecutive rows and stores 8 chunks of the
// transpose, one a value of k, each 8 consecutive rows' values: no shared memory and no
// barrier. A subgroup of 32 covers 32 rows x 8 chunks: lanes 4 apart read consecutive
// words of a row, and the 4 lanes of one chunk store 64 contiguous bytes of a k row.
// rows and the output's offset are multiples of 8 (codegen checks), so stores stay whole
// chunks.
//
// Blocks go in bands of DEQ_BAND chunk columns (8 chunks each), the column fastest within a
// band: the workgroups running at once read DEQ_BAND x 32 contiguous bytes of each row and
// still write whole runs of each k row. Row blocks first (a band of 1, the order before)
// read 32 bytes of every row per pass over w. H200, bf16 [14336, 4096]: 53.0-53.4 us in
// row-block order, 48.5-48.7 in bands of 4, 48.4-50.5 of 8, 51.2 of 64 (docs/matmul.md).
#ifndef DEQ_BAND
#define DEQ_BAND 4
#endif
void main() {
  IDX_T inv = invocation();
  IDX_T chunks_per_row = pc.k / 8;
  IDX_T rows = pc.count / chunks_per_row;
  IDX_T row_blocks = (rows + 31) / 32;
  IDX_T columns = (chunks_per_row + 7) / 8;
  IDX_T block = inv / 32;
  IDX_T band = block / (row_blocks * DEQ_BAND);
  IDX_T in_band = block - band * (row_blocks * DEQ_BAND);
  IDX_T band_columns = min(IDX_T(DEQ_BAND), columns - band * DEQ_BAND);  // the last band's fewer
  IDX_T row_block = in_band / band_columns;
  IDX_T column = band * DEQ_BAND + (in_band - row_block * band_columns);
  IDX_T n = row_block * 32 + (inv % 4) * 8;
  IDX_T c = column * 8 + (inv / 4) % 8;
  // The loads are clamped into the matrix and issued before the range check, which only
  // guards the stores: behind an early return NVIDIA's compiler issued them one by one
  // (H200, f16 [14336, 4096]: 50.0-50.2 -> 46.0-46.9 us).
  IDX_T nl = min(n, rows - 8), cl = min(c, chunks_per_row - 1);
  ChunkIn r[8];
  bool finite = true;
  [[unroll]] for (uint j = 0; j < 8u; ++j) {
    r[j] = load_chunk((nl + IDX_T(j)) * chunks_per_row + cl);
  }
  [[unroll]] for (uint j = 0; j < 8u; ++j) {
    finite = finite && finite_f32(r[j].s) && finite_f32(r[j].b);
  }
  if (n >= rows || c >= chunks_per_row) {
    return;
  }
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    float v[8];
    [[unroll]] for (uint j = 0; j < 8u; ++j) {
      v[j] = chunk_value(r[j], e);
    }
    store_chunk(((c * 8 + IDX_T(e)) * rows + n) / 8, v, finite);
  }
}
#else
// Dequantizes chunk i from its inputs and stores it.
void finish_chunk(IDX_T i, ChunkIn r) {
  float v[8];
  [[unroll]] for (uint j = 0; j < 8u; ++j) {
    v[j] = chunk_value(r, j);
  }
  store_chunk(i, v, finite_f32(r.s) && finite_f32(r.b));
}

// Each invocation takes DEQ_CHUNKS chunks, one in each of as many equal spans of the
// output, so that a subgroup's loads and stores stay contiguous. All of its chunks' loads
// are issued before any value is used (an invocation past the end reads the last chunk
// and stores nothing), so they are in flight together: NVIDIA's compiler does not move a
// load above the condition that guards it (H200, bf16 [14336, 4096]: 79.6 -> 74.7 us;
// 1 chunk an invocation moved 0.45 of the bandwidth, docs/quantization.md).
void main() {
  IDX_T i = invocation();
  IDX_T span = (pc.count + DEQ_CHUNKS - 1) / DEQ_CHUNKS;
  ChunkIn r[DEQ_CHUNKS];
  [[unroll]] for (uint j = 0; j < DEQ_CHUNKS; ++j) {
    r[j] = load_chunk(min(i + IDX_T(j) * span, pc.count - 1));
  }
  [[unroll]] for (uint j = 0; j < DEQ_CHUNKS; ++j) {
    IDX_T chunk = i + IDX_T(j) * span;
    if (i < span && chunk < pc.count) {
      finish_chunk(chunk, r[j]);
    }
  }
}
#endif  // TRANS_OUT
#else
// x / y, correctly rounded (round to nearest even). Bit-exact quantization needs it, and
// Vulkan does not promise it: OpFDiv may be 2.5 ulp off (NVIDIA's is; lavapipe's is
// exact), and a correction step through fma() is not portable either (GLSL's fma need not
// be fused: on lavapipe such a step made results worse). So the significands are divided
// as integers, by long division, which every device does exactly. Zeros, subnormals,
// infinities, NaN and quotients outside the normal range keep the hardware's quotient;
// quantization never divides such values except by its own 1e-7 floor.
float div_rn(float x, float y) {
  uint bx = floatBitsToUint(x), by = floatBitsToUint(y);
  int ex = int((bx >> 23) & 0xffu), ey = int((by >> 23) & 0xffu);
  if (ex == 0 || ey == 0 || ex == 255 || ey == 255) {
    precise float q = x / y;
    return q;
  }
  uint mx = (bx & 0x7fffffu) | 0x800000u, my = (by & 0x7fffffu) | 0x800000u;
  // q = floor(mx * 2^25 / my): 25 or 26 bits, as mx / my is in (1/2, 2); r != 0 is sticky.
  uint q = 0u, r = mx;
  for (int i = 0; i < 26; ++i) {
    q <<= 1;
    if (r >= my) {
      r -= my;
      q |= 1u;
    }
    r <<= 1;
  }
  uint shift = q >= (1u << 25) ? 2u : 1u;
  int e = ex - ey + 127 - (shift == 2u ? 0 : 1);
  uint mant = q >> shift;  // 24 bits, the leading one included
  uint low = q & ((1u << shift) - 1u), midpoint = 1u << (shift - 1u);
  if (low > midpoint || (low == midpoint && (r != 0u || (mant & 1u) != 0u))) {
    mant += 1u;
    if (mant == (1u << 24)) {
      mant >>= 1;
      e += 1;
    }
  }
  if (e < 1 || e > 254) {
    precise float h = x / y;
    return h;
  }
  return uintBitsToFloat(((bx ^ by) & 0x80000000u) | (uint(e) << 23) | (mant & 0x7fffffu));
}

void main() {
  IDX_T i = invocation();
  if (i >= pc.count) {
    return;
  }
  IDX_T base = pc.w_offset + i * GS;  // rows are dense, so group i starts at i * GS
  const float n_bins = float(MASK);
  float w_min = uintBitsToFloat(0x7f800000u);
  float w_max = -w_min;
  for (uint j = 0; j < GS; ++j) {
    float v = float(IN0_LOAD(w[uint(base + j)]));
    if (!isnan(v)) {
      w_min = min(w_min, v);
      w_max = max(w_max, v);
    }
  }
  bool mask = abs(w_min) > abs(w_max);
  float scale = max(div_rn(w_max - w_min, n_bins), 1e-7f);
  scale = mask ? scale : -scale;
  float edge = mask ? w_min : w_max;
  float q0 = roundEven(div_rn(edge, scale));
  float bias = 0.0f;
  if (q0 != 0.0f) {
    scale = div_rn(edge, q0);
    bias = edge;
  }
  uint words[WORDS_PER_GROUP];
  for (uint q = 0; q < WORDS_PER_GROUP; ++q) {
    words[q] = 0u;
  }
  for (uint j = 0; j < GS; ++j) {
    precise float d = float(IN0_LOAD(w[uint(base + j)])) - bias;
    float q = roundEven(div_rn(d, scale));
    q = min(max(q, 0.0f), n_bins);
    uint v = isnan(q) ? 0u : uint(q);
    uint bit = j * BITS;
    words[bit >> 5] |= v << (bit & 31u);
#if (32 % BITS) != 0
    if ((bit & 31u) + BITS > 32u) {
      words[(bit >> 5) + 1] |= v >> (32u - (bit & 31u));
    }
#endif
  }
  for (uint q = 0; q < WORDS_PER_GROUP; ++q) {
    wq[uint(pc.out_offset + i * WORDS_PER_GROUP + q)] = words[q];
  }
  scales[uint(pc.s_offset + i)] = OUT_STORE(scale);
  qbiases[uint(pc.b_offset + i)] = OUT_STORE(bias);
}
#endif
