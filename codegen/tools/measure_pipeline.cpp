// Measures what the SPIRV-Tools optimizer buys at pipeline creation: for a few kernels,
// vkCreateComputePipelines time (driver caches off) for SPIR-V at optimizer levels 0, 1, 2,
// next to the optimizer's own cost. Numbers go to docs/codegen.md.
//   cmake --build <build> --target mlxvk_codegen_measure_pipeline
//   <build>/codegen/mlxvk_codegen_measure_pipeline
// Not part of the library: codegen itself knows nothing about Vulkan.
#include <cstdio>
#include <cstdlib>

#include "codegen/tools/vk_min.h"

using namespace mlxvk_tools;

namespace {

double pipeline_ms(Vk& vk, const KernelSource& src, const std::vector<uint32_t>& words) {
  Pipeline p = vk.pipeline(src, words);
  vk.destroy(p);
  return p.create_ms;
}

}  // namespace

int main() {
  // Measure the driver's compiler, not its shader caches.
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
  setenv("__GL_SHADER_DISK_CACHE", "0", 1);
  Vk vk;
  std::printf("device: %s\n\n", vk.props.deviceName);
  std::printf(
      "| kernel | glslang ms | opt1 ms | opt2 ms | pipeline O0 ms | pipeline O1 ms | "
      "pipeline O2 ms |\n|---|---|---|---|---|---|---|\n");
  const char* keys[] = {
      "binary:idx=32,in=f32.f32,layout=cc,op=Add,out=f32",
      "binary:idx=32,in=bf16.bf16,layout=cs,op=Multiply,out=bf16",
      "unary:idx=32,in=f32,layout=c,op=Exp,out=f32",
      "unary:idx=32,in=f16,layout=g,op=Sin,out=f16,rank=2",
      "unary:idx=32,in=bf16,layout=c,op=ErfInv,out=bf16",
      "binary:idx=32,in=f32.f32,layout=gc,op=Power,out=f32,rank=n",
      "binary:idx=64,in=i64.i64,layout=cc,op=FloorDivide,out=i64",
      "copy:idx=32,in=f16,layout=g,op=Copy,out=i8,rank=3",
  };
  const int reps = 5;
  for (const char* text : keys) {
    KernelKey key = KernelKey::parse(text);
    KernelSource src = render(key, vk.caps);
    std::vector<double> g, o1, o2, p0, p1, p2;
    for (int r = 0; r < reps; ++r) {
      SpirvModule m0 = compile(key, src, 0);
      SpirvModule m1 = compile(key, src, 1);
      SpirvModule m2 = compile(key, src, 2);
      g.push_back(m0.glslang_ms);
      o1.push_back(m1.optimize_ms);
      o2.push_back(m2.optimize_ms);
      p0.push_back(pipeline_ms(vk, src, m0.words));
      p1.push_back(pipeline_ms(vk, src, m1.words));
      p2.push_back(pipeline_ms(vk, src, m2.words));
    }
    std::printf("| `%s` | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", text, median(g), median(o1),
                median(o2), median(p0), median(p1), median(p2));
  }
  return 0;
}
