// Weights brought into the device's L2 cache for the product that runs after this kernel
// (PREFETCH 1; docs/matmul.md "Weights brought into L2 by the kernel before"). A decode
// step's products are each one DRAM round trip plus a launch; a product whose weights are
// already in L2 starts its arithmetic sooner. The launch carries extra workgroups, after
// its own, that touch one word of every 32-byte sector of up to three regions (the next
// product's packed weights, scales and biases) and write nothing. They run beside this
// kernel's workgroups, so they need no launch and no barrier of their own (a separate
// prefetch dispatch cost more than it saved, docs/performance.md).
//
// The including template binds the regions at PF_BINDING .. PF_BINDING + 2 and declares in
// its push constants pf_groups (its own workgroups: prefetch workgroups come after them),
// pf_off0..2 (each region's first word) and pf_sectors0..2 (its length in 32-byte sectors).
#ifndef MLX_PREFETCH_GLSL
#define MLX_PREFETCH_GLSL

#ifndef PF_LOADS
#define PF_LOADS 4  // sectors per invocation, all loads in flight at once
#endif

layout(std430, set = 0, binding = PF_BINDING) readonly buffer Pf0 {
  uint pf0[];
};
layout(std430, set = 0, binding = PF_BINDING + 1) readonly buffer Pf1 {
  uint pf1[];
};
layout(std430, set = 0, binding = PF_BINDING + 2) readonly buffer Pf2 {
  uint pf2[];
};

// Whether this workgroup is one of the prefetch workgroups.
bool prefetch_workgroup() {
  return gl_WorkGroupID.x >= uint(pc.pf_groups);
}

// Touches this invocation's sectors; returns the XOR of the words read, which the caller
// must use (a store it never takes), else the compiler drops the loads. Adjacent
// invocations touch adjacent sectors, so a subgroup reads one contiguous span.
uint prefetch_regions() {
  uint lanes = (gl_NumWorkGroups.x - uint(pc.pf_groups)) * gl_WorkGroupSize.x;
  uint first = (gl_WorkGroupID.x - uint(pc.pf_groups)) * gl_WorkGroupSize.x +
               gl_LocalInvocationID.x;
  uint s0 = uint(pc.pf_sectors0);
  uint s01 = s0 + uint(pc.pf_sectors1);
  uint total = s01 + uint(pc.pf_sectors2);
  uint seen = 0u;
  for (uint i = 0u; i < PF_LOADS; ++i) {
    uint s = first + i * lanes;
    if (s < s0) {
      seen ^= pf0[uint(pc.pf_off0) + 8u * s];
    } else if (s < s01) {
      seen ^= pf1[uint(pc.pf_off1) + 8u * (s - s0)];
    } else if (s < total) {
      seen ^= pf2[uint(pc.pf_off2) + 8u * (s - s01)];
    }
  }
  return seen;
}

#endif
