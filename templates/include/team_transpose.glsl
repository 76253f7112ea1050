// Many sums over one team at once (the decode attention's scores: RB rows x KPS keys a
// step). Each lane holds TEAM_VALUES partial values; a butterfly per value would cost
// TEAM_VALUES * log2(TPR) shuffles and leave every lane with every sum. Here each stage
// keeps half of a lane's values and sends the other half to its partner, so the team spends
// TEAM_VALUES - 1 shuffles (31 instead of 160 for 4 rows x 8 keys on 32 lanes), plus one
// butterfly per stage left once a lane holds a single value (fewer values than lanes), and
// each lane ends with TT_E whole sums: the values from transposed_first(lane) on.
// Expects TPR and TEAM_VALUES (powers of two) and subgroup shuffles, the team's lanes one
// shuffle cluster (teams.glsl).
#ifndef MLX_TEAM_TRANSPOSE_GLSL
#define MLX_TEAM_TRANSPOSE_GLSL

#define TT_E (TEAM_VALUES > TPR ? TEAM_VALUES / TPR : 1)  // sums a lane ends with
#define TT_R (TPR > TEAM_VALUES ? TPR / TEAM_VALUES : 1)  // lanes that end with the same sums

// The index of the first value whose sum a lane ends with (it holds TT_E in a row).
uint transposed_first(uint lane) {
  return (lane / TT_R) * TT_E;
}

// Stage o halves the TEAM_VALUES * 2o / TPR values a lane holds; once one is left, a stage
// is a plain butterfly. The stages are written out and chosen by the preprocessor, so that
// every index into v is a constant once the short loops unroll, and no loop is empty. (A
// loop over a register array left rolled puts the kernel's arrays in local memory on
// NVIDIA: docs/attention.md.)
#define TT_HALVE(o)                                                         \
  {                                                                         \
    const uint h = (TEAM_VALUES * (o)) / TPR;                               \
    bool upper = (lane & (o)) != 0u;                                        \
    [[unroll]] for (uint i = 0; i < h; ++i) {                               \
      float send = upper ? v[i] : v[i + h];                                 \
      v[i] = (upper ? v[i + h] : v[i]) + subgroupShuffleXor(send, (o));     \
    }                                                                       \
  }
#define TT_BUTTERFLY(o) v[0] += subgroupShuffleXor(v[0], (o));

// v[0 .. TT_E) become the team sums of values transposed_first(lane) + e: a lane whose bit
// o is set keeps the upper half at stage o, so that bit adds o * TT_E / TT_R to the index.
void team_sum_transposed(inout float v[TEAM_VALUES], uint lane) {
#if TPR > 16 && TEAM_VALUES * 16 >= TPR
  TT_HALVE(16u)
#elif TPR > 16
  TT_BUTTERFLY(16u)
#endif
#if TPR > 8 && TEAM_VALUES * 8 >= TPR
  TT_HALVE(8u)
#elif TPR > 8
  TT_BUTTERFLY(8u)
#endif
#if TPR > 4 && TEAM_VALUES * 4 >= TPR
  TT_HALVE(4u)
#elif TPR > 4
  TT_BUTTERFLY(4u)
#endif
#if TPR > 2 && TEAM_VALUES * 2 >= TPR
  TT_HALVE(2u)
#elif TPR > 2
  TT_BUTTERFLY(2u)
#endif
#if TPR > 1 && TEAM_VALUES >= TPR
  TT_HALVE(1u)
#elif TPR > 1
  TT_BUTTERFLY(1u)
#endif
}

#endif
