// The matrix-product keys: the heuristic picks tiles by grid size and the device's limits,
// and the cooperative-matrix GEMM (templates/gemm_coop.glsl) is chosen only for f16 on a
// device with cooperative matrices, renders, compiles and validates. (No CI device has
// cooperative matrices: its numbers are checked on the GPU machine, docs/matmul.md.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/matmul.h"
#include "nvidia_caps.h"

namespace cg = mlx::core::vulkan::codegen;

namespace {

using mlx_test::nvidia_like;

cg::MatmulGeometry square(int64_t n) {
  cg::MatmulGeometry g;
  g.m = g.n = g.k = n;
  g.lda = g.ldb = n;
  return g;
}

// x [m, k] times 4-bit (or `bits`) g64 weights [n, k] read as W^T: qmv's shape.
cg::MatmulGeometry qmv_geometry(int64_t m, int64_t n, int64_t k, int bits = 4) {
  return mlx_test::quant_rows(m, n, k, bits);
}

}  // namespace

TEST_CASE("gemm tiles follow the grid size, and f16 takes cooperative matrices where present") {
  auto plain = nvidia_like(false);
  CHECK(cg::gemm_tile(square(4096), plain, "f16").name() == "128x128x16x8x8");
  CHECK(cg::gemm_tile(square(256), plain, "f32").name() == "32x32x16x2x2");
  auto coop = nvidia_like(true);
  CHECK(cg::gemm_tile(square(4096), coop, "f16").name() == "coopnv128x256x16w64x64");
  auto wide = square(2048);
  wide.m = 1024;  // 64 workgroups of 128 x 256, 128 of 128 x 128
  CHECK(cg::gemm_tile(wide, coop, "f16").name() == "coopnv128x128x32w64x32");
  CHECK(cg::gemm_tile(square(512), coop, "f16").name() == "coopnv64x64x32w32x32");
  CHECK_FALSE(cg::gemm_tile(square(4096), coop, "bf16").coop);
  CHECK_FALSE(cg::gemm_tile(square(4096), coop, "f32").coop);
  auto small = coop;
  small.max_shared_memory = 16384;  // the smaller coop tile's two stages need 20 KB
  CHECK_FALSE(cg::gemm_tile(square(4096), small, "f16").coop);
  // Rows that do not start on 16 bytes, or a contiguous extent not a multiple of 8, take
  // the FMA tiles: the coop kernel loads whole 16-byte chunks.
  auto ragged = square(4096);
  ragged.k = 4095;
  CHECK_FALSE(cg::gemm_tile(ragged, coop, "f16").coop);
  auto shifted = square(4096);
  shifted.a_offset = 4;
  CHECK_FALSE(cg::gemm_tile(shifted, coop, "f16").coop);
  auto tall = square(4096);
  tall.m = 4097;  // m is not A's contiguous dim: the edge checks take it
  CHECK(cg::gemm_tile(tall, coop, "f16").coop);
}

TEST_CASE("with the device's compute units, coop gemm tiles are chosen by waves") {
  auto coop = nvidia_like(true);
  coop.compute_units = 132;  // an H200's, where the rule's figures were measured
  auto rows = [](int64_t m, int64_t n, int64_t k) {
    cg::MatmulGeometry g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = g.ldb = k;
    g.b_t = true;
    return g;
  };
  // 96 workgroups of 128 x 128 are one wave; 384 of 64 x 64 are two (the grid rule's pick).
  CHECK(cg::gemm_tile(rows(384, 4096, 4096), coop, "f16").name() == "coopnv128x128x32w64x32");
  // 128 workgroups of 64 x 64 are one wave, at three quarters of a 128 x 128 wave's time.
  CHECK(cg::gemm_tile(rows(128, 4096, 4096), coop, "f16").name() == "coopnv64x64x32w32x32");
  // 72 workgroups of 128 x 256 are one wave; 144 of 128 x 128 are two (and too few for the
  // two-resident 128 x 128 x 16: k below 4096).
  CHECK(cg::gemm_tile(rows(768, 3072, 1024), coop, "f16").name() == "coopnv128x256x16w64x64");
  // 1152 workgroups of 128 x 128: 9 waves of 128 x 128 x 32, 5 of 128 x 128 x 16 (8.2 in
  // all); 576 of 128 x 256 are 5 of twice the time.
  CHECK(cg::gemm_tile(rows(1536, 12288, 4096), coop, "f16").name() == "coopnv128x128x16w64x32");
  // 4096^3: 4 waves of 128 x 128 x 16 (6.5) against 8 of 128 x 128 x 32 and 4 of 128 x
  // 256 (8.3, or 7.4 with B read as stored).
  CHECK(cg::gemm_tile(rows(4096, 4096, 4096), coop, "f16").name() == "coopnv128x128x16w64x32");
  auto stored = rows(4096, 4096, 4096);
  stored.b_t = false;
  stored.ldb = 4096;
  CHECK(cg::gemm_tile(stored, coop, "f16").name() == "coopnv128x128x16w64x32");
  // 128 workgroups of 128 x 128 are one per multiprocessor: 128 x 128 x 32 (H200: 87 us
  // against 136 for [512,4096] x [4096,4096]^T on 128 x 128 x 16).
  CHECK(cg::gemm_tile(rows(512, 4096, 4096), coop, "f16").name() == "coopnv128x128x32w64x32");
  // Without the count, the grid rule: 384 workgroups of 64 x 64 are enough.
  coop.compute_units = 0;
  CHECK(cg::gemm_tile(rows(384, 4096, 4096), coop, "f16").name() == "coopnv64x64x32w32x32");
}

TEST_CASE("the cooperative-matrix gemm renders, compiles and validates for every layout") {
  auto caps = nvidia_like(true);
  for (bool a_t : {false, true}) {
    for (bool b_t : {false, true}) {
      auto g = square(104);  // not a tile multiple: edge checks on
      g.m = 100;
      if (a_t) {
        g.m = 104;  // A's contiguous dim
        g.n = b_t ? 100 : 104;
      } else if (!b_t) {
        g.n = 104;
      } else {
        g.n = 100;
      }
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
      CHECK(launch.groups[0] == 2);  // ceil(n / 64)
      CHECK(launch.groups[1] == 2);
    }
  }
  // Only m ragged (a prompt's rows): only rows are checked, for A either way round.
  for (bool a_t : {false, true}) {
    for (bool b_t : {false, true}) {
      auto g = square(128);
      g.m = 104;  // a multiple of 8, as A's contiguous dim must be when transposed
      g.a_t = a_t;
      g.b_t = b_t;
      g.lda = a_t ? 104 : 128;
      auto tile = cg::gemm_tile(g, caps, "f16");
      REQUIRE(tile.coop);
      auto key = cg::gemm_key("f16", g, tile);
      CAPTURE(key.canonical());
      CHECK(key.params.at("edge") == "m");
      auto src = cg::render(key, caps);
      CHECK(cg::validate_spirv(cg::compile(key, src).words) == "");
      CHECK(cg::gemm_launch(key, src, g).groups[1] == 2);
    }
  }
  // edge=m is the coop kernel's alone.
  auto fma = square(128);
  fma.m = 100;
  auto fma_key = cg::gemm_key("f32", fma, cg::gemm_tile(fma, caps, "f32"));
  CHECK(fma_key.params.at("edge") == "1");
  fma_key.params.at("edge").assign(1, 'm');
  CHECK_THROWS_AS(cg::render(fma_key, caps), std::invalid_argument);
  // Without the capability the key does not render.
  auto g = square(64);
  auto key = cg::gemm_key("f16", g, cg::gemm_tile(g, caps, "f16"));
  CHECK_THROWS_AS(cg::render(key, nvidia_like(false)), std::runtime_error);
}

TEST_CASE("the cooperative-matrix qmm renders, compiles and validates for every bits x transpose") {
  auto caps = nvidia_like(true);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (bool trans : {false, true}) {
      for (int64_t n : {256, 224}) {
        cg::MatmulGeometry g;
        g.m = 100;  // rows past a tile: with n = 256 only the rows checked, else every chunk
        g.n = n;
        g.k = 512;
        g.lda = g.k;
        g.b_t = trans;
        g.ldb = (trans ? g.k : g.n) * bits / 32;
        g.bits = bits;
        g.group_size = 64;
        auto tile = cg::gemm_tile(g, caps, "f16");
        REQUIRE(tile.coop);
        auto key = cg::qmm_key("f16", g, tile);
        CAPTURE(key.canonical());
        CHECK(key.params.at("edge") == (n == 256 ? "m" : "1"));
        auto src = cg::render(key, caps);
        CHECK(src.template_name == "gemm_coop.glsl");
        CHECK(src.num_buffers == 5);
        auto mod = cg::compile(key, src);
        CHECK(cg::validate_spirv(mod.words) == "");
      }
    }
  }
  // A tall grid takes the 256-row tile: each dequantized value serves 256 rows.
  {
    cg::MatmulGeometry tall;
    tall.m = 4096;
    tall.n = 1024;
    tall.k = 3072;
    tall.lda = tall.k;
    tall.b_t = true;
    tall.ldb = tall.k / 8;
    tall.bits = 4;
    tall.group_size = 64;
    CHECK(cg::gemm_tile(tall, caps, "f16").name() == "coopnv256x128x16w64x64");
    tall.m = 512;  // 16 tiles of 256 x 128, 32 of 128 x 128, 128 of 64 x 64
    CHECK(cg::gemm_tile(tall, caps, "f16").name() == "coopnv64x64x32w32x32");
  }
  // x rows that do not start on 16 bytes keep the FMA tiles; a bf16 product too.
  cg::MatmulGeometry g;
  g.m = 64;
  g.n = 256;
  g.k = 512;
  g.lda = 516;
  g.b_t = true;
  g.ldb = 64;
  g.bits = 4;
  g.group_size = 64;
  CHECK_FALSE(cg::gemm_tile(g, caps, "f16").coop);
  g.lda = 512;
  CHECK(cg::gemm_tile(g, caps, "f16").coop);
  CHECK_FALSE(cg::gemm_tile(g, caps, "bf16").coop);
}

TEST_CASE("qmv teams own up to 4 columns (2 of one row) while the launch keeps 128 workgroups") {
  auto caps = nvidia_like(false);
  auto param = [&](const cg::MatmulGeometry& g, const char* name) {
    return cg::qmv_key("bf16", g, caps).params[name];
  };
  auto nc = [&](const cg::MatmulGeometry& g) { return param(g, "nc"); };
  CHECK(nc(qmv_geometry(1, 14336, 2048)) == "2");           // one row: two columns per team
  CHECK(param(qmv_geometry(1, 14336, 2048), "ks") == "1");  // 2 packs a lane: one part
  CHECK(param(qmv_geometry(1, 14336, 4096), "ks") == "2");  // 4 packs a lane: two parts
  // One row of <= 4 bits with >= 4 packs a lane: 4 columns in two parts per column group.
  auto down = qmv_geometry(1, 4096, 14336);
  CHECK((nc(down) == "4" && param(down, "ks") == "2" && param(down, "u") == "1"));
  auto down8 = qmv_geometry(1, 4096, 14336, 8);
  CHECK((nc(down8) == "2" && param(down8, "ks") == "1" && param(down8, "u") == "2"));
  CHECK(param(qmv_geometry(4, 4096, 14336), "ks") == "1");  // several rows: one part
  CHECK(nc(qmv_geometry(1, 1024, 14336)) ==
        "2");                                     // 4 columns in 4 groups would leave 64 workgroups
  CHECK(nc(qmv_geometry(1, 1024, 1024)) == "1");  // 2 columns would leave 64 workgroups
  CHECK(nc(qmv_geometry(4, 14336, 4096)) == "4");  // 8 teams x 4 columns: 448 workgroups
  CHECK(nc(qmv_geometry(4, 1024, 3072)) == "1");   // 4 columns would leave 32 workgroups
  // A SwiGLU product's team owns as many columns of each half as its half's split rule
  // gives, 2 or 1 of each: an 8B-class gate/up 2 + 2 in two parts, Qwen3-0.6B's 1 + 1.
  auto glu = [&](int64_t m, int64_t n, int64_t k) {
    auto g = qmv_geometry(m, n, k);
    g.glu = true;
    g.prenorm = true;
    return g;
  };
  CHECK((nc(glu(1, 24576, 4096)) == "4" && param(glu(1, 24576, 4096), "ks") == "2"));
  CHECK(nc(glu(1, 6144, 1024)) == "2");
  CHECK(nc(glu(1, 144, 8384)) == "2");  // 4 would leave too few workgroups
  CHECK(nc(glu(4, 24576, 4096)) == "4");
  for (auto g : {glu(1, 24576, 4096), glu(1, 6144, 1024)}) {
    auto key = cg::qmv_key("bf16", g, caps);
    auto mod = cg::compile(key, cg::render(key, caps));
    CHECK(cg::validate_spirv(mod.words) == "");
    // Half the columns a group: 8 teams in 2 parts of 2 + 2 columns, 8 teams of 1 + 1.
    auto launch = cg::qmv_launch(key, cg::render(key, caps), g);
    CHECK(launch.groups[0] == (key.params["nc"] == "4" ? 12288 / 8 : 3072 / 8));
  }
  CHECK(nc(qmv_geometry(2, 2048, 1024)) == "2");    // 2 columns: 128 workgroups
  CHECK(nc(qmv_geometry(8, 151936, 1024)) == "2");  // 8 rows: at most 2 columns
  CHECK(nc(qmv_geometry(1, 151936, 1024)) == "4");  // an lm_head: 4 columns, 2374 workgroups
  CHECK(nc(qmv_geometry(1, 16384, 1024)) == "2");   // 4 columns would leave 512 workgroups
  // The lm_head's short rows take 16-lane teams (2 packs a lane); longer rows, fewer
  // columns or several rows keep 32.
  CHECK(param(qmv_geometry(1, 151936, 1024), "tpr") == "16");
  CHECK(param(qmv_geometry(1, 151936, 4096), "tpr") == "32");
  CHECK(param(qmv_geometry(1, 16384, 1024), "tpr") == "32");
  CHECK(param(qmv_geometry(2, 151936, 1024), "tpr") == "32");
  // One f16 row of 4 bits in two parts sums in f16 pairs (dot=f16), where the device has
  // f16 arithmetic, and so does bf16 with >= 3 steps a lane; so do 2 to 4 f16 rows and 2
  // bf16 rows with >= 2 steps a lane. 8 bits, short rows, a fused norm, 5 to 8 rows or
  // 3 to 4 bf16 rows: f32.
  auto dot = [&](const std::string& dt, const cg::MatmulGeometry& g, const cg::DeviceCaps& c) {
    return cg::qmv_key(dt, g, c).params["dot"];
  };
  CHECK(dot("f16", down, caps) == "f16");
  CHECK(dot("bf16", down, caps) == "f16");
  CHECK(dot("f16", qmv_geometry(1, 14336, 4096), caps) == "f16");   // 2 steps a lane
  CHECK(dot("bf16", qmv_geometry(1, 14336, 4096), caps) == "f32");  // bf16 needs 3
  CHECK(dot("f32", down, caps) == "f32");
  CHECK(dot("f16", down8, caps) == "f32");
  CHECK(dot("f16", qmv_geometry(1, 14336, 2048), caps) == "f32");
  CHECK(dot("f16", qmv_geometry(2, 4096, 14336), caps) == "f16");
  CHECK(dot("f16", qmv_geometry(4, 14336, 4096), caps) == "f16");  // 2 steps a lane
  CHECK(dot("f16", qmv_geometry(4, 14336, 1024), caps) == "f32");  // 1 step a lane
  CHECK(dot("f16", qmv_geometry(5, 4096, 14336), caps) == "f32");  // mr 8
  CHECK(dot("bf16", qmv_geometry(2, 4096, 14336), caps) == "f16");
  CHECK(dot("bf16", qmv_geometry(3, 4096, 14336), caps) == "f32");
  auto normed = down;
  normed.prenorm = true;
  CHECK(dot("f16", normed, caps) == "f32");
  auto no_f16 = caps;
  no_f16.shader_float16 = false;
  CHECK(dot("f16", down, no_f16) == "f32");
  for (const char* dt : {"f16", "bf16"}) {
    auto key = cg::qmv_key(dt, down, caps);
    auto src = cg::render(key, caps);
    CHECK(std::count(src.defines.begin(), src.defines.end(),
                     std::string("X_BF16 ") + (dt == std::string("bf16") ? "1" : "0")) == 1);
    auto mod = cg::compile(key, src);
    CHECK(cg::validate_spirv(mod.words) == "");
    CHECK_THROWS_WITH_AS(cg::render(key, no_f16), doctest::Contains("dot must be f32"),
                         std::invalid_argument);
  }
  // Every columns x rows variant renders and compiles, on the shared-memory team sums too.
  for (bool shuffle : {true, false}) {
    auto c = caps;
    c.subgroup_shuffle = shuffle;
    for (int64_t m : {1, 2, 4, 8}) {
      for (int64_t k : {1024, 14336}) {  // one part, and two for a single row
        auto g = qmv_geometry(m, 151936, k);
        auto key = cg::qmv_key("bf16", g, c);
        CAPTURE(key.canonical());
        auto src = cg::render(key, c);
        auto mod = cg::compile(key, src);
        CHECK(cg::validate_spirv(mod.words) == "");
        auto launch = cg::qmv_launch(key, src, g);
        int64_t per_group = src.workgroup_size[0] / std::stol(key.params["tpr"]) /
                            std::stol(key.params["ks"]) * std::stol(key.params["nc"]);
        CHECK(launch.groups[0] == (151936 + per_group - 1) / per_group);
      }
    }
  }
}

TEST_CASE("qmv takes one 16-bit row of 4 bits as integer dot products where the device has them") {
  auto caps = nvidia_like(false);
  caps.integer_dot_product = true;
  auto dot = [&](const std::string& dt, const cg::MatmulGeometry& g, const cg::DeviceCaps& c) {
    auto key = cg::qmv_key(dt, g, c);
    return key.params["dot"] + "/" + key.params["xpacks"];
  };
  auto qkv = qmv_geometry(1, 6144, 4096);
  CHECK(dot("bf16", qkv, caps) == "i8/128");
  CHECK(dot("f16", qmv_geometry(1, 14336, 1024), caps) == "i8/32");
  // Rows past 4096 values of a product with few workgroups keep the f16 pair sums.
  CHECK(dot("bf16", qmv_geometry(1, 4096, 12288), caps) == "f16/0");
  CHECK(cg::qmv_key("bf16", qmv_geometry(1, 6144, 4096), caps).params["stream"] == "0");
  // A huge output reads its rows whole on integer dot products (qmv_shares), rows past 4096
  // values staging x a step at a time (stream).
  CHECK(cg::qmv_key("bf16", qmv_geometry(1, 151936, 4096), caps).params["ks"] == "1");
  CHECK(cg::qmv_key("bf16", qmv_geometry(1, 6144, 4096), caps).params["ks"] == "2");
  auto long_head = cg::qmv_key("f16", qmv_geometry(1, 151936, 5120), caps);
  CHECK(long_head.params["dot"] + "/" + long_head.params["xpacks"] + "/" + long_head.params["ks"] +
            "/" + long_head.params["stream"] ==
        "i8/160/1/1");
  // Past what the device's shared memory stages ((48 KiB - 2048) / 72 bytes: 654 packs,
  // about 20,900 values; 25600 here), the f16 pair sums.
  CHECK(dot("bf16", qmv_geometry(1, 151936, 25600), caps) == "f16/0");
  CHECK(dot("f32", qkv, caps) == "f32/0");                         // f32 keeps its precision
  CHECK(dot("bf16", qmv_geometry(2, 6144, 4096), caps) == "f16/0");    // one row only
  CHECK(dot("f16", qmv_geometry(1, 6144, 4096, 8), caps) == "f32/0");  // 4 bits only
  auto odd = qkv;
  odd.lda = odd.k = 4096 + 32;
  odd.a_offset = 4;  // x not on 16 bytes: no vectors
  odd.ldb = odd.k / 8;
  CHECK(dot("bf16", odd, caps) == "f32/0");
  auto small = caps;
  small.max_shared_memory = 8192;  // 128 packs of 72 bytes do not fit
  CHECK(dot("bf16", qkv, small) == "f32/0");
  auto no_dot = caps;
  no_dot.integer_dot_product = false;
  CHECK(dot("bf16", qkv, no_dot) == "f32/0");
  auto shuffleless = caps;
  shuffleless.subgroup_shuffle = false;
  CHECK(dot("bf16", qkv, shuffleless) == "f32/0");
  // The decode step's fused products render and compile, and a key whose packs are not the
  // geometry's is refused at launch.
  auto normed = qkv;
  normed.prenorm = true;
  auto glu = qmv_geometry(1, 24576, 4096);
  glu.glu = glu.prenorm = true;
  auto res = qmv_geometry(1, 4096, 4096);
  res.residual = true;
  auto tiny = qmv_geometry(1, 4096, 128);  // 4 packs: 4-lane teams, the most team sums
  auto long_res = qmv_geometry(1, 65536, 8192);  // x streamed
  long_res.residual = true;
  auto long_normed = qmv_geometry(1, 151936, 5120 + 32);  // a ragged last step
  long_normed.prenorm = true;
  for (const auto& g : {qkv, normed, glu, res, tiny, long_res, long_normed}) {
    auto key = cg::qmv_key("bf16", g, caps);
    CAPTURE(key.canonical());
    CHECK(key.params["dot"] == "i8");
    auto src = cg::render(key, caps);
    auto mod = cg::compile(key, src);
    CHECK(cg::validate_spirv(mod.words) == "");
    // The key rule's estimate of the kernel's shared memory (72 bytes a pack and 2048 for
    // the rest, codegen/qmv.cpp) holds for the compiled kernel.
    CHECK(cg::workgroup_memory_bytes(mod.words, src.spec_constants) <=
          std::stoul(key.params["xpacks"]) * 72 + 2048);
    CHECK_NOTHROW(cg::qmv_launch(key, src, g));
    auto other = g;
    other.k = 2048;
    other.lda = 2048;
    other.ldb = 256;
    CHECK_THROWS_WITH_AS(cg::qmv_launch(key, src, other), doctest::Contains("does not match"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(cg::render(key, no_dot), doctest::Contains("dot i8"),
                         std::invalid_argument);
  }
}

namespace {

// (opcode, operands) of every instruction after the header.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> instructions(
    const std::vector<uint32_t>& w) {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out;
  for (size_t i = 5; i < w.size();) {
    uint32_t count = w[i] >> 16;
    REQUIRE(count > 0);
    out.push_back(
        {w[i] & 0xffffu, std::vector<uint32_t>(w.begin() + i + 1, w.begin() + i + count)});
    i += count;
  }
  return out;
}

}  // namespace

TEST_CASE("the KHR rewrite turns the NV gemm into KHR cooperative matrices, one use per type") {
  auto caps = nvidia_like(false);
  caps.cooperative_matrix_khr = true;
  caps.cooperative_matrix_bf16 = true;
  auto g = square(4096);
  g.b_t = true;
  for (const char* dtype : {"f16", "bf16"}) {
    CAPTURE(dtype);
    auto tile = cg::gemm_tile(g, caps, dtype);
    REQUIRE(tile.khr);
    CHECK(tile.name() == "coopkhr128x256x16w64x64");
    auto key = cg::gemm_key(dtype, g, tile);
    auto src = cg::render(key, caps);
    CHECK(src.coop_khr);
    CHECK(src.coop_khr_bf16 == (std::string(dtype) == "bf16"));
    auto words = cg::compile(key, src).words;
    std::map<uint32_t, uint32_t> constant;  // result id -> value of 32-bit OpConstant
    std::map<uint32_t, uint32_t> bf16_types;
    std::set<uint32_t> uses;
    int nv = 0, muladds = 0;
    bool khr_cap = false;
    for (const auto& [op, ops] : instructions(words)) {
      if (op >= 5357 && op <= 5362) {
        ++nv;
      }
      if (op == 43 && ops.size() == 3) {
        constant[ops[1]] = ops[2];
      }
      if (op == 22 && ops.size() == 3 && ops[1] == 16 && ops[2] == 0) {
        bf16_types[ops[0]] = 1;
      }
      if (op == 17 && ops[0] == 6022) {
        khr_cap = true;
      }
      if (op == 4456) {  // OpTypeCooperativeMatrixKHR: id, component, scope, rows, cols, use
        REQUIRE(ops.size() == 6);
        REQUIRE(constant.count(ops[5]));
        uint32_t use = constant[ops[5]];
        CHECK(uses.insert(use).second);  // each use once: A, B and the accumulator
        if (use != 2) {
          CHECK(bf16_types.count(ops[1]) == (std::string(dtype) == "bf16" ? 1u : 0u));
        }
      }
      muladds += op == 4459;
    }
    CHECK(nv == 0);
    CHECK(khr_cap);
    CHECK(uses == std::set<uint32_t>{0, 1, 2});
    CHECK(muladds == 3);  // one loop nest in each of the two stages' multiply steps, and
                          // the odd last step's after the loop
    CHECK(words[3] > 0);
  }
  // bf16 without the KHR bf16 shape keeps the FMA tiles; f16 prefers KHR over NV where both
  // exist, and takes NV where only NV does.
  caps.cooperative_matrix_bf16 = false;
  CHECK_FALSE(cg::gemm_tile(g, caps, "bf16").coop);
  caps.cooperative_matrix = true;
  CHECK(cg::gemm_tile(g, caps, "f16").khr);
  caps.cooperative_matrix_khr = false;
  CHECK(cg::gemm_tile(g, caps, "f16").coop);
  CHECK_FALSE(cg::gemm_tile(g, caps, "f16").khr);
}

// The autotune's candidates (mlx/backend/vulkan/autotune.h): the heuristic's tile first, then
// distinct tiles of the same kind that can run the problem, no more than asked for.
TEST_CASE("gemm tile candidates start with the heuristic's choice and stay of its kind") {
  for (bool coop : {false, true}) {
    CAPTURE(coop);
    auto caps = nvidia_like(coop);
    auto g = square(1024);
    g.b_t = true;
    auto first = cg::gemm_tile(g, caps, "f16");
    auto c = cg::gemm_tile_candidates(g, caps, "f16", 4);
    REQUIRE(!c.empty());
    CHECK(c.size() <= 4);
    CHECK(c.front().name() == first.name());
    std::set<std::string> names;
    for (const auto& t : c) {
      CHECK(t.coop == first.coop);
      CHECK(cg::gemm_tile_usable(t, g, caps, "f16"));
      CHECK(names.insert(t.name()).second);
    }
    CHECK(c.size() >= 2);
    CHECK(cg::gemm_tile_candidates(g, caps, "f16", 1).size() == 1);
  }
}

TEST_CASE("qmv's prefetch workgroups follow its own and bring in at most kPrefetchBytes") {
  auto caps = nvidia_like(false);
  cg::MatmulGeometry g;
  g.m = 1;
  g.n = 4096;
  g.k = 1024;
  g.lda = 1024;
  g.ldb = 1024 * 4 / 32;
  g.b_t = true;
  g.bits = 4;
  g.group_size = 64;
  g.prenorm = true;
  g.eps = 1e-6f;
  g.prefetch = true;
  auto key = cg::qmv_key("bf16", g, caps);
  CHECK(key.params["pf"] == "1");
  auto src = cg::render(key, caps);
  CHECK(src.num_buffers == 9);  // x, w, scales, biases, out, norm weight, three regions
  CHECK(cg::validate_spirv(cg::compile(key, src).words) == "");
  auto launch = cg::qmv_launch(key, src, g);
  REQUIRE(launch.push_constants.size() == src.push_constant_bytes);
  // The regions: 3 MiB of weights, then 2 MiB of scales cut to what is left of
  // kPrefetchBytes (4 MiB), and biases left out.
  std::vector<cg::PrefetchRegion> regions = {{8, 3u << 20}, {4, 2u << 20}, {0, 2u << 20}};
  std::vector<uint8_t> push(launch.push_constants.size());
  auto groups = cg::add_prefetch(launch, src.workgroup_size[0], regions, push);
  uint32_t tail[7];
  std::memcpy(tail, push.data() + push.size() - sizeof(tail), sizeof(tail));
  CHECK(tail[0] == launch.groups[0]);  // the product's own workgroups
  CHECK((tail[1] == 8 && tail[2] == 4 && tail[3] == 0));
  CHECK((tail[4] == (3u << 20) / 32 && tail[5] == (1u << 20) / 32 && tail[6] == 0));
  // An lm_head's weights alone are cut to kPrefetchBytes.
  std::vector<cg::PrefetchRegion> huge = {{0, 80u << 20}, {0, 8u << 20}};
  std::vector<uint8_t> push2(launch.push_constants.size());
  cg::add_prefetch(launch, src.workgroup_size[0], huge, push2);
  std::memcpy(tail, push2.data() + push2.size() - sizeof(tail), sizeof(tail));
  CHECK((tail[4] == cg::kPrefetchBytes / 32 && tail[5] == 0));
  uint64_t per_group = uint64_t{src.workgroup_size[0]} * 4;  // PF_LOADS sectors a lane
  CHECK(groups[0] == launch.groups[0] + (cg::kPrefetchBytes / 32 + per_group - 1) / per_group);
  CHECK(std::equal(push.begin(), push.end() - sizeof(tail), launch.push_constants.begin()));
  // A grid already at the limit every device supports brings nothing in.
  auto wide = g;
  wide.prefetch = true;
  wide.n = int64_t{1} << 22;
  auto probe = cg::qmv_key("bf16", wide, caps);
  wide.n =
      65535 * (int64_t{cg::render(probe, caps).workgroup_size[0]} / std::stol(probe.params["tpr"]) /
               std::stol(probe.params["ks"]) * std::stol(probe.params["nc"]));
  auto wide_key = cg::qmv_key("bf16", wide, caps);
  auto wide_src = cg::render(wide_key, caps);
  auto wide_launch = cg::qmv_launch(wide_key, wide_src, wide);
  REQUIRE(wide_launch.groups[0] == 65535);
  std::vector<uint8_t> push3(wide_launch.push_constants.size());
  auto wide_groups = cg::add_prefetch(wide_launch, wide_src.workgroup_size[0], regions, push3);
  std::memcpy(tail, push3.data() + push3.size() - sizeof(tail), sizeof(tail));
  CHECK(wide_groups[0] == 65535);
  CHECK((tail[4] == 0 && tail[5] == 0 && tail[6] == 0));
  // Several batches or 64-bit indices take no prefetch; a launch without it cannot take one.
  auto batched = g;
  batched.batches = 2;
  CHECK(cg::qmv_key("bf16", batched, caps).params["pf"] == "0");
  g.prefetch = false;
  auto plain = cg::qmv_key("bf16", g, caps);
  CHECK(plain.params["pf"] == "0");
  auto plain_src = cg::render(plain, caps);
  auto plain_launch = cg::qmv_launch(plain, plain_src, g);
  std::vector<uint8_t> small(plain_launch.push_constants.size());
  CHECK(plain_src.push_constant_bytes + 28 == src.push_constant_bytes);
  CHECK_THROWS_AS(cg::add_prefetch(plain_launch, 256, regions, small), std::invalid_argument);
}
