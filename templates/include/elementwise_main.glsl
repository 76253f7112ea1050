// The elementwise entry point. The including family template defines OP, taking one
// compute value per input (NUM_IN of them) and returning OUT_CT.
#ifndef MLX_ELEMENTWISE_MAIN_GLSL
#define MLX_ELEMENTWISE_MAIN_GLSL

// OP over the first NUM_IN arguments; the preprocessor drops the rest unexpanded, so they
// may name inputs the kernel does not have.
#if NUM_IN == 1
#define MLX_APPLY(x0, x1, x2) OP(x0)
#elif NUM_IN == 2
#define MLX_APPLY(x0, x1, x2) OP(x0, x1)
#else
#define MLX_APPLY(x0, x1, x2) OP(x0, x1, x2)
#endif

// The result for output element i.
OUT_CT element_value(IDX_T i) {
  uint loc[NUM_IN];
  locate(i, loc);
  return MLX_APPLY(IN0_LOAD(in0[loc[0]]), IN1_LOAD(in1[loc[1]]), IN2_LOAD(in2[loc[2]]));
}

// Elements (vectors on the vector path) per invocation never exceed these
// (codegen/elementwise.cpp picks EPT).
#define MLX_MAX_EPT 16
#define MLX_MAX_VEPT 8

// Both paths compute all of an invocation's elements before storing any. The output is
// not `restrict` (a donated input may share its buffer), so a load cannot be moved above
// an earlier store; with the two phases apart, all loads are in flight at once. Each
// invocation reads its own elements before writing them, so in-place updates stay right.
void main() {
  // Large launches are split over y and z (elementwise_launch); rebuild the linear group.
  uint group = gl_WorkGroupID.x +
               gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
  IDX_UT first = IDX_UT(group) * IDX_UT(gl_WorkGroupSize.x * EPT) + IDX_UT(gl_LocalInvocationID.x);
#if VEC > 1
  // Step u covers elements u * VEC .. u * VEC + VEC - 1; the last, partial step (size not
  // a multiple of VEC) goes element by element.
  IDX_UT full = IDX_UT(pc.size) / IDX_UT(VEC);
  OUT_VT packed[MLX_MAX_VEPT];
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u < full) {
      uint loc[NUM_IN];
      locate(IDX_T(u * IDX_UT(VEC)), loc);
      IN0_CT x0[VEC];
      vload0(loc[0], x0);
#if NUM_IN >= 2
      IN1_CT x1[VEC];
      vload1(loc[1], x1);
#endif
#if NUM_IN >= 3
      IN2_CT x2[VEC];
      vload2(loc[2], x2);
#endif
      OUT_VT w = OUT_VT(0);
#ifdef OUT_PACK2
      for (uint j = 0u; j < VEC; j += 2u) {
        w[j / 2u] = OUT_PACK2(MLX_APPLY(x0[j], x1[j], x2[j]),
                              MLX_APPLY(x0[j + 1u], x1[j + 1u], x2[j + 1u]));
      }
#else
      for (uint j = 0u; j < VEC; ++j) {
        OUT_VSET(w, j, MLX_APPLY(x0[j], x1[j], x2[j]));
      }
#endif
      packed[e] = w;
    }
  }
  IDX_UT out_base = IDX_UT(pc.out_offset) / IDX_UT(VEC);
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u < full) {
      outvv[uint(out_base + u)] = packed[e];
    } else {
      if (u == full) {
        for (IDX_UT i = u * IDX_UT(VEC); i < IDX_UT(pc.size); ++i) {
          outv[uint(pc.out_offset + IDX_T(i))] = OUT_STORE(element_value(IDX_T(i)));
        }
      }
      return;
    }
  }
#else
  OUT_CT vals[MLX_MAX_EPT];
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u < IDX_UT(pc.size)) {
      vals[e] = element_value(IDX_T(u));
    }
  }
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u >= IDX_UT(pc.size)) {
      return;
    }
    outv[uint(pc.out_offset + IDX_T(u))] = OUT_STORE(vals[e]);
  }
#endif
}

#endif
