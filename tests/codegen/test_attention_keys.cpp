// The prefill (rows mode) tiles of the sdpa family: which tile each head dim and dtype gets
// on an NVIDIA-like device (the numbers the GPU benchmark runs), and that every chosen tile,
// for every head dim the kernels serve and on devices with 48, 32 and 16 KiB of shared
// memory, renders, compiles, and declares no more shared memory and invocations than the
// device allows (read back from the SPIR-V).
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/attention.h"
#include "codegen/codegen.h"

namespace cg = mlx::core::vulkan::codegen;

namespace {

cg::DeviceCaps device(uint32_t shared, uint32_t subgroup, bool shuffle) {
  cg::DeviceCaps caps;
  caps.subgroup_size = subgroup;
  caps.subgroup_shuffle = shuffle;
  caps.shader_int16 = true;
  caps.shader_int64 = true;
  caps.storage_8bit = true;
  caps.storage_16bit = true;
  caps.f16_hw_convert = true;
  caps.max_workgroup_invocations = shuffle ? 1024 : 128;
  caps.max_shared_memory = shared;
  return caps;
}

cg::AttentionGeometry prefill(int64_t d, int64_t dv, const std::string& mask = "causal") {
  cg::AttentionGeometry g;
  g.hkv = 8;
  g.groups = 4;
  g.lq = g.lkv = 512;
  g.d = d;
  g.dv = dv;
  g.q_si = d, g.q_sh = 512 * d, g.q_sb = 32 * 512 * d;
  g.k_sj = d, g.k_sh = 512 * d, g.k_sb = 8 * 512 * d;
  g.v_sj = dv, g.v_sh = 512 * dv, g.v_sb = 8 * 512 * dv;
  g.mask = mask;
  return g;
}

// The tile parameters of a rows key, "bq=64,bk=32,...". (Appended: GCC 12 reports a false
// -Wrestrict for "literal" + string.)
std::string tiles(const cg::KernelKey& key) {
  std::string out;
  for (const char* n : {"bq", "bk", "tk", "qh", "kvh", "sg", "vec"}) {
    out.append(out.empty() ? "" : ",").append(n).append("=").append(key.params.at(n));
  }
  return out;
}

// Bytes of Workgroup-storage variables of a kernel, its arrays sized with the kernel's
// specialization constants (the workgroup size), as the runtime checks them.
uint32_t shared_bytes(const cg::KernelKey& key, const cg::KernelSource& src) {
  return cg::workgroup_memory_bytes(cg::compile(key, src).words, src.spec_constants);
}

}  // namespace

TEST_CASE("sdpa prefill tiles on a 48 KiB, subgroup-32 device (the H100's numbers)") {
  auto caps = device(49152, 32, true);
  auto key = [&](const char* dt, int64_t d, int64_t dv) {
    return tiles(cg::attention_key(dt, prefill(d, dv), caps));
  };
  // 64 rows x 32 keys on 128 invocations; f32 tiles where they fit, else Q (then K/V) as
  // 16-bit bits; smaller row blocks for f32 d = 128 and d = 256.
  CHECK(key("f16", 64, 64) == "bq=64,bk=32,tk=4,qh=0,kvh=0,sg=1,vec=1");
  CHECK(key("f16", 128, 128) == "bq=64,bk=32,tk=4,qh=1,kvh=0,sg=1,vec=1");
  CHECK(key("bf16", 128, 128) == "bq=64,bk=32,tk=4,qh=1,kvh=0,sg=1,vec=1");
  CHECK(key("f16", 256, 256) == "bq=32,bk=32,tk=2,qh=1,kvh=1,sg=1,vec=1");
  CHECK(key("f32", 64, 64) == "bq=64,bk=32,tk=4,qh=0,kvh=0,sg=1,vec=1");
  CHECK(key("f32", 128, 128) == "bq=32,bk=32,tk=4,qh=0,kvh=0,sg=1,vec=1");
  CHECK(key("f32", 256, 256) == "bq=16,bk=16,tk=1,qh=0,kvh=0,sg=1,vec=1");
  auto g = prefill(128, 128);
  auto k = cg::attention_key("f16", g, caps);
  auto src = cg::render_attention(k, caps);
  CHECK(src.workgroup_size[0] == 128);
  // Q as 16-bit quads 64 x 33, K/V as f32 32 x 33, P 32 x 17: 41.5 KiB.
  CHECK(shared_bytes(k, src) == 64 * 33 * 8 + 32 * 33 * 16 + 32 * 17 * 16);
  auto launch = cg::attention_launch(k, src, g);
  CHECK(launch.groups[0] == 8);             // batch x KV heads
  CHECK(launch.groups[1] == 4 * 512 / 64);  // G * Lq rows in blocks of 64
}

TEST_CASE("sdpa prefill tiles fit the device for every head dim: render, compile, shared bytes") {
  struct Device {
    const char* name;
    cg::DeviceCaps caps;
  };
  const Device devices[] = {{"48 KiB sg 32", device(49152, 32, true)},
                            {"32 KiB sg 8", device(32768, 8, true)},
                            {"16 KiB, no shuffles", device(16384, 32, false)}};
  int compiled = 0;
  for (const auto& dev : devices) {
    for (int64_t d = 8; d <= 256; d += 8) {
      // dv = d, and a different dv on some dims (its own tile count and edge quads).
      std::vector<int64_t> dvs{d};
      if (d % 48 == 0) {
        dvs.push_back(d == 48 ? 256 : 40);
      }
      for (int64_t dv : dvs) {
        for (const char* dt : {"f16", "bf16", "f32"}) {
          auto g = prefill(d, dv, d % 16 == 0 ? "causal" : "add");
          g.mask_dtype = g.mask == "add" ? dt : "";
          g.k_offset = d % 32 == 8 ? 3 : 0;  // scalar loads (vec=0)
          auto key = cg::attention_key(dt, g, dev.caps);
          std::string what = std::string(dev.name).append(" ").append(key.canonical());
          CAPTURE(what);
          auto src = cg::render_attention(key, dev.caps);
          CHECK(shared_bytes(key, src) <= dev.caps.max_shared_memory);
          CHECK(src.workgroup_size[0] <= dev.caps.max_workgroup_invocations);
          ++compiled;
        }
      }
    }
  }
  CHECK(compiled >= 3 * 32 * 3);
}

TEST_CASE("sdpa rows keys reject tiles the template or device cannot run") {
  auto caps = device(32768, 8, true);
  auto key = cg::attention_key("f16", prefill(128, 128), caps);
  auto bad = [&](cg::KernelKey k, std::map<std::string, std::string> params) {
    for (auto& [name, value] : params) {
      k.params[name].swap(value);
    }
    return k;
  };
  CHECK_THROWS_AS(cg::render_attention(bad(key, {{"tk", "3"}}), caps), std::invalid_argument);
  CHECK_THROWS_AS(cg::render_attention(bad(key, {{"bq", "30"}}), caps), std::invalid_argument);
  CHECK_THROWS_AS(cg::render_attention(bad(key, {{"sg", "1"}}), device(32768, 4, true)),
                  std::invalid_argument);
  // 64 rows with f32 tiles of d = 128: 59 KiB.
  CHECK_THROWS_AS(cg::render_attention(bad(key, {{"bq", "64"}, {"qh", "0"}}), caps),
                  std::runtime_error);
  // 16-bit staging of f32 operands would round them.
  auto f32 = cg::attention_key("f32", prefill(128, 128), caps);
  CHECK_THROWS_AS(cg::render_attention(bad(f32, {{"qh", "1"}}), caps), std::invalid_argument);
}

TEST_CASE("sdpa decode keys compile and fit shared memory with and without subgroup shuffles") {
  // The vector mode keeps KPS keys per team in flight; without shuffles the team sums go
  // through WGS * RB * KPS floats of shared memory, which must still fit a 16 KiB device.
  struct Device {
    const char* name;
    cg::DeviceCaps caps;
  };
  const Device devices[] = {{"48 KiB sg 32", device(49152, 32, true)},
                            {"16 KiB, no shuffles", device(16384, 32, false)}};
  int compiled = 0;
  for (const auto& dev : devices) {
    for (int64_t d : {64, 128, 256}) {
      for (int64_t groups : {1, 2, 8}) {
        auto g = prefill(d, d, "none");
        g.groups = groups;
        g.lq = 1;
        g.lkv = 4096;
        g.q_si = d, g.q_sh = d, g.q_sb = 8 * groups * d;
        auto key = cg::attention_key("bf16", g, dev.caps);
        std::string what = std::string(dev.name).append(" ").append(key.canonical());
        CAPTURE(what);
        CHECK(key.params.at("mode") == "vector");
        auto src = cg::render_attention(key, dev.caps);
        CHECK(shared_bytes(key, src) <= dev.caps.max_shared_memory);
        // Head dim 256 with 8 rows does not fit 16 KiB without shuffles (16,448 bytes):
        // 4 rows a workgroup there.
        bool halved = d == 256 && groups == 8 && !dev.caps.subgroup_shuffle;
        CHECK(key.params.at("rb") == (halved ? "4" : std::to_string(groups == 2 ? 2 : groups)));
        ++compiled;
      }
    }
  }
  CHECK(compiled == 2 * 3 * 3);
}

TEST_CASE("sdpa decode step keys: params, compile, and shared memory within the estimate") {
  // fast::DecodeAttention's kernel (STEP 1): the vector key plus the rope's and norms'
  // numbers. attention_step_supported estimates its shared memory; the compiled module must
  // not need more, with and without subgroup shuffles.
  struct Device {
    const char* name;
    cg::DeviceCaps caps;
  };
  const Device devices[] = {{"48 KiB sg 32", device(49152, 32, true)},
                            {"16 KiB, no shuffles", device(16384, 32, false)}};
  int compiled = 0;
  for (const auto& dev : devices) {
    for (int64_t d : {64, 128, 256}) {
      for (int64_t groups : {1, 2, 8}) {
        auto g = prefill(d, d, "none");
        g.groups = groups;
        g.lq = 1;
        g.lkv = 300;
        g.q_si = d, g.q_sh = d, g.q_sb = 8 * groups * d;
        cg::AttentionStep st;
        st.cap = 512;
        st.q_norm = true;
        st.k_norm = d != 64;
        st.q_eps = 1e-6f;
        st.k_eps = 1e-6f;
        st.base = 1000000.0f;
        auto key = cg::attention_step_key("bf16", g, st, dev.caps);
        std::string what = std::string(dev.name).append(" ").append(key.canonical());
        CAPTURE(what);
        CHECK(key.params.at("step") == "1");
        CHECK(key.params.at("kn") == (d != 64 ? "1" : "0"));
        CHECK(key.params.at("qeps") == "358637bd");
        CHECK(key.params.at("rscale") == "3f800000");
        bool supported = cg::attention_step_supported(g, st, dev.caps);
        if (!supported) {
          // Only the largest rows on the small device may not fit.
          CHECK(dev.caps.max_shared_memory == 16384);
          CHECK(d == 256);
          continue;
        }
        auto src = cg::render_attention(key, dev.caps);
        // A split step (this g's 300 keys on 8 KV heads) merges in its last workgroups: the
        // output and the counters bind after the 12 others.
        CHECK(src.num_buffers == (key.params.at("split") == "2" ? 14 : 12));
        CHECK(shared_bytes(key, src) <= dev.caps.max_shared_memory);
        ++compiled;
      }
    }
  }
  CHECK(compiled >= 2 * 3 * 3 - 3);
  // A step key with a mask is refused.
  auto g = prefill(128, 128, "causal");
  g.lq = 1;
  g.lkv = 16;
  cg::AttentionStep st;
  st.cap = 16;
  CHECK_FALSE(cg::attention_step_supported(g, st, devices[0].caps));
  auto key = cg::attention_step_key("bf16", g, st, devices[0].caps);
  CHECK_THROWS_AS(cg::render_attention(key, devices[0].caps), std::invalid_argument);
}

TEST_CASE(
    "a decode step merges in its launch where a batch of 32 values an invocation holds its "
    "splits") {
  // Qwen3-8B's step (4 rows of 128 a KV head: 2 outputs an invocation, so 16 splits a
  // batch) merges 9 splits (512 keys) in the launch and 32 (4096 keys) in a merge launch;
  // the 0.6B's (2 rows: 32 splits a batch) merges 32 in the launch. The plain vector kernel
  // of the 8B's shape reads 32 splits a batch (64 values) and merges them in the launch.
  const auto caps = device(49152, 32, true);
  cg::AttentionStep st;
  st.cap = 8192;
  struct Case {
    int64_t groups, lkv;
    const char* step_split;
  };
  for (auto c : {Case{4, 512, "2"}, Case{4, 4096, "1"}, Case{2, 4096, "2"}}) {
    auto g = prefill(128, 128, "none");
    g.groups = c.groups;
    g.lq = 1;
    g.lkv = c.lkv;
    g.q_si = 128, g.q_sh = 128, g.q_sb = 8 * c.groups * 128;
    CAPTURE(c.groups);
    CAPTURE(c.lkv);
    auto key = cg::attention_step_key("bf16", g, st, caps);
    CHECK(key.params.at("split") == c.step_split);
    CHECK(cg::attention_key("bf16", g, caps).params.at("split") == "2");
    if (key.params.at("split") == "2") {
      int64_t mc = c.groups == 4 ? 16 : 32;
      CHECK(cg::render_attention(key, caps).glsl.find("#define MC " + std::to_string(mc) + "\n") !=
            std::string::npos);
    }
  }
}

TEST_CASE("a decode splits its keys into whole steps, about 256 workgroups in all") {
  // 8 KV heads, 4 query heads each, one query: 8 workgroups a split. Counted in 64-key
  // steps, no split takes more than the even share rounded up; a cache of at most 4 steps is
  // not split (its merge would cost more than it saves).
  auto g = prefill(128, 128, "none");
  g.lq = 1;
  for (auto [lkv, want] : {std::pair<int64_t, int64_t>{1, 1},
                           {128, 1},
                           {256, 1},
                           {257, 5},
                           {1024, 16},
                           {4096, 32},
                           {4224, 33},
                           {8192, 32},
                           {131072, 32}}) {
    g.lkv = lkv;
    CAPTURE(lkv);
    CHECK(cg::attention_splits(g) == want);
  }
  for (int64_t lkv = 1; lkv < 300000; lkv = lkv * 5 / 4 + 1) {
    g.lkv = lkv;
    CAPTURE(lkv);
    int64_t splits = cg::attention_splits(g);
    CHECK(splits * 8 <= 512);
    // No split's step count exceeds the even share of the steps rounded to whole steps.
    int64_t steps = (lkv + 63) / 64;
    int64_t per = (lkv + splits - 1) / splits;
    CHECK((per + 63) / 64 <= (steps + splits - 1) / splits);
  }
}

TEST_CASE("a decode launch moved to another key length equals the one planned for it") {
  // The launch memo keeps one vector, step or merge launch per split count; each step's key
  // length is written into it (set_attention_length). Moving must give exactly the launch
  // that planning for the new length gives.
  auto caps = device(49152, 32, true);
  auto g = prefill(128, 128, "none");
  g.groups = 2;
  g.lq = 1;
  g.q_si = 128, g.q_sh = 128, g.q_sb = 16 * 128;
  cg::AttentionStep st;
  st.cap = 8192;
  st.q_norm = st.k_norm = true;
  int moved = 0;
  for (auto [from, to] :
       {std::pair<int64_t, int64_t>{8, 72}, {300, 301}, {4096, 4000}, {520, 570}}) {
    auto a = g, b = g;
    a.lkv = from;
    b.lkv = to;
    CAPTURE(from);
    CAPTURE(to);
    REQUIRE(cg::attention_splits(a) == cg::attention_splits(b));
    auto key = cg::attention_key("bf16", a, caps);
    REQUIRE(key == cg::attention_key("bf16", b, caps));
    auto src = cg::render_attention(key, caps);
    auto launch = cg::attention_launch(key, src, a);
    cg::set_attention_length(launch, key, b);
    auto want = cg::attention_launch(key, src, b);
    CHECK(launch.push_constants == want.push_constants);
    CHECK(launch.groups == want.groups);

    auto skey = cg::attention_step_key("bf16", a, st, caps);
    auto ssrc = cg::render_attention(skey, caps);
    auto slaunch = cg::attention_step_launch(skey, ssrc, a, st);
    cg::set_attention_length(slaunch, skey, b);
    auto swant = cg::attention_step_launch(skey, ssrc, b, st);
    CHECK(slaunch.push_constants == swant.push_constants);
    CHECK(slaunch.groups == swant.groups);

    auto mkey = cg::attention_merge_key("bf16", a);
    auto msrc = cg::render_attention(mkey, caps);
    auto mlaunch = cg::attention_launch(mkey, msrc, a);
    cg::set_attention_length(mlaunch, mkey, b);
    auto mwant = cg::attention_launch(mkey, msrc, b);
    CHECK(mlaunch.push_constants == mwant.push_constants);
    CHECK(mlaunch.groups == mwant.groups);
    ++moved;
  }
  CHECK(moved == 4);
  // Prefill launches keep their length in the memo's signature: moving one is refused.
  auto p = prefill(128, 128);
  auto pkey = cg::attention_key("bf16", p, caps);
  auto plaunch = cg::attention_launch(pkey, cg::render_attention(pkey, caps), p);
  CHECK_THROWS_AS(cg::set_attention_length(plaunch, pkey, p), std::invalid_argument);
}

TEST_CASE("sdpa prefill takes cooperative matrices where the device multiplies the dtype") {
  auto caps = device(49152, 32, true);
  caps.shader_float16 = true;
  auto mode = [&](const std::string& dtype, const cg::AttentionGeometry& g) {
    return cg::attention_key(dtype, g, caps).params["mode"];
  };
  CHECK(mode("f16", prefill(128, 128)) == "rows");  // no cooperative matrices
  caps.cooperative_matrix = true;
  auto key = cg::attention_key("f16", prefill(128, 128), caps);
  CHECK(key.params["mode"] == "coop");
  CHECK(key.params["path"] == "nv");
  CHECK(mode("bf16", prefill(128, 128)) == "rows");  // bf16 needs the KHR path
  caps.cooperative_matrix_khr = true;
  caps.cooperative_matrix_bf16 = true;
  CHECK(cg::attention_key("f16", prefill(128, 128), caps).params["path"] == "khr");
  CHECK(mode("bf16", prefill(64, 64)) == "coop");
  CHECK(mode("f32", prefill(128, 128)) == "rows");
  CHECK(mode("f16", prefill(256, 256)) == "rows");  // past 128: the rows mode
  CHECK(mode("f16", prefill(80, 80)) == "coop");
  CHECK(mode("f16", prefill(72, 72)) == "rows");  // not a multiple of 16
  auto shifted = prefill(128, 128);
  shifted.k_offset = 4;  // rows not on 16 bytes
  CHECK(mode("f16", shifted) == "rows");
  // Every mask kind and sinks render and compile on both paths (the KHR module rewritten),
  // with the softmax through shared memory and, on NVIDIA's accumulator layout, in registers.
  for (bool nv_layout : {false, true}) {
    caps.coop_acc_nv_layout = nv_layout;
    for (const char* path : {"nv", "khr"}) {
      caps.cooperative_matrix_khr = std::string(path) == "khr";
      for (const char* mask : {"none", "causal", "bool", "add"}) {
        auto g = prefill(128, 64, mask);
        g.mask_dtype = std::string(mask) == "bool" ? "b" : std::string(mask) == "add" ? "f16" : "";
        g.sinks_dtype = "f16";
        auto k = cg::attention_key("f16", g, caps);
        REQUIRE(k.params["mode"] == "coop");
        CHECK(k.params["path"] == path);
        CHECK(k.params["sm"] == (nv_layout ? "reg" : "shared"));
        CAPTURE(k.canonical());
        auto src = cg::render(k, caps);
        CHECK(src.coop_khr == (std::string(path) == "khr"));
        // 128 rows (8 subgroups) with the register softmax, else 64 (4).
        CHECK(src.workgroup_size[0] == (nv_layout ? 256 : 128));
        CHECK(k.params["bq"] == (nv_layout ? "128" : "64"));
        auto mod = cg::compile(k, src);
        CHECK_FALSE(mod.words.empty());
        // The register softmax's two K/V buffers still fit NVIDIA's 48 KiB.
        CHECK(shared_bytes(k, src) <= caps.max_shared_memory);
      }
    }
  }
  // Every coop head dim compiles with either softmax within 48 KiB (at 16 the output's
  // staging is larger than the two K/V buffers).
  for (int64_t d = 16; d <= 128; d += 16) {
    for (bool nv_layout : {false, true}) {
      caps.coop_acc_nv_layout = nv_layout;
      auto k = cg::attention_key("f16", prefill(d, d), caps);
      REQUIRE(k.params["mode"] == "coop");
      CAPTURE(k.canonical());
      CHECK(shared_bytes(k, cg::render(k, caps)) <= caps.max_shared_memory);
    }
  }
  caps.coop_acc_nv_layout = true;
  // 128 rows a workgroup (8 subgroups) render for every head dim, with a 256-invocation
  // workgroup and arrays within 48 KiB; only with the register softmax.
  const uint32_t lanes = caps.max_workgroup_invocations;
  caps.max_workgroup_invocations = 128;
  CHECK(cg::attention_key("f16", prefill(128, 128), caps).params["bq"] == "64");
  caps.max_workgroup_invocations = lanes;
  for (int64_t d = 16; d <= 128; d += 16) {
    auto k = cg::attention_key("f16", prefill(d, d, "causal"), caps);
    REQUIRE(k.params["sm"] == "reg");
    CHECK(k.params["bq"] == "128");
    CAPTURE(k.canonical());
    auto src = cg::render(k, caps);
    CHECK(src.workgroup_size[0] == 256);
    CHECK_FALSE(cg::compile(k, src).words.empty());
    CHECK(shared_bytes(k, src) <= caps.max_shared_memory);
    k.params["sm"] = "shared";
    CHECK_THROWS_AS(cg::render(k, caps), std::invalid_argument);
  }
  // A register softmax needs the layout; a key without sm (older caches) is the shared one.
  auto reg = cg::attention_key("f16", prefill(128, 128), caps);
  REQUIRE(reg.params["sm"] == "reg");
  caps.coop_acc_nv_layout = false;
  CHECK_THROWS_AS(cg::render(reg, caps), std::runtime_error);
  reg.params.erase("sm");
  CHECK_THROWS_AS(cg::render(reg, caps), std::invalid_argument);  // 128 rows need sm=reg
  reg.params["bq"] = "64";
  CHECK_NOTHROW(cg::render(reg, caps));
  reg.params["sm"] = "registers";
  CHECK_THROWS_AS(cg::render(reg, caps), std::invalid_argument);
  // Without the capability the key does not render.
  auto k = cg::attention_key("bf16", prefill(128, 128), caps);
  caps.cooperative_matrix_bf16 = false;
  CHECK_THROWS_AS(cg::render(k, caps), std::runtime_error);
}

TEST_CASE(
    "a split decode merges in its last workgroups where one batch of loads holds its splits") {
  auto caps = device(49152, 32, true);
  auto decode = [](int64_t hkv, int64_t lkv) {
    auto g = prefill(128, 128, "none");
    g.hkv = hkv;
    g.lq = 1;
    g.lkv = lkv;
    g.q_si = 128, g.q_sh = 128, g.q_sb = 4 * hkv * 128;
    g.k_sb = g.v_sb = hkv * lkv * 128;
    g.k_sh = g.v_sh = lkv * 128;
    return g;
  };
  CHECK(cg::attention_key("f16", decode(8, 128), caps).params.at("split") == "0");  // one chunk
  // 4 rows of head dim 128 on 8 teams of 32 lanes: 2 outputs an invocation, 32 splits a batch.
  REQUIRE(cg::merge_splits_per_batch(4, 128, 32, false) == 32);
  auto g = decode(8, 8192);  // 32 splits of 256 keys
  g.out_offset = 96;         // the scratch
  g.fin_offset = 200;        // the output
  REQUIRE(cg::attention_splits(g) == 32);
  REQUIRE(cg::attention_merge_fits(g));
  auto key = cg::attention_key("f16", g, caps);
  REQUIRE(key.params.at("split") == "2");
  auto src = cg::render_attention(key, caps);
  // q, k, v, mask, sinks, scratch, then the output and the counters; fin_offset last.
  CHECK(src.num_buffers == 8);
  auto launch = cg::attention_launch(key, src, g);
  REQUIRE(launch.push_constants.size() == src.push_constant_bytes);
  int32_t last;
  std::memcpy(&last, launch.push_constants.data() + launch.push_constants.size() - 4, 4);
  CHECK(last == 200);
  CHECK(launch.groups[2] == cg::attention_splits(g));
  // More splits than a batch (one KV head: 128 splits): the merge launch.
  auto one_head = decode(1, 8192);
  REQUIRE(cg::attention_splits(one_head) == 128);
  CHECK(cg::attention_key("f16", one_head, caps).params.at("split") == "1");
  // The same key with split=1 keeps the merge launch's six bindings.
  auto one = key;
  one.params["split"] = "1";
  auto src1 = cg::render_attention(one, caps);
  CHECK(src1.num_buffers == 6);
  CHECK(src1.push_constant_bytes + 4 == src.push_constant_bytes);
  one.params["split"] = "3";
  CHECK_THROWS_AS(cg::render_attention(one, caps), std::invalid_argument);
  // A decode splits only below 256 row blocks, so the counters (kMergeSlots) always hold a
  // split's row blocks: a grid that wide is not split at all.
  auto wide = decode(cg::kMergeSlots / 2, 8192);
  CHECK(cg::attention_splits(wide) == 1);
  CHECK_FALSE(cg::attention_merge_fits(wide));
  CHECK(cg::attention_key("f16", wide, caps).params.at("split") == "0");
  // The batch never overruns the teams' arrays (2 rb MC <= 8 dv) nor 64 values in flight
  // (32 in a decode step's kernel).
  for (bool step : {false, true}) {
    for (int64_t rb : {1, 2, 4, 8}) {
      for (int64_t dv : {8, 64, 128, 256}) {
        for (int64_t tpr : {8, 16, 32}) {
          int64_t mc = cg::merge_splits_per_batch(rb, dv, tpr, step);
          int64_t outputs = (rb * dv + tpr * 8 - 1) / (tpr * 8);
          CAPTURE(step);
          CAPTURE(rb);
          CAPTURE(dv);
          CAPTURE(tpr);
          CHECK(mc >= 1);
          CHECK(2 * rb * mc <= 8 * dv);
          CHECK(outputs * mc <= (step ? 32 : 64));
          CHECK(mc <= 32);
        }
      }
    }
  }
}
