// eval_gpu of AddMM, QuantizedMatmul, Dequantize and AffineQuantize.
//   AddMM: C copied into the output, then the gemm family with its addmm epilogue.
//   QuantizedMatmul: "qmvc" (transpose=true, 3-6 to 16 rows on cooperative matrices, and up to
//     64 in 16-row launches), "qmv"
//     (transpose=true, M <= 8: a decode step) or "qmm" (the gemm template reading B from
//     the packed format), on dense operands; with 2-d weights every batch row of x folds
//     into M. Past 64 rows the weights are dequantized first and the gemm family
//     multiplies them (qmm_dequant.h).
//   Dequantize / AffineQuantize: the "quant" family, one invocation per 4 chunks of 8 values
//     or per group (record_quant in qmm_dequant.h).
// docs/matmul.md and docs/quantization.md.
#include "codegen/matmul.h"
#include "codegen/quantize.h"
#include "mlx/backend/gpu/eval.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/lookahead.h"
#include "mlx/backend/vulkan/matmul.h"
#include "mlx/backend/vulkan/qmm_dequant.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace codegen = vulkan::codegen;
using vulkan::bind_run;
using vulkan::Buf;
using vulkan::dense_run;

namespace {

// Why the quantization kernels cannot take these operands (each is read dense, so its
// size and its span must fit one binding), or nullptr.
const char* quant_unsupported(const std::vector<array>& operands, const array& float_side) {
  if (const char* why = vulkan::float_kernel_unsupported(float_side)) {
    return why;
  }
  if (!vulkan::copies_fit(operands)) {
    return "an operand wider than one storage binding";
  }
  auto& dev = vulkan::device("quantized");
  for (const auto& a : operands) {
    if (static_cast<int64_t>(a.size()) > vulkan::binding_elems(dev, a.itemsize())) {
      return "an operand wider than one storage binding";
    }
  }
  return nullptr;
}

// Rows up to which a product of one weight matrix runs as 16-row qmvc blocks (QuantizedMatmul
// below): on an H200 blocks beat the qmm tiles up to 64 rows (4-bit [64,14336] x
// [4096,14336]^T 212 -> 169 us f16) and lose at 96 (docs/matmul.md).
constexpr int64_t kQmvcBlockedRows = 64;

// Whether the qmv kernel can apply QuantizedMatmul's absorbed ops itself (a decode-sized
// product of 2-d weights; codegen::qmv_fusion_fits). The geometry's offsets follow the
// operands' alignment as bind_run will see it: read in place, a fresh output.
bool qmv_takes_fusion(const QuantizedMatmul& qmm, const std::vector<array>& inputs,
                      const array& out, const vulkan::Device& dev) {
  const array& x = inputs[0];
  const array& w = inputs[1];
  if (w.ndim() != 2 || !qmm.transpose() || x.shape(-1) == 0 || out.size() == 0) {
    return false;
  }
  codegen::MatmulGeometry g;
  g.k = x.shape(-1);
  g.glu = qmm.glu() != nullptr;
  g.n = g.glu ? 2 * int64_t{out.shape(-1)} : out.shape(-1);
  g.m = static_cast<int64_t>(x.size()) / g.k;
  g.lda = g.k;
  g.b_t = true;
  g.ldb = w.shape(-1);
  g.bits = 4;  // any valid width: the fit does not depend on it
  auto elem_offset = [](const array& a) {
    return a.flags().row_contiguous ? a.offset() / a.itemsize() : 0;
  };
  g.a_offset = elem_offset(x);
  g.prenorm = qmm.norm_eps().has_value();
  if (g.prenorm) {
    g.norm_w_offset = elem_offset(inputs[4]);
  }
  g.residual = qmm.residual();
  return codegen::qmv_fusion_fits(static_cast<uint32_t>(8 * out.itemsize()), g, dev.caps());
}

// The next quantized product's weights, scales and biases (lookahead.h) as prefetch
// regions and their bindings, or false when there is nothing to bring in: no next product,
// or an operand whose data is not final in device memory yet (computed later in the tape,
// or written by work still pending: either would need a barrier). A host copy newer than
// the device's gets its upload here instead of at the next product, as any read would.
bool next_weights(const vulkan::Device& dev, const Primitive& self, vulkan::Binding (&bindings)[3],
                  codegen::PrefetchRegion (&regions)[3]) {
  const array* next = vulkan::next_quantized_product(self);
  if (next == nullptr) {
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    const array& a = next->inputs()[1 + i];
    if (!a.has_data() || !a.buffer().ptr() || !a.flags().row_contiguous || a.nbytes() < 32) {
      return false;
    }
    if (!gpu::is_ready(a)) {
      return false;
    }
    auto* alloc = vulkan::allocation(a.buffer());
    int64_t words =
        static_cast<int64_t>(std::min<uint64_t>(a.nbytes(), codegen::kPrefetchBytes) / 4);
    auto b = vulkan::bind_operand(dev, {alloc, static_cast<int64_t>(a.offset()), 4, 0, words - 1},
                                  false);
    bindings[i] = b.binding;
    regions[i] = {b.elem_offset, static_cast<uint64_t>(words) * 4};
  }
  return true;
}

}  // namespace

void AddMM::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& c = inputs[2];
  if (const char* why = vulkan::matmul_unsupported(inputs[0], inputs[1], out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  if (!vulkan::copies_fit({c})) {
    vulkan::cpu_fallback(*this, inputs, out, "an operand wider than one storage binding");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  int stream = this->stream().index;
  // beta == 0 reads no C (BLAS's rule, as the CPU reference): a plain scaled product.
  bool with_c = beta_ != 0.0f;
  if (with_c && out.size() > 0) {
    vulkan::copy_gpu(stream, c, out);
  }
  vulkan::matmul_gpu(stream, inputs[0], inputs[1], out, with_c, alpha_, beta_);
}

void QuantizedMatmul::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& x = inputs[0];
  const array& w = inputs[1];
  if (const char* why = quant_unsupported(inputs, out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("QuantizedMatmul");
  int stream = this->stream().index;
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  int64_t K = x.shape(-1);
  // With glu the product has twice the output's columns.
  int64_t N = glu_ ? 2 * int64_t{out.shape(-1)} : out.shape(-1);
  bool absorbed = norm_eps_ || residual_ || glu_;
  if (absorbed && !qmv_takes_fusion(*this, inputs, out, dev)) {
    // The absorbed ops as their own launches, as they were built.
    auto& enc = vulkan::encoder(stream);
    if (glu_) {
      // The product (with its norm), then the compiled activation of its halves.
      Shape pshape = out.shape();
      pshape.back() *= 2;
      array product(pshape, out.dtype(), nullptr, {});
      QuantizedMatmul(this->stream(), group_size_, bits_, transpose_, norm_eps_)
          .eval_gpu(inputs, product);
      enc.retain(product.data_shared_ptr());
      auto halves = glu_halves(product, this->stream(), true);
      std::vector<array> outs{out};
      glu_->eval_gpu(halves, outs);
      return;
    }
    // The rms_norm, the product, the residual's add.
    std::vector<array> product_inputs(inputs.begin(), inputs.begin() + 4);
    if (norm_eps_) {
      array normed(x.shape(), x.dtype(), nullptr, {});
      fast::RMSNorm(this->stream(), *norm_eps_).eval_gpu({x, inputs[4]}, normed);
      enc.retain(normed.data_shared_ptr());
      product_inputs[0] = normed;
    }
    QuantizedMatmul plain(this->stream(), group_size_, bits_, transpose_);
    if (!residual_) {
      plain.eval_gpu(product_inputs, out);
      return;
    }
    array product(out.shape(), out.dtype(), nullptr, {});
    plain.eval_gpu(product_inputs, product);
    enc.retain(product.data_shared_ptr());
    Binary(this->stream(), BinaryOp::Add).eval_gpu({inputs.back(), product}, out);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  auto& enc = vulkan::encoder(stream);
  Buf y = vulkan::buf_of(out, dtype);
  if (K == 0) {
    auto by = bind_run(dev, y, static_cast<int64_t>(out.size()), true);
    by.binding.range = (static_cast<VkDeviceSize>(out.nbytes()) + 3) / 4 * 4;
    enc.fill(by.binding, 0);
    return;
  }
  Buf xb = dense_run(enc, stream, x, dtype);
  Buf wb = dense_run(enc, stream, w, "u32");
  Buf sb = dense_run(enc, stream, inputs[2], dtype);
  Buf bb = dense_run(enc, stream, inputs[3], dtype);

  codegen::MatmulGeometry g;
  g.k = K;
  g.n = N;
  g.glu = glu_ != nullptr;
  g.lda = K;
  g.b_t = transpose_;
  g.ldb = w.shape(-1);
  g.bits = bits_;
  g.group_size = group_size_;
  if (w.ndim() == 2) {
    // One weight for every batch: the batch rows of x are more rows of M.
    g.m = static_cast<int64_t>(x.size()) / K;
  } else {
    g.m = x.shape(-2);
    g.batches = static_cast<int64_t>(out.size()) / (g.m * N);
    g.nb1 = g.batches;
    g.a_bs1 = g.m * K;
    g.b_bs1 = int64_t{w.shape(-2)} * w.shape(-1);
  }
  auto bx = bind_run(dev, xb, static_cast<int64_t>(x.size()), false);
  auto bw = bind_run(dev, wb, static_cast<int64_t>(w.size()), false);
  auto bs = bind_run(dev, sb, static_cast<int64_t>(inputs[2].size()), false);
  auto bbias = bind_run(dev, bb, static_cast<int64_t>(inputs[3].size()), false);
  auto by = bind_run(dev, y, static_cast<int64_t>(out.size()), true);
  g.a_offset = bx.elem_offset;
  g.b_offset = bw.elem_offset;
  g.scales_offset = bs.elem_offset;
  g.biases_offset = bbias.elem_offset;
  g.out_offset = by.elem_offset;
  vulkan::Binding bindings[7] = {bx.binding, bw.binding, bs.binding, bbias.binding, by.binding};
  size_t n_bindings = 5;
  if (norm_eps_) {
    auto bn = bind_run(dev, dense_run(enc, stream, inputs[4], dtype), K, false);
    g.prenorm = true;
    g.eps = *norm_eps_;
    g.norm_w_offset = bn.elem_offset;
    bindings[n_bindings++] = bn.binding;
  }
  if (residual_) {
    auto br = bind_run(dev, dense_run(enc, stream, inputs.back(), dtype),
                       static_cast<int64_t>(out.size()), false);
    g.residual = true;
    g.residual_offset = br.elem_offset;
    bindings[n_bindings++] = br.binding;
  }
  // A qmv launch also brings the next product's weights into L2 (a decode step's chain of
  // products, lookahead.h).
  vulkan::Binding pf_bindings[3];
  codegen::PrefetchRegion pf_regions[3];
  g.prefetch = codegen::qmv_prefetch_fits(g) &&
               w.nbytes() >= vulkan::prefetch_min_product_bytes() &&
               next_weights(dev, *this, pf_bindings, pf_regions);
  // A few rows on cooperative matrices where the device has them and they win (qmvc), else
  // qmv up to 8 rows, else the gemm template (qmm). MLX_VK_QMV_COOP=on takes qmvc wherever
  // it applies, off never (for measuring).
  static const std::string qmvc_mode = vulkan::env_string("MLX_VK_QMV_COOP", "auto");
  auto record = [&](const codegen::MatmulGeometry& g, bool coop_rows) {
    bool qmv = codegen::qmv_applies(g);
    const char* family = coop_rows ? "qmvc" : qmv ? "qmv" : "qmm";
    const auto& planned = vulkan::memoized(vulkan::matmul_signature(family, dtype, g), [&] {
      if (coop_rows) {
        auto key = codegen::qmvc_key(dtype, g, dev.caps());
        // MLX_VK_QMVC_DEQUANT=convert keeps the conversion path where dq=magic applies (for
        // measuring, docs/matmul.md).
        static const bool convert_only =
            vulkan::env_string("MLX_VK_QMVC_DEQUANT", "auto") == "convert";
        if (convert_only) {
          key.params["dq"] = "convert";
          key.params["rows"] = "16";
          key.params["frag"] = "n16";
        }
        // MLX_VK_QMVC_FRAG=n16 keeps the 16x16x16 fragments where frag=n8 applies (for
        // measuring).
        static const bool n16_only = vulkan::env_string("MLX_VK_QMVC_FRAG", "auto") == "n16";
        if (n16_only) {
          key.params["frag"] = "n16";
        }
        if (const auto* kernel = vulkan::get_kernel_or_drop_coop(key, true)) {
          return vulkan::MemoEntry{kernel, codegen::qmvc_launch(key, kernel->source, g)};
        }
        // The driver could not build cooperative matrices: they are off now, plan again.
      }
      if (qmv) {
        auto key = codegen::qmv_key(dtype, g, dev.caps());
        const auto& kernel = vulkan::kernel_library().get(key);
        return vulkan::MemoEntry{&kernel, codegen::qmv_launch(key, kernel.source, g)};
      }
      auto tile = vulkan::planned_gemm_tile(g, dtype, true);
      auto key = codegen::qmm_key(dtype, g, tile);
      const vulkan::Kernel* kernel = vulkan::get_kernel_or_drop_coop(key, tile.coop);
      if (kernel == nullptr) {
        key = codegen::qmm_key(dtype, g, codegen::gemm_tile(g, dev.caps(), dtype));
        kernel = &vulkan::kernel_library().get(key);
      }
      return vulkan::MemoEntry{kernel, codegen::qmm_launch(key, kernel->source, g)};
    });
    if (g.prefetch && planned.kernel->key.family == "qmv") {
      // qmv_key took pf 1 (g.prefetch is set only where it fits; add_prefetch checks the
      // launch), also where qmvc was asked for and its build failed: the regions' bindings
      // after the product's, their numbers in the launch's last push constants, and the
      // prefetch workgroups after its own.
      std::array<vulkan::Binding, vulkan::CommandEncoder::kMaxBindings> all;
      std::copy(bindings, bindings + n_bindings, all.begin());
      std::copy(std::begin(pf_bindings), std::end(pf_bindings), all.begin() + n_bindings);
      std::array<uint8_t, vulkan::CommandEncoder::kMaxPushBytes> push;
      auto pc = std::span(push.data(), planned.launch.push_constants.size());
      auto groups = codegen::add_prefetch(planned.launch, planned.kernel->source.workgroup_size[0],
                                          pf_regions, pc);
      enc.dispatch(*planned.kernel, std::span(all.data(), n_bindings + 3), pc, groups);
      vulkan::count_prefetch_launch();
      return;
    }
    vulkan::record_launch(enc, *planned.kernel, planned.launch, std::span(bindings, n_bindings));
  };
  // Many rows (or any, where forced): the weights dequantized first, then the GEMM.
  if (vulkan::qmm_dequantizes(dev, dtype, g)) {
    vulkan::record_qmm_dequantized(dev, enc, dtype, g, bx.binding, bw.binding, bs.binding,
                                   bbias.binding, by.binding);
    return;
  }
  // 17 to 64 rows of one weight matrix: qmvc in blocks of 16 rows, a launch each. Each reads
  // W again, but the qmm tiles these rows would take cost more than four blocks. A last
  // block of few rows takes qmv where qmv is faster (qmvc_preferred: 1 to 2 rows, or 3 to 5
  // without dq=magic).
  bool coop = qmvc_mode != "off";
  if (coop && g.batches == 1 && g.m > 16 && g.m <= kQmvcBlockedRows) {
    codegen::MatmulGeometry block = g;
    block.m = 16;
    if (codegen::qmvc_applies(dtype, block, dev.caps())) {
      for (int64_t r0 = 0; r0 < g.m; r0 += 16) {
        block.m = std::min<int64_t>(16, g.m - r0);
        block.a_offset = g.a_offset + static_cast<uint64_t>(r0 * g.lda);
        block.out_offset = g.out_offset + static_cast<uint64_t>(r0 * g.n);
        record(block, codegen::qmvc_applies(dtype, block, dev.caps()) &&
                          (block.m == 16 || qmvc_mode == "on" ||
                           codegen::qmvc_preferred(dtype, block, dev.caps())));
      }
      return;
    }
  }
  record(g, coop && codegen::qmvc_applies(dtype, g, dev.caps()) &&
                (qmvc_mode == "on" || codegen::qmvc_preferred(dtype, g, dev.caps())));
}

void Dequantize::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (const char* why = quant_unsupported(inputs, out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("Dequantize");
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  Buf wb = dense_run(enc, stream, inputs[0], "u32");
  Buf sb = dense_run(enc, stream, inputs[1], dtype);
  Buf bb = dense_run(enc, stream, inputs[2], dtype);
  Buf y = vulkan::buf_of(out, dtype);
  codegen::QuantGeometry g;
  g.k = out.shape(-1);
  g.rows = static_cast<int64_t>(out.size()) / g.k;
  g.bits = bits_;
  g.group_size = group_size_;
  auto bw = bind_run(dev, wb, static_cast<int64_t>(inputs[0].size()), false);
  auto bs = bind_run(dev, sb, static_cast<int64_t>(inputs[1].size()), false);
  auto bbias = bind_run(dev, bb, static_cast<int64_t>(inputs[2].size()), false);
  auto by = bind_run(dev, y, static_cast<int64_t>(out.size()), true);
  g.w_offset = bw.elem_offset;
  g.scales_offset = bs.elem_offset;
  g.biases_offset = bbias.elem_offset;
  g.out_offset = by.elem_offset;
  vulkan::Binding bindings[] = {bw.binding, bs.binding, bbias.binding, by.binding, by.binding};
  if (rows_) {
    // Through the indices (a quantized embedding's lookup): rows of the whole table.
    const array& ids = inputs[3];
    g.ids = ids.dtype() == uint32 ? "u32" : "i32";
    g.src_rows = inputs[0].shape(0);
    auto bi = bind_run(dev, dense_run(enc, stream, ids, g.ids.c_str()),
                       static_cast<int64_t>(ids.size()), false);
    g.ids_offset = bi.elem_offset;
    bindings[4] = bi.binding;
  }
  vulkan::record_quant(enc, "dequantize", dtype, g, std::span(bindings, rows_ ? 5 : 4));
}

void AffineQuantize::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& w = inputs[0];
  if (const char* why = quant_unsupported(inputs, w)) {
    vulkan::cpu_fallback(*this, inputs, outputs, why);
    return;
  }
  auto& dev = vulkan::device("AffineQuantize");
  for (auto& o : outputs) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  if (w.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(w.dtype());
  Buf wb = dense_run(enc, stream, w, dtype);
  codegen::QuantGeometry g;
  g.k = w.shape(-1);
  g.rows = static_cast<int64_t>(w.size()) / g.k;
  g.bits = bits_;
  g.group_size = group_size_;
  auto bw = bind_run(dev, wb, static_cast<int64_t>(w.size()), false);
  auto bq = bind_run(dev, vulkan::buf_of(outputs[0], "u32"),
                     static_cast<int64_t>(outputs[0].size()), true);
  auto bs = bind_run(dev, vulkan::buf_of(outputs[1], dtype),
                     static_cast<int64_t>(outputs[1].size()), true);
  auto bbias = bind_run(dev, vulkan::buf_of(outputs[2], dtype),
                        static_cast<int64_t>(outputs[2].size()), true);
  g.w_offset = bw.elem_offset;
  g.out_offset = bq.elem_offset;
  g.scales_offset = bs.elem_offset;
  g.biases_offset = bbias.elem_offset;
  const vulkan::Binding bindings[] = {bw.binding, bq.binding, bs.binding, bbias.binding};
  vulkan::record_quant(enc, "quantize", dtype, g, bindings);
}

}  // namespace mlx::core
