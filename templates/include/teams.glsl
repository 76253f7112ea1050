// Teams of TPR invocations that each own one output column (gemv.glsl's dot shape and
// qmv.glsl): where an invocation sits, and the sum of a value over its team's lanes.
// Expects TPR (a power of two), MR or TEAM_VALUES (values summed per lane), SUBGROUP (1: the team sums
// with subgroup shuffles; TPR is then at most the subgroup size) and WGS.
#ifndef MLX_TEAMS_GLSL
#define MLX_TEAMS_GLSL

#ifndef TEAM_VALUES
#define TEAM_VALUES MR
#endif
shared float team_red[SUBGROUP == 1 ? 1 : WGS * TEAM_VALUES];

// The team within the workgroup and the lane within the team. With subgroups, teams
// follow subgroup IDs, so a team's lanes are always one shuffle cluster.
uint team_index() {
#if SUBGROUP
  return gl_SubgroupID * (gl_SubgroupSize / TPR) + gl_SubgroupInvocationID / TPR;
#else
  return gl_LocalInvocationID.x / TPR;
#endif
}
uint team_lane() {
#if SUBGROUP
  return gl_SubgroupInvocationID % TPR;
#else
  return gl_LocalInvocationID.x % TPR;
#endif
}

// The sum of v over the team's lanes, for value `row` (< TEAM_VALUES) of each lane. Every
// invocation of the workgroup must call it (the shared-memory tree has barriers).
float team_sum(float v, uint row) {
#if SUBGROUP
  for (uint o = TPR / 2; o > 0; o /= 2) {
    v += subgroupShuffleXor(v, o);
  }
  return v;
#else
  uint lane = team_lane();
  uint team_base = gl_LocalInvocationID.x - lane;
  uint slot = row * WGS + team_base + lane;
  team_red[slot] = v;
  barrier();
  for (uint o = TPR / 2; o > 0; o /= 2) {
    if (lane < o) {
      team_red[slot] += team_red[slot + o];
    }
    barrier();
  }
  return team_red[row * WGS + team_base];
#endif
}

#endif
