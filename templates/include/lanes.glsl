// Lanes of packed vectors: the vector paths read 8/16/32-bit elements as 32-bit words
// (uint, uvec2, uvec4) so one load moves up to 16 bytes whatever the dtype.
#ifndef MLX_LANES_GLSL
#define MLX_LANES_GLSL

// Lane j (zero-extended bits) of a vector of `bits`-wide lanes packed into 32-bit words,
// and the vector with lane j replaced.
uint mlx_lane(uint w, uint j, uint bits) {
  return bitfieldExtract(w, int(j * bits), int(bits));
}
uint mlx_set_lane(uint w, uint j, uint bits, uint v) {
  return bitfieldInsert(w, v, int(j * bits), int(bits));
}
// The same for vectors of 32-bit words (one overload pair per vector type).
#define MLX_DEFINE_LANES(V)                                                      \
  uint mlx_lane(V w, uint j, uint bits) {                                        \
    uint b = j * bits;                                                           \
    return bitfieldExtract(w[b >> 5u], int(b & 31u), int(bits));                 \
  }                                                                              \
  V mlx_set_lane(V w, uint j, uint bits, uint v) {                               \
    uint b = j * bits;                                                           \
    w[b >> 5u] = bitfieldInsert(w[b >> 5u], v, int(b & 31u), int(bits));        \
    return w;                                                                    \
  }
MLX_DEFINE_LANES(uvec2)
MLX_DEFINE_LANES(uvec4)

// 16-bit lanes take fewer instructions without the generic bit-field calls: lane j's bits
// moved to the top half of a word (a bfloat16's f32 bits: one shift or one mask), and a
// lane replaced by masks (one 3-input logic op on NVIDIA for the low half). On an H100
// rms_norm bf16 4096^2 went from 33.4 to 31.8 us, as the per-element work is a visible
// share of bf16 kernels' time.
uint mlx_lane16_hi(uint w, uint j) {
  return (j & 1u) == 0u ? w << 16 : w & 0xffff0000u;
}
uint mlx_set_lane16(uint w, uint j, uint v) {
  return (j & 1u) == 0u ? (w & 0xffff0000u) | (v & 0xffffu) : (w & 0xffffu) | (v << 16);
}
#define MLX_DEFINE_LANES16(V)                                  \
  uint mlx_lane16_hi(V w, uint j) {                            \
    return mlx_lane16_hi(w[j >> 1u], j);                       \
  }                                                            \
  V mlx_set_lane16(V w, uint j, uint v) {                      \
    w[j >> 1u] = mlx_set_lane16(w[j >> 1u], j, v);             \
    return w;                                                  \
  }
MLX_DEFINE_LANES16(uvec2)
MLX_DEFINE_LANES16(uvec4)

#endif
