// Integer op helpers for the op's compute type OP_T (int, uint, int64_t or uint64_t; bool is
// uint holding 0/1), with MLX's semantics where C++ and SPIR-V leave things undefined:
// division by zero gives 0, INT_MIN / -1 wraps, floor division rounds toward -inf and the
// remainder takes the divisor's sign (Python), shifts out of range give 0 (or -1 for a
// negative value shifted right), arithmetic wraps. 8/16-bit types compute in 32 bits and
// are truncated on store, which gives the same wrapped results.
// OP_SIGNED says whether OP_T is signed; OP_BITS is the width of the dtype.
// Same GLSL/C++ common subset as math.glsl.
#ifndef MLX_INT_OPS_GLSL
#define MLX_INT_OPS_GLSL

OP_T op_negative(OP_T a) {
  return OP_T(0) - a;
}

OP_T op_abs(OP_T a) {
#if OP_SIGNED
  return a < OP_T(0) ? OP_T(0) - a : a;
#else
  return a;
#endif
}

OP_T op_sign(OP_T a) {
#if OP_SIGNED
  return a > OP_T(0) ? OP_T(1) : (a < OP_T(0) ? OP_T(-1) : OP_T(0));
#else
  return a != OP_T(0) ? OP_T(1) : OP_T(0);
#endif
}

OP_T op_square(OP_T a) {
  return a * a;
}

OP_T op_maximum(OP_T a, OP_T b) {
  return a < b ? b : a;
}

OP_T op_minimum(OP_T a, OP_T b) {
  return b < a ? b : a;
}

OP_T op_floor_divide(OP_T a, OP_T b) {
  if (b == OP_T(0)) {
    return OP_T(0);
  }
#if OP_SIGNED
  if (b == OP_T(-1)) {
    return OP_T(0) - a; // INT_MIN / -1 wraps to INT_MIN; the division itself is undefined
  }
  OP_T q = a / b;
  if (q * b != a && ((a < OP_T(0)) != (b < OP_T(0)))) {
    q -= OP_T(1);
  }
  return q;
#else
  return a / b;
#endif
}

OP_T op_remainder(OP_T a, OP_T b) {
  if (b == OP_T(0)) {
    return OP_T(0);
  }
#if OP_SIGNED
  if (b == OP_T(-1)) {
    return OP_T(0);
  }
  OP_T r = a - (a / b) * b; // truncated remainder (GLSL's % is undefined for negatives)
  if (r != OP_T(0) && ((r < OP_T(0)) != (b < OP_T(0)))) {
    r += b;
  }
  return r;
#else
  return a - (a / b) * b;
#endif
}

// Exponentiation by squaring with wrapping; a negative exponent gives 0 except for the bases
// 1 and -1, whose powers stay integers.
OP_T op_power(OP_T a, OP_T b) {
#if OP_SIGNED
  if (b < OP_T(0)) {
    if (a == OP_T(1)) {
      return OP_T(1);
    }
    if (a == OP_T(-1)) {
      return (b & OP_T(1)) != OP_T(0) ? OP_T(-1) : OP_T(1);
    }
    return OP_T(0);
  }
#endif
  OP_T result = OP_T(1);
  OP_T base = a;
  OP_T e = b;
  while (e != OP_T(0)) {
    if ((e & OP_T(1)) != OP_T(0)) {
      result *= base;
    }
    e = e >> 1;
    base *= base;
  }
  return result;
}

OP_T op_left_shift(OP_T a, OP_T b) {
#if OP_SIGNED
  if (b < OP_T(0)) {
    return OP_T(0);
  }
#endif
  if (b >= OP_T(OP_BITS)) {
    return OP_T(0);
  }
  return a << b;
}

OP_T op_right_shift(OP_T a, OP_T b) {
#if OP_SIGNED
  if (b < OP_T(0) || b >= OP_T(OP_BITS)) {
    return a < OP_T(0) ? OP_T(-1) : OP_T(0);
  }
#else
  if (b >= OP_T(OP_BITS)) {
    return OP_T(0);
  }
#endif
  return a >> b;
}

#endif
