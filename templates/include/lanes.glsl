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

#endif
