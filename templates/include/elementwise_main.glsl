// The elementwise entry point. The including family template defines
// `OUT_CT element_value(uint loc[NUM_IN])`, the result for the given input locations.
#ifndef MLX_ELEMENTWISE_MAIN_GLSL
#define MLX_ELEMENTWISE_MAIN_GLSL

// Elements per invocation never exceed this (codegen/elementwise.cpp picks 2..16).
#define MLX_MAX_EPT 16

void main() {
  // Large launches are split over y and z (elementwise_launch); rebuild the linear group.
  uint group = gl_WorkGroupID.x +
               gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
  IDX_UT first = IDX_UT(group) * IDX_UT(gl_WorkGroupSize.x * EPT) + IDX_UT(gl_LocalInvocationID.x);
  // Compute all of an invocation's elements before storing any. The output is not
  // `restrict` (a donated input may share its buffer), so a load cannot be moved above an
  // earlier store; with the two phases apart, all EPT loads are in flight at once. Each
  // invocation reads its own elements before writing them, so in-place updates stay right.
  OUT_CT vals[MLX_MAX_EPT];
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u < IDX_UT(pc.size)) {
      uint loc[NUM_IN];
      locate(IDX_T(u), loc);
      vals[e] = element_value(loc);
    }
  }
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u >= IDX_UT(pc.size)) {
      return;
    }
    outv[uint(pc.out_offset + IDX_T(u))] = OUT_STORE(vals[e]);
  }
}

#endif
