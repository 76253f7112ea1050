// The matrix-product keys: the heuristic picks tiles by grid size and the device's limits,
// and the cooperative-matrix GEMM (templates/gemm_coop.glsl) is chosen only for f16 on a
// device with cooperative matrices, renders, compiles and validates. (No CI device has
// cooperative matrices: its numbers are checked on the GPU machine, docs/matmul.md.)
#include <doctest/doctest.h>

#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/matmul.h"

namespace cg = mlx::core::vulkan::codegen;

namespace {

cg::DeviceCaps nvidia_like(bool coop) {
  cg::DeviceCaps caps;
  caps.subgroup_size = 32;
  caps.subgroup_shuffle = true;
  caps.shader_float16 = true;
  caps.shader_int16 = true;
  caps.shader_int64 = true;
  caps.storage_16bit = true;
  caps.cooperative_matrix = coop;
  caps.max_workgroup_invocations = 1024;
  caps.max_shared_memory = 49152;
  return caps;
}

cg::MatmulGeometry square(int64_t n) {
  cg::MatmulGeometry g;
  g.m = g.n = g.k = n;
  g.lda = g.ldb = n;
  return g;
}

}  // namespace

TEST_CASE("gemm tiles follow the grid size, and f16 takes cooperative matrices where present") {
  auto plain = nvidia_like(false);
  CHECK(cg::gemm_tile(square(4096), plain, "f16").name() == "128x128x16x8x8");
  CHECK(cg::gemm_tile(square(256), plain, "f32").name() == "32x32x16x2x2");
  auto coop = nvidia_like(true);
  CHECK(cg::gemm_tile(square(4096), coop, "f16").coop);
  CHECK_FALSE(cg::gemm_tile(square(4096), coop, "bf16").coop);
  CHECK_FALSE(cg::gemm_tile(square(4096), coop, "f32").coop);
  auto small = coop;
  small.max_shared_memory = 16384;  // the coop stages need 26 KB
  CHECK_FALSE(cg::gemm_tile(square(4096), small, "f16").coop);
}

TEST_CASE("the cooperative-matrix gemm renders, compiles and validates for every layout") {
  auto caps = nvidia_like(true);
  for (bool a_t : {false, true}) {
    for (bool b_t : {false, true}) {
      auto g = square(100);  // ragged: edge checks on
      g.a_t = a_t;
      g.b_t = b_t;
      g.addmm = a_t && b_t;
      auto tile = cg::gemm_tile(g, caps, "f16");
      REQUIRE(tile.coop);
      auto key = cg::gemm_key("f16", g, tile);
      CAPTURE(key.canonical());
      auto src = cg::render(key, caps);
      CHECK(src.template_name == "gemm_coop.glsl");
      CHECK(src.workgroup_size[0] == 128);
      auto mod = cg::compile(key, src);
      CHECK(cg::validate_spirv(mod.words) == "");
      auto launch = cg::gemm_launch(key, src, g);
      CHECK(launch.groups[0] == 2);  // ceil(100 / 64)
      CHECK(launch.groups[1] == 2);
    }
  }
  // Without the capability the key does not render.
  auto g = square(64);
  auto key = cg::gemm_key("f16", g, cg::gemm_tile(g, caps, "f16"));
  CHECK_THROWS_AS(cg::render(key, nvidia_like(false)), std::runtime_error);
}

TEST_CASE("qmv teams own up to 4 columns (2 of one row) while the launch keeps 128 workgroups") {
  auto caps = nvidia_like(false);
  auto geometry = [](int64_t m, int64_t n, int64_t k) {
    cg::MatmulGeometry g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = k;
    g.ldb = k / 8;  // 4-bit words per row
    g.b_t = true;
    g.bits = 4;
    g.group_size = 64;
    return g;
  };
  auto nc = [&](const cg::MatmulGeometry& g) { return cg::qmv_key("bf16", g, caps).params["nc"]; };
  CHECK(nc(geometry(1, 14336, 4096)) == "2");   // one row: two columns per team
  CHECK(nc(geometry(1, 1024, 1024)) == "1");    // 2 columns would leave 64 workgroups
  CHECK(nc(geometry(4, 14336, 4096)) == "4");   // 8 teams x 4 columns: 448 workgroups
  CHECK(nc(geometry(4, 1024, 3072)) == "1");    // 4 columns would leave 32 workgroups
  CHECK(nc(geometry(2, 2048, 1024)) == "2");    // 2 columns: 128 workgroups
  CHECK(nc(geometry(8, 151936, 1024)) == "2");  // 8 rows: at most 2 columns
  // Every columns x rows variant renders and compiles, on the shared-memory team sums too.
  for (bool shuffle : {true, false}) {
    auto c = caps;
    c.subgroup_shuffle = shuffle;
    for (int64_t m : {1, 2, 4, 8}) {
      auto g = geometry(m, 151936, 1024);
      auto key = cg::qmv_key("bf16", g, c);
      CAPTURE(key.canonical());
      auto src = cg::render(key, c);
      auto mod = cg::compile(key, src);
      CHECK(cg::validate_spirv(mod.words) == "");
      auto launch = cg::qmv_launch(key, src, g);
      int64_t per_group = src.workgroup_size[0] / std::stol(key.params["tpr"]) *
                          std::stol(key.params["nc"]);
      CHECK(launch.groups[0] == (151936 + per_group - 1) / per_group);
    }
  }
}
