// qmv.glsl's X8 sums (one f16 or bf16 row of 4-bit packs as integer dot products): x staged
// in shared memory as two bytes a value, whole (stage_x8) or a step at a time
// (stage_x8_group, X8_STREAM), and a step's dot products (x8_step). Included by qmv.glsl
// with X8 only, after its bindings, push constants and sdot4x8: it uses them.
#ifndef MLX_QMV_X8_GLSL
#define MLX_QMV_X8_GLSL
// x's packs as bytes: planes 0 and 1 the h parts of values 0-15 and 16-31, planes 2 and 3
// the l parts. A plane's uvec4 for a pack holds, for each 8 values 8k .. 8k + 7, the even
// values' bytes (8k, 8k + 2, 8k + 4, 8k + 6) then the odd ones'. Lanes of a team read
// consecutive packs, so each plane's loads are consecutive 16-byte words (no bank
// conflicts). x8f: the pack's scale m / (127 * 254) and its f32 sum.
shared uvec4 x8s[4][XPACKS];
shared vec2 x8f[XPACKS];
#if PRENORM
shared float x8ss[WGS / 4];  // one slot a subgroup (X8 takes subgroups of >= 4 lanes)
#endif

// Writes values 8u .. 8u + 7 of x's row (raw, and the norm weight's wraw with PRENORM: x is
// weighed by it first, and the squares of x as stored are added to ss) to x8s / x8f. The
// four invocations of a pack are a subgroup's adjacent invocations (u's low two bits), and
// take part together.
void stage_x8_group(uint u, IN0_VT raw, IN0_VT wraw, inout float ss) {
  float v[8];
  [[unroll]] for (uint j = 0; j < 8; ++j) {
    v[j] = float(IN0_VLANE(raw, j));
  }
#if PRENORM
  [[unroll]] for (uint j = 0; j < 8; ++j) {
    ss = fma(v[j], v[j], ss);
    v[j] *= float(IN0_VLANE(wraw, j));
  }
#endif
  float m = 0.0f, sum = 0.0f;
  [[unroll]] for (uint j = 0; j < 8; ++j) {
    m = max(m, abs(v[j]));
    sum += v[j];
  }
  [[unroll]] for (uint o = 1; o < 4; o *= 2) {
    m = max(m, subgroupShuffleXor(m, o));
    sum += subgroupShuffleXor(sum, o);
  }
  float to_h = m > 0.0f ? 127.0f / m : 0.0f;
  // h and l of the even values, then of the odd ones, as vectors; packSnorm4x8(c) is
  // round(127 c) a byte, so h / 127 gives h back and 2 (a - h) gives l.
  vec4 a_even = vec4(v[0], v[2], v[4], v[6]) * to_h;
  vec4 a_odd = vec4(v[1], v[3], v[5], v[7]) * to_h;
  vec4 h_even = roundEven(a_even), h_odd = roundEven(a_odd);
  uvec4 packed = uvec4(packSnorm4x8(h_even / 127.0f), packSnorm4x8(h_odd / 127.0f),
                       packSnorm4x8(2.0f * (a_even - h_even)),
                       packSnorm4x8(2.0f * (a_odd - h_odd)));
  uint p = u / 4u, sub = u % 4u;
  uint half_at = 2u * (sub % 2u);
  x8s[sub / 2u][p][half_at] = packed.x;
  x8s[sub / 2u][p][half_at + 1u] = packed.y;
  x8s[2u + sub / 2u][p][half_at] = packed.z;
  x8s[2u + sub / 2u][p][half_at + 1u] = packed.w;
  if (sub == 0u) {
    x8f[p] = vec2(m * (1.0f / 32258.0f), sum);
  }
}

// x's group u of 8 values (and the norm weight's with PRENORM), as stage_x8_group takes them.
void load_x8_group(IDX_T row, uint u, out IN0_VT raw, out IN0_VT wraw) {
  raw = xv[uint(row / VEC + u)];
#if PRENORM
  wraw = norm_wv[uint(pc.norm_w_offset / VEC + u)];
#else
  wraw = raw;
#endif
}

// The workgroup's sum of each invocation's ss (PRENORM), through one shared slot a subgroup:
// every invocation calls it (it has a barrier). Without PRENORM, ss as given.
float workgroup_ss(float ss) {
#if PRENORM
  for (uint o = gl_SubgroupSize / 2; o > 0; o /= 2) {
    ss += subgroupShuffleXor(ss, o);
  }
  if (gl_SubgroupInvocationID == 0u) {
    x8ss[gl_SubgroupID] = ss;
  }
  barrier();
  ss = 0.0f;
  for (uint i = 0; i < gl_NumSubgroups; ++i) {
    ss += x8ss[i];
  }
#endif
  return ss;
}

// Writes row `row` of x to x8s / x8f, each invocation 8 values at a time, and returns with
// the workgroup's barrier passed. PRENORM: the row's sum of squares (of x as stored).
float stage_x8(IDX_T row) {
  uint t = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
  float ss = 0.0f;
  for (uint u = t; u < uint(pc.k) / 8u; u += WGS) {
    IN0_VT raw, wraw;
    load_x8_group(row, u, raw, wraw);
    stage_x8_group(u, raw, wraw, ss);
  }
#if PRENORM
  return workgroup_ss(ss);
#else
  barrier();
  return ss;
#endif
}

// sum_j x_j q_j of pack p's 32 values of one column, in units of the pack's scale: 254 times
// the h parts' dot products plus the l parts' (at most 254 * 32 * 15 * 127 + 32 * 15 * 127,
// exact in int32 and in its conversion to f32).
int pack_dot_x8(uint words[BITS], uvec4 h0, uvec4 h1, uvec4 l0, uvec4 l1) {
  const uint m = 0x0F0F0F0Fu;
  uint e0 = words[0] & m, o0 = (words[0] >> 4) & m, e1 = words[1] & m, o1 = (words[1] >> 4) & m;
  uint e2 = words[2] & m, o2 = (words[2] >> 4) & m, e3 = words[3] & m, o3 = (words[3] >> 4) & m;
  int dh = sdot4x8(h0.x, e0, 0) + sdot4x8(h0.y, o0, 0) + sdot4x8(h0.z, e1, 0) +
           sdot4x8(h0.w, o1, 0) + sdot4x8(h1.x, e2, 0) + sdot4x8(h1.y, o2, 0) +
           sdot4x8(h1.z, e3, 0) + sdot4x8(h1.w, o3, 0);
  int dl = sdot4x8(l0.x, e0, 0) + sdot4x8(l0.y, o0, 0) + sdot4x8(l0.z, e1, 0) +
           sdot4x8(l0.w, o1, 0) + sdot4x8(l1.x, e2, 0) + sdot4x8(l1.y, o2, 0) +
           sdot4x8(l1.z, e3, 0) + sdot4x8(l1.w, o3, 0);
  return 254 * dh + dl;
}

// One step of the X8 sums: pack p of each of the NC columns, against x's staged pack p.
void x8_step(uint words[NC][BITS], IDX_T p, IDX_T cols[NC], IDX_T w_batch, IDX_T groups_per_row,
             inout float acc[MR][NC]) {
  // Scales and biases are dense, one per GS values of each packed row.
  float s[NC], b[NC];
  X8_UNROLL for (uint c = 0; c < NC; ++c) {
    IDX_T g = w_batch * 32 / BITS / GS + cols[c] * groups_per_row + p * 32 / GS;
    s[c] = float(IN0_LOAD(scales[uint(pc.extra0 + g)]));
    b[c] = float(IN0_LOAD(qbiases[uint(pc.extra1 + g)]));
  }
  uvec4 h0 = x8s[0][uint(p)], h1 = x8s[1][uint(p)];
  uvec4 l0 = x8s[2][uint(p)], l1 = x8s[3][uint(p)];
  vec2 xf = x8f[uint(p)];
  [[unroll]] for (uint c = 0; c < NC; ++c) {
    float qdot = xf.x * float(pack_dot_x8(words[c], h0, h1, l0, l1));
    acc[0][c] = fma(s[c], qdot, fma(b[c], xf.y, acc[0][c]));
  }
}

#endif
