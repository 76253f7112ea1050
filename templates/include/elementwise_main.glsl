// The elementwise entry point. The including family template defines
// `OUT_CT element_value(uint loc[NUM_IN])`, the result for the given input locations.
#ifndef MLX_ELEMENTWISE_MAIN_GLSL
#define MLX_ELEMENTWISE_MAIN_GLSL

void main() {
  // Large launches are split over y and z (elementwise_launch); rebuild the linear group.
  uint group = gl_WorkGroupID.x +
               gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
  IDX_UT first = IDX_UT(group) * IDX_UT(gl_WorkGroupSize.x * EPT) + IDX_UT(gl_LocalInvocationID.x);
  for (uint e = 0u; e < EPT; ++e) {
    IDX_UT u = first + IDX_UT(e * gl_WorkGroupSize.x);
    if (u >= IDX_UT(pc.size)) {
      return;
    }
    IDX_T i = IDX_T(u);
    uint loc[NUM_IN];
    locate(i, loc);
    outv[uint(pc.out_offset + i)] = OUT_STORE(element_value(loc));
  }
}

#endif
