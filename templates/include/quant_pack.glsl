// One value of a pack of MLX's packed format (docs/quantization.md): a pack is 32
// consecutive values of a row of W, BITS words inside one group. Shared by the qmv family's
// kernels (qmv.glsl, qmv_coop.glsl). The including template defines BITS and
// MASK ((1u << BITS) - 1u).
#ifndef MLX_QUANT_PACK_GLSL
#define MLX_QUANT_PACK_GLSL

// Value j of a pack (a compile-time j after unrolling: the shifts are constants).
uint pack_value(uint words[BITS], uint j) {
#if BITS == 2 || BITS == 4
  // Split into bytes first: value k of a word is byte k / R of (word >> (k % R) * BITS)
  // masked to BITS per byte, R = 8 / BITS values a byte. The masks are shared by the
  // word's values, and a byte converts to float with the byte chosen in the conversion.
  const uint R = 8u / BITS;
  uint word = words[j * BITS / 32u];
  uint k = j % (32u / BITS);
  uint t = (word >> ((k % R) * BITS)) & (MASK * 0x01010101u);
  return (t >> (8u * (k / R))) & 0xFFu;
#else
  uint bit = j * BITS;
  uint w = bit >> 5;
  uint sh = bit & 31u;
  uint v = words[w] >> sh;
#if (32 % BITS) != 0
  if (sh + BITS > 32u) {
    v |= words[w + 1] << (32u - sh);
  }
#endif
  return v & MASK;
#endif
}

#if BITS == 2 || BITS == 4 || BITS == 8
// Value j of a pack times 2^(BITS * pack_position(j)), exact: the value masked where it
// lies in its word's 16-bit half (the high half shifted down once), so one AND feeds a
// full-rate integer-to-float conversion. Splitting into bytes let NVIDIA's compiler convert
// bytes 0 and 3 with I2F.U8, which issues at 16 values a clock per multiprocessor on an
// H100/H200 (a quarter of I2FP.F32.U32's rate): the single-row product was bound by it.
// The caller sums each position apart and scales the sums once (pack_position_scale).
#define PACK_POSITIONS (16u / BITS)
uint pack_position(uint j) {
  return j % PACK_POSITIONS;
}
float pack_position_scale(uint p) {
  return uintBitsToFloat((127u - p * BITS) << 23);  // 2^(-BITS * p), exact
}
float pack_value_scaled(uint words[BITS], uint j) {
  uint word = words[j * BITS / 32u];
  uint k = j % (32u / BITS);
  uint src = k < PACK_POSITIONS ? word : word >> 16;
  return float(src & (MASK << (pack_position(j) * BITS)));
}
#endif

#endif
