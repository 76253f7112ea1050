// Measures compile cost per kernel: glslang, then each SPIRV-Tools optimizer level, with
// SPIR-V sizes; the numbers behind optimizer_level_for() in docs/codegen.md.
//   cmake --build <build> --target mlxvk_codegen_measure && <build>/codegen/mlxvk_codegen_measure
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "codegen/codegen.h"

using namespace mlx::core::vulkan::codegen;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = caps.shader_int64 = true;
  caps.max_workgroup_invocations = 1024;
  const char* keys[] = {
      "binary:idx=32,in=f32.f32,layout=cc,op=Add,out=f32",
      "binary:idx=32,in=bf16.bf16,layout=cs,op=Multiply,out=bf16",
      "unary:idx=32,in=f32,layout=c,op=Exp,out=f32",
      "unary:idx=32,in=f16,layout=g,op=Sin,out=f16,rank=2",
      "unary:idx=32,in=bf16,layout=c,op=ErfInv,out=bf16",
      "binary:idx=32,in=f32.f32,layout=gc,op=Power,out=f32,rank=n",
      "binary:idx=64,in=i64.i64,layout=cc,op=FloorDivide,out=i64",
      "copy:idx=32,in=f16,layout=g,op=Copy,out=i8,rank=3",
      "select:idx=32,in=b.f32.f32,layout=ccs,op=Select,out=f32",
  };
  // The first compile of a process also builds glslang's built-in symbol tables.
  auto t0 = std::chrono::steady_clock::now();
  KernelKey first = KernelKey::parse(keys[0]);
  compile(first, render(first, caps), 0);
  double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("first compile in the process: %.1f ms\n\n", first_ms);

  std::printf(
      "| kernel | render ms | glslang ms | size O0 | opt1 ms | size O1 | opt2 ms | size O2 "
      "| validate ms |\n|---|---|---|---|---|---|---|---|---|\n");
  const int reps = 7;
  for (const char* text : keys) {
    KernelKey key = KernelKey::parse(text);
    std::vector<double> render_ms, glslang, opt1, opt2, validate;
    size_t s0 = 0, s1 = 0, s2 = 0;
    for (int r = 0; r < reps; ++r) {
      auto a = std::chrono::steady_clock::now();
      KernelSource src = render(key, caps);
      auto b = std::chrono::steady_clock::now();
      render_ms.push_back(std::chrono::duration<double, std::milli>(b - a).count());
      SpirvModule m0 = compile(key, src, 0);
      SpirvModule m1 = compile(key, src, 1);
      SpirvModule m2 = compile(key, src, 2);
      glslang.push_back(m0.glslang_ms);
      opt1.push_back(m1.optimize_ms);
      opt2.push_back(m2.optimize_ms);
      s0 = m0.words.size() * 4;
      s1 = m1.words.size() * 4;
      s2 = m2.words.size() * 4;
      a = std::chrono::steady_clock::now();
      validate_spirv(m0.words);
      b = std::chrono::steady_clock::now();
      validate.push_back(std::chrono::duration<double, std::milli>(b - a).count());
    }
    std::printf("| `%s` | %.2f | %.2f | %zu | %.2f | %zu | %.2f | %zu | %.2f |\n", text,
                median(render_ms), median(glslang), s0, median(opt1), s1, median(opt2), s2,
                median(validate));
  }
  return 0;
}
