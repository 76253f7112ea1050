// The merge of a split decode in its own launch (sdpa.glsl SPLIT 2, the vector mode): the
// end of the vector mode's main, included there as statements (as a function called there
// it measured 18.9 against 18.4-18.5 us at KV 8192 on two H200 machines). It reads
// main's t, b, kvh, r0 and rows, the chunk states in the scratch (outp), and writes the
// output (finv); the counters (ctr), merge_here and comb_acc are sdpa.glsl's.
// docs/attention.md, "The merge in the launch".
  // The last workgroup of this row block to get here merges its splits: each workgroup's
  // states are written (and made visible) before it counts itself; the last resets the
  // counter for the next launch, every split having counted.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) {
    uint slot = gl_WorkGroupID.x * gl_NumWorkGroups.y + gl_WorkGroupID.y;
    merge_here = atomicAdd(ctr[slot], 1u) == uint(pc.splits - 1);
    if (merge_here) {
      atomicExchange(ctr[slot], 0u);
    }
  }
  barrier();
  if (!merge_here) {
    return;
  }
  memoryBarrierBuffer();
  // MOPT outputs an invocation (8 teams of TPR lanes), merged MC splits at a time in one
  // memory round trip: each invocation issues the loads of its outputs' states, and the
  // splits' (m, l) of the block's rows go through shared memory (one load each) meanwhile;
  // no load sits under a condition (a split past the last reads the first, weighted 0).
  // One output at a time, MU splits a batch (the merge launch's loop) took 8 us here (H100,
  // KV 8192 in 32 splits), 16 outputs' batches 2 round trips.
  int mrow[MOPT], mh[MOPT], md[MOPT], mbase[MOPT];
  uint mr[MOPT];
  bool mok[MOPT];
  float mm[MOPT], ml[MOPT], mo[MOPT];
  [[unroll]] for (uint k = 0; k < MOPT; ++k) {
    uint e = t + k * WGS;
    mr[k] = min(e / DV, uint(RB - 1));
    int rr = r0 + int(mr[k]);
    mok[k] = e < RB * DV && rr < rows;
    rr = min(rr, rows - 1);
    int g = rr / pc.lq;
    int i = rr - g * pc.lq;
    mh[k] = kvh * pc.groups + g;
    mrow[k] = (b * pc.hkv * pc.groups + mh[k]) * pc.lq + i;
    md[k] = int(e % DV);
    mbase[k] = pc.out_offset + mrow[k] * pc.splits * (DV + 2);
    mm[k] = NEG_INF;
    ml[k] = 0.0f;
    mo[k] = 0.0f;
  }
  for (int s0 = 0; s0 < pc.splits; s0 += MC) {
    float os[MOPT][MC];
    [[unroll]] for (uint k = 0; k < MOPT; ++k) {
      [[unroll]] for (int u = 0; u < MC; ++u) {
        int sp = s0 + u < pc.splits ? s0 + u : 0;
        os[k][u] = outp[uint(mbase[k] + sp * (DV + 2) + 2 + md[k])];
      }
    }
    for (uint e = t; e < RB * MC; e += WGS) {
      uint r = e / MC;
      int sp = s0 + int(e % MC);
      int rr = min(r0 + int(r), rows - 1);
      int g = rr / pc.lq;
      int row = (b * pc.hkv * pc.groups + kvh * pc.groups + g) * pc.lq + (rr - g * pc.lq);
      int at = pc.out_offset + (row * pc.splits + (sp < pc.splits ? sp : 0)) * (DV + 2);
      float m = outp[uint(at)];
      merge_m(e) = sp < pc.splits ? m : NEG_INF;
      merge_l(e) = outp[uint(at + 1)];
    }
    barrier();
    [[unroll]] for (uint k = 0; k < MOPT; ++k) {
      float mc = mm[k];
      [[unroll]] for (int u = 0; u < MC; ++u) {
        mc = max(mc, merge_m(mr[k] * MC + u));
      }
      if (mc != NEG_INF) {  // else no split has seen a key yet
        float c = exp(mm[k] - mc);
        ml[k] *= c;
        mo[k] *= c;
        [[unroll]] for (int u = 0; u < MC; ++u) {
          float w = exp(merge_m(mr[k] * MC + u) - mc);
          ml[k] += merge_l(mr[k] * MC + u) * w;
          mo[k] += os[k][u] * w;
        }
        mm[k] = mc;
      }
    }
    barrier();
  }
  [[unroll]] for (uint k = 0; k < MOPT; ++k) {
    if (mok[k]) {
      finv[uint(pc.fin_offset + mrow[k] * DV + md[k])] = OUT_STORE(finish(mo[k], mm[k], ml[k], mh[k]));
    }
  }
