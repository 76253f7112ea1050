// The qmvc family (codegen/qmv_coop.cpp, templates/qmv_coop.glsl): when a quantized product
// of a few rows takes cooperative matrices, its key, and that every variant renders and
// compiles on both paths (the KHR one through the SPIR-V rewrite). The kernels themselves
// run only where a device has cooperative matrices (tests/gpu_diff/test_quantized.cpp on
// the GPU machine); lavapipe has none.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "codegen/codegen.h"
#include "codegen/matmul.h"
#include "nvidia_caps.h"

namespace cg = mlx::core::vulkan::codegen;

namespace {

cg::DeviceCaps coop_caps(bool nv, bool khr, bool bf16) {
  return mlx_test::nvidia_like(nv, khr, bf16);
}

cg::MatmulGeometry rows(int64_t m, int64_t n, int64_t k, int bits = 4, int gs = 64) {
  return mlx_test::quant_rows(m, n, k, bits, gs);
}

}  // namespace

TEST_CASE("qmvc takes 1 to 16 rows of an aligned f16 or bf16 product on cooperative matrices") {
  auto all = coop_caps(true, true, true);
  CHECK(cg::qmvc_applies("f16", rows(1, 4096, 4096), all));  // qmvc_preferred decides
  CHECK(cg::qmvc_applies("f16", rows(2, 4096, 4096), all));
  CHECK_FALSE(cg::qmvc_applies("f16", rows(0, 4096, 4096), all));
  CHECK(cg::qmvc_applies("bf16", rows(16, 4096, 4096), all));
  CHECK_FALSE(cg::qmvc_applies("f16", rows(17, 4096, 4096), all));
  CHECK_FALSE(cg::qmvc_applies("f32", rows(4, 4096, 4096), all));
  CHECK_FALSE(cg::qmvc_applies("f16", rows(4, 4096, 4096 + 32), all));  // k % 64
  auto misaligned = rows(4, 4096, 4096);
  misaligned.a_offset = 4;
  CHECK_FALSE(cg::qmvc_applies("f16", misaligned, all));
  auto fused = rows(4, 4096, 4096);
  fused.residual = true;
  CHECK_FALSE(cg::qmvc_applies("f16", fused, all));
  auto untransposed = rows(4, 4096, 4096);
  untransposed.b_t = false;
  CHECK_FALSE(cg::qmvc_applies("f16", untransposed, all));
  // bf16 only on the KHR extension with bf16; nothing without cooperative matrices or on
  // 64-lane subgroups.
  CHECK(cg::qmvc_applies("f16", rows(4, 4096, 4096), coop_caps(true, false, false)));
  CHECK_FALSE(cg::qmvc_applies("bf16", rows(4, 4096, 4096), coop_caps(true, true, false)));
  CHECK_FALSE(cg::qmvc_applies("f16", rows(4, 4096, 4096), coop_caps(false, false, false)));
  auto wave64 = all;
  wave64.subgroup_size = 64;
  CHECK_FALSE(cg::qmvc_applies("f16", rows(4, 4096, 4096), wave64));

  auto key = cg::qmvc_key("f16", rows(8, 4096, 14336), all);
  CHECK(
      key.canonical() ==
      "qmvc:bits=4,dq=convert,dtype=f16,frag=n16,gs=64,idx=32,kc=64,path=khr,rows=16,sg=8,wvec=1");
  // dq=magic where the accumulators have NVIDIA's layout: 4 bits, with the 64-value chunk
  // inside one group, at most 8 rows (any for bf16, and for f16 whose W rows start on 16
  // bytes: its fragments are built in registers); rows=8 skips the accumulator rows 8..15.
  auto nv_layout = all;
  nv_layout.coop_acc_nv_layout = true;
  auto magic = cg::qmvc_key("f16", rows(8, 4096, 14336), nv_layout);
  CHECK(magic.canonical() ==
        "qmvc:bits=4,dq=magic,dtype=f16,frag=n16,gs=64,idx=32,kc=64,path=khr,rows=8,sg=8,wvec=1");
  CHECK(cg::qmvc_key("f16", rows(9, 4096, 14336), nv_layout).params.at("dq") == "magic");
  CHECK(cg::qmvc_key("f16", rows(9, 4096, 14336), nv_layout).params.at("rows") == "16");
  auto unaligned = rows(9, 4096, 14336);
  unaligned.b_offset = 2;  // W's rows off 16 bytes: the stages, whose 16-row magic kernel is slow
  CHECK(cg::qmvc_key("f16", unaligned, nv_layout).params.at("dq") == "convert");
  CHECK(cg::qmvc_key("bf16", rows(12, 4096, 14336), nv_layout).canonical() ==
        "qmvc:bits=4,dq=magic,dtype=bf16,frag=n16,gs=64,idx=32,kc=64,path=khr,rows=16,sg=8,wvec=1");
  // Preferred to qmv from 3 rows with dq=magic, else from 5 (f16) or 6 (bf16).
  CHECK_FALSE(cg::qmvc_preferred("f16", rows(2, 4096, 14336), nv_layout));
  CHECK(cg::qmvc_preferred("f16", rows(3, 4096, 14336), nv_layout));
  CHECK(cg::qmvc_preferred("bf16", rows(3, 4096, 14336), nv_layout));
  CHECK(cg::qmvc_preferred("f16", rows(4, 4096, 14336), nv_layout));
  CHECK_FALSE(cg::qmvc_preferred("f16", rows(4, 4096, 14336), all));
  CHECK(cg::qmvc_preferred("f16", rows(5, 4096, 14336), all));
  CHECK_FALSE(cg::qmvc_preferred("bf16", rows(5, 4096, 14336), all));
  CHECK(cg::qmvc_preferred("f16", rows(4, 4096, 14336, 3), nv_layout) == false);
  CHECK(cg::qmvc_key("bf16", rows(1, 4096, 14336), nv_layout).params.at("dq") == "magic");
  CHECK(cg::qmvc_key("f16", rows(1, 4096, 14336, 8), nv_layout).params.at("dq") == "convert");
  CHECK(cg::qmvc_key("bf16", rows(1, 4096, 14336, 8), nv_layout).params.at("dq") == "convert");
  CHECK(cg::qmvc_key("f16", rows(1, 4096, 14336, 3), nv_layout).params.at("dq") == "convert");
  CHECK(cg::qmvc_key("f16", rows(1, 4096, 14336, 4, 32), nv_layout).params.at("dq") == "convert");
  CHECK(
      cg::qmvc_key("f16", rows(8, 4096, 14336), coop_caps(true, false, false)).params.at("path") ==
      "nv");
  CHECK(cg::qmvc_key("f16", rows(8, 4096, 14336, 3, 32), all).params.at("wvec") == "0");
  // frag=n8 (W as A, x as B in 16 x 8 fragments) where the f16 path multiplies 16x8x16 and
  // the fragments are built in registers: f16, dq=magic, W's rows on 16 bytes.
  auto n8 = nv_layout;
  n8.coop_f16_n8 = true;
  CHECK(cg::qmvc_key("f16", rows(8, 4096, 14336), n8).params.at("frag") == "n8");
  CHECK(cg::qmvc_key("f16", rows(16, 4096, 14336), n8).params.at("frag") == "n8");
  CHECK(cg::qmvc_key("f16", unaligned, n8).params.at("frag") == "n16");
  CHECK(cg::qmvc_key("bf16", rows(8, 4096, 14336), n8).params.at("frag") == "n16");
  n8.coop_bf16_n8 = true;  // bf16 on the KHR path with its 16x8x16 shape
  CHECK(cg::qmvc_key("bf16", rows(8, 4096, 14336), n8).params.at("frag") == "n8");
  CHECK(cg::qmvc_key("bf16", rows(12, 4096, 14336), n8).params.at("frag") == "n8");
  CHECK(cg::qmvc_key("bf16", unaligned, n8).params.at("frag") == "n16");
  CHECK(cg::qmvc_key("f16", rows(8, 4096, 14336, 8), n8).params.at("frag") == "n16");
  CHECK(cg::qmvc_key("f16", rows(8, 4096, 14336), nv_layout).params.at("frag") == "n16");
}

TEST_CASE("every qmvc variant renders and compiles, the KHR path through the rewrite") {
  auto all = coop_caps(true, true, true);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int gs : {32, 64, 128}) {
      for (const char* dtype : {"f16", "bf16"}) {
        for (bool nv : {true, false}) {
          for (int layout : {0, 1, 2}) {  // opaque, NVIDIA's, NVIDIA's with 16x8x16
            if (nv && std::string(dtype) == "bf16") {
              continue;
            }
            auto caps = nv ? coop_caps(true, false, false) : all;
            caps.coop_acc_nv_layout = layout > 0;
            caps.coop_f16_n8 = layout == 2;
            caps.coop_bf16_n8 = layout == 2;
            for (int64_t m : {5, 12}) {
              auto g = rows(m, 100, 256, bits, gs);
              REQUIRE(cg::qmvc_applies(dtype, g, caps));
              auto key = cg::qmvc_key(dtype, g, caps);
              CAPTURE(key.canonical());
              auto src = cg::render(key, caps);
              CHECK(src.coop_khr == !nv);
              CHECK(src.workgroup_size[0] == 256);
              auto mod = cg::compile(key, src);
              CHECK(!mod.words.empty());
              auto launch = cg::qmvc_launch(key, src, g);
              CHECK(launch.groups[0] == 7);  // 100 columns, 16 a workgroup
            }
          }
        }
      }
    }
  }
  // A key that does not match its geometry, and malformed keys, are refused.
  auto g = rows(5, 100, 256);
  auto key = cg::qmvc_key("f16", g, all);
  auto src = cg::render(key, all);
  CHECK_THROWS_AS(cg::qmvc_launch(key, src, rows(20, 100, 256)), std::invalid_argument);
  auto with = [&](const std::string& dtype, const std::string& name, const std::string& value) {
    auto k = cg::qmvc_key(dtype, g, all);
    k.params.insert_or_assign(name, value);
    return k;
  };
  CHECK_THROWS_AS(cg::render(with("f16", "sg", "3"), all), std::invalid_argument);
  auto bad = with("bf16", "path", "nv");  // bf16 has no NV path
  CHECK_THROWS_AS(cg::render(bad, all), std::invalid_argument);
  CHECK_THROWS_AS(cg::render(key, coop_caps(false, false, false)), std::runtime_error);
  // dq=magic needs NVIDIA's accumulator layout, 4 bits and rows 8 or 16.
  auto nv_layout = all;
  nv_layout.coop_acc_nv_layout = true;
  auto magic = cg::qmvc_key("f16", g, nv_layout);
  REQUIRE(magic.params.at("dq") == "magic");
  CHECK_THROWS_AS(cg::render(magic, all), std::runtime_error);
  auto changed = [&](const std::string& name, const std::string& value) {
    auto k = magic;
    k.params.insert_or_assign(name, value);
    return k;
  };
  CHECK_THROWS_AS(cg::render(changed("bits", "3"), nv_layout), std::invalid_argument);
  CHECK_THROWS_AS(cg::render(changed("rows", "4"), nv_layout), std::invalid_argument);
  CHECK_THROWS_AS(cg::qmvc_launch(magic, cg::render(magic, nv_layout), rows(12, 100, 256)),
                  std::invalid_argument);  // rows=8 planned for 5 rows
  // frag=n8 needs the device's 16x8x16 shape, and f16 with dq=magic and wvec=1.
  CHECK_THROWS_AS(cg::render(changed("frag", "n8"), nv_layout), std::runtime_error);
  auto n8 = nv_layout;
  n8.coop_f16_n8 = true;
  CHECK_NOTHROW(cg::render(changed("frag", "n8"), n8));
  CHECK_THROWS_AS(cg::render(changed("frag", "n4"), n8), std::invalid_argument);
  // Chunks loaded ahead: 3 sets only for f16 fragments built in registers at <= 8 rows.
  auto sets = [](const cg::KernelSource& s) {
    for (const auto& d : s.defines) {
      if (d.rfind("SETS ", 0) == 0) {
        return d.substr(5);
      }
    }
    return std::string("none");
  };
  auto aligned = rows(5, 100, 256);
  auto frag8 = cg::qmvc_key("f16", aligned, n8);
  REQUIRE(frag8.params.at("frag") == "n8");
  REQUIRE(frag8.params.at("rows") == "8");
  CHECK(sets(cg::render(frag8, n8)) == "3");
  CHECK(sets(cg::render(cg::qmvc_key("f16", rows(12, 100, 256), n8), n8)) == "2");
  CHECK(sets(cg::render(cg::qmvc_key("bf16", aligned, n8), n8)) == "2");
  CHECK(sets(cg::render(cg::qmvc_key("f16", rows(5, 100, 256, 8, 64), n8), n8)) == "2");
  auto bf16_n8 = cg::qmvc_key("bf16", g, n8);
  bf16_n8.params.insert_or_assign("frag", "n8");
  CHECK_THROWS_AS(cg::render(bf16_n8, n8), std::runtime_error);  // no bf16 16x8x16
  n8.coop_bf16_n8 = true;
  CHECK_NOTHROW(cg::render(bf16_n8, n8));
  auto convert_n8 = changed("frag", "n8");
  convert_n8.params.insert_or_assign("dq", "convert");
  convert_n8.params.insert_or_assign("rows", "16");
  CHECK_THROWS_AS(cg::render(convert_n8, n8), std::invalid_argument);
}

TEST_CASE("bf16 fragments built element by element keep their bits through the KHR rewrite") {
  // qmvc's bf16 dq=magic kernel with W's rows on 16 bytes writes fragment elements one by
  // one (DQ_FRAG) as f16s holding bf16 bits; the rewrite must turn those element pointers
  // into bf16 pointers and bitcast every value stored through them.
  auto caps = coop_caps(true, true, true);
  caps.coop_acc_nv_layout = true;
  auto key = cg::qmvc_key("bf16", rows(8, 4096, 14336), caps);
  REQUIRE(key.params.at("dq") == "magic");
  REQUIRE(key.params.at("wvec") == "1");
  auto src = cg::render(key, caps);
  REQUIRE(src.coop_khr);
  auto words = cg::compile(key, src).words;
  REQUIRE(words.size() > 5);
  constexpr uint32_t kOpTypeFloat = 22, kOpTypePointer = 32, kOpStore = 62, kOpAccessChain = 65,
                     kOpBitcast = 124, kOpTypeMatrixNV = 5358;
  uint32_t bf16 = 0;
  std::map<uint32_t, uint32_t> pointer_to;  // pointer type -> pointee
  std::map<uint32_t, uint32_t> chain_type;  // access chain result -> its pointer type
  std::map<uint32_t, uint32_t> bitcast_type;
  size_t stores = 0, bitcast_stores = 0, nv_types = 0;
  for (size_t at = 5; at < words.size();) {
    uint32_t op = words[at] & 0xFFFF, count = words[at] >> 16;
    REQUIRE(count > 0);
    const uint32_t* w = words.data() + at;
    if (op == kOpTypeFloat && count == 4 && w[2] == 16 && w[3] == 0) {
      bf16 = w[1];  // the BFloat16KHR encoding
    } else if (op == kOpTypePointer) {
      pointer_to[w[1]] = w[3];
    } else if (op == kOpAccessChain) {
      chain_type[w[2]] = w[1];
    } else if (op == kOpBitcast) {
      bitcast_type[w[2]] = w[1];
    } else if (op == kOpTypeMatrixNV) {
      ++nv_types;
    } else if (op == kOpStore && chain_type.count(w[1]) && bf16 != 0 &&
               pointer_to[chain_type[w[1]]] == bf16) {
      ++stores;
      bitcast_stores += bitcast_type.count(w[2]) && bitcast_type[w[2]] == bf16 ? 1 : 0;
    }
    at += count;
  }
  CHECK(nv_types == 0);
  CHECK(bf16 != 0);
  CHECK(stores > 0);
  CHECK(bitcast_stores == stores);
}
