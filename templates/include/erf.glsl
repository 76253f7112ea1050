// erf and erfinv in f32 (GLSL has neither). Coefficients are minimax fits made by
// codegen/tools/fit_erf.cpp; measured in tests/codegen: erf within 3 ulp, erfinv within 4 ulp
// (with C++'s exp; erf's tail uses the device's exp, bounded on the GPU by
// tests/gpu_diff/test_unary.cpp).
// Same GLSL/C++ common subset as math.glsl, which must come first (include/ops.glsl).
#ifndef MLX_ERF_GLSL
#define MLX_ERF_GLSL

#if MLX_MATH_ERF
float m_erf(float x) {
  if (m_isnan(x)) {
    return x;
  }
  float a = abs(x);
  if (a <= 1.0f) {
    // erf(x) = x P(x^2)
    float s = x * x;
    float p = 7.853861462e-05f;
    p = p * s - 8.010193706e-04f;
    p = p * s + 5.188327748e-03f;
    p = p * s - 2.685381286e-02f;
    p = p * s + 1.128358543e-01f;
    p = p * s - 3.761262596e-01f;
    p = p * s + 1.128379107e+00f;
    return x * p;
  }
  if (a >= 4.0f) { // erfc(4) = 1.5e-8 is below half an ulp of 1
    return m_copysign(1.0f, x);
  }
  // erfc(a) = exp(-a^2) Q(1/a), through the hardware exp: erf = 1 - erfc with erfc <= 0.16
  // here, so exp's relative error reaches erf attenuated about 6x (a few ulp of exp cost
  // erf well under one). The exact m_exp made this tail about 80 instruction slots of both
  // branches (a subgroup with both kinds of argument runs both): exact GELU on an H200
  // spent ~800 of its 1433 us in m_erf.
  float u = 1.0f / a;
  float q = -3.674543276e-02f;
  q = q * u + 2.555913627e-01f;
  q = q * u - 7.859734297e-01f;
  q = q * u + 1.385244608e+00f;
  q = q * u - 1.484954596e+00f;
  q = q * u + 8.730996251e-01f;
  q = q * u - 5.721710995e-02f;
  q = q * u - 2.888612151e-01f;
  q = q * u + 3.730984870e-03f;
  q = q * u + 5.636389256e-01f;
  q = q * u + 2.990415123e-05f;
  return m_copysign(1.0f - exp(-a * a) * q, x);
}

#endif // MLX_MATH_ERF

#if MLX_MATH_ERFINV
float m_erfinv(float x) {
  float a = abs(x);
  if (m_isnan(x) || a > 1.0f) {
    return m_nan();
  }
  if (a == 1.0f) {
    return m_copysign(m_inf(), x);
  }
  // w = -log(1 - x^2), computed without cancellation at both ends.
  float w = a < 0.5f ? -m_log1p(-x * x) : -m_log((1.0f - a) * (1.0f + a));
  float p;
  if (w < 5.0f) {
    float t = w - 2.5f;
    p = -8.791015915e-09f;
    p = p * t + 2.323262294e-08f;
    p = p * t + 4.661700927e-07f;
    p = p * t - 3.462704399e-06f;
    p = p * t - 4.963345418e-06f;
    p = p * t + 2.183444449e-04f;
    p = p * t - 1.252741902e-03f;
    p = p * t - 4.177386872e-03f;
    p = p * t + 2.466402799e-01f;
    p = p * t + 1.501409411e+00f;
  } else {
    float t = sqrt(w) - 3.0f;
    p = 9.850016068e-05f;
    p = p * t - 2.910190087e-04f;
    p = p * t - 3.300417302e-05f;
    p = p * t + 1.461594249e-03f;
    p = p * t - 3.609467763e-03f;
    p = p * t + 5.696172826e-03f;
    p = p * t - 7.634707727e-03f;
    p = p * t + 9.444177151e-03f;
    p = p * t + 1.001674771e+00f;
    p = p * t + 2.832976818e+00f;
  }
  return x * p;
}
#endif // MLX_MATH_ERFINV

#endif
