// The rotation angle's sine and cosine, shared by rope.glsl and sdpa.glsl's decode step so
// that both rotate a row to the same bits.
#ifndef MLX_ROPE_ANGLE_GLSL
#define MLX_ROPE_ANGLE_GLSL

// sin and cos of theta after reducing it to [-pi, pi] in two steps (2 pi = HI + LO, HI
// with few bits so k * HI is exact): GPU sin/cos lose accuracy for large arguments, and
// positions reach 10^5.
void sincos_reduced(float theta, out float s, out float c) {
  const float HI = 6.28125;
  const float LO = 1.9353071795864769e-3;
  float k = round(theta * 0.15915494309189535);
  precise float r = fma(-k, HI, theta);
  r = fma(-k, LO, r);
  s = sin(r);
  c = cos(r);
}

// Pair k's inverse frequency from coef = log2(base) / (dims / 2): base^(-k / (dims / 2)).
float rope_inv_freq(float k, float coef) {
  return exp2(-k * coef);
}

#endif
