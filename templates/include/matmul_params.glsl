// The push constants of the matrix-product templates (gemm.glsl, gemv.glsl, qmv.glsl):
// codegen/matmul.cpp (codegen/qmv.cpp for qmv) packs exactly these fields, each IDX_T.
// A's and B's element 0 at a_offset / b_offset, leading strides lda / ldb, and the batch
// index z split into (z / nb1, z % nb1): the two collapsed batch dims, with a stride pair
// per operand (0: a broadcast operand). extra0 and extra1 mean what each template says.
#ifndef MLX_MATMUL_PARAMS_GLSL
#define MLX_MATMUL_PARAMS_GLSL

layout(push_constant) uniform Params {
  IDX_T m;
  IDX_T n;
  IDX_T k;
  IDX_T a_offset;
  IDX_T b_offset;
  IDX_T out_offset;
  IDX_T lda;
  IDX_T ldb;
  IDX_T nb1;
  IDX_T a_bs0;
  IDX_T a_bs1;
  IDX_T b_bs0;
  IDX_T b_bs1;
  IDX_T extra0;
  IDX_T extra1;
#if defined(PRENORM) && PRENORM
  IDX_T norm_w_offset;  // qmv.glsl's absorbed rms_norm: its weight's element 0
  IDX_T eps_bits;       // and its eps as f32 bits
#endif
#if defined(RESIDUAL) && RESIDUAL
  IDX_T residual_offset;  // qmv.glsl's residual: element 0 of the array added to the output
#endif
#if defined(PREFETCH) && PREFETCH
  // qmv.glsl's prefetch workgroups (include/prefetch.glsl): its own workgroup count, then
  // three regions of the next product's weights, first word and 32-byte sectors each.
  IDX_T pf_groups;
  IDX_T pf_off0;
  IDX_T pf_off1;
  IDX_T pf_off2;
  IDX_T pf_sectors0;
  IDX_T pf_sectors1;
  IDX_T pf_sectors2;
#endif
}
pc;

#endif
