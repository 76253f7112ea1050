// elementwise_key (layout classification) and elementwise_launch (push constants, meta
// buffer, group counts).
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/elementwise.h"

using namespace mlx::core::vulkan::codegen;

namespace {

DeviceCaps full_caps() {
  DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = caps.shader_int64 = true;
  caps.max_workgroup_invocations = 1024;
  caps.fingerprint = "test";
  return caps;
}

ElementwiseGeometry geom(std::vector<int64_t> shape, std::vector<std::vector<int64_t>> strides,
                         std::vector<uint64_t> offsets = {}, uint64_t out_offset = 0) {
  ElementwiseGeometry g;
  g.shape = std::move(shape);
  g.in_strides = std::move(strides);
  g.in_offsets = offsets.empty() ? std::vector<uint64_t>(g.in_strides.size(), 0) : offsets;
  g.out_offset = out_offset;
  return g;
}

std::string layout_of(const KernelKey& k) {
  std::string s = k.params.at("layout");
  if (k.params.count("rank")) {
    s += "/" + k.params.at("rank");
  }
  return s + "/" + k.params.at("idx");
}

std::string binary_layout(const ElementwiseGeometry& g) {
  return layout_of(elementwise_key("binary", "Add", {"f32", "f32"}, "f32", g));
}

std::vector<int64_t> words(const std::vector<uint8_t>& bytes, bool w64) {
  std::vector<int64_t> out;
  size_t w = w64 ? 8 : 4;
  for (size_t i = 0; i + w <= bytes.size(); i += w) {
    if (w64) {
      int64_t v;
      std::memcpy(&v, bytes.data() + i, 8);
      out.push_back(v);
    } else {
      int32_t v;
      std::memcpy(&v, bytes.data() + i, 4);
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("elementwise_key picks s/c/g per input, the rank class and the index width") {
  // Contiguous, scalar-broadcast, 0-d.
  CHECK(binary_layout(geom({4, 5}, {{5, 1}, {5, 1}})) == "cc/32");
  CHECK(binary_layout(geom({4, 5}, {{5, 1}, {0, 0}})) == "cs/32");
  CHECK(binary_layout(geom({}, {{}, {}})) == "ss/32");
  CHECK(binary_layout(geom({0, 3}, {{3, 1}, {1, 0}})) == "ss/32");  // empty: nothing to read
  // Transposed and row-broadcast inputs are strided; ranks 1-3 are specialized.
  CHECK(binary_layout(geom({4, 5}, {{1, 4}, {5, 1}})) == "gc/2/32");
  CHECK(binary_layout(geom({4, 5}, {{0, 1}, {5, 1}})) == "gc/2/32");
  CHECK(binary_layout(geom({6}, {{2}, {1}})) == "gc/1/32");
  CHECK(binary_layout(geom({2, 3, 4}, {{1, 2, 6}, {12, 4, 1}})) == "gc/3/32");
  CHECK(binary_layout(geom({2, 3, 4, 5}, {{60, 20, 5, 1}, {1, 2, 6, 24}})) == "cg/n/32");
  // Extent-1 dims are dropped and mergeable dims merged, for every input together.
  CHECK(binary_layout(geom({1, 5, 1}, {{99, 1, 7}, {0, 1, 0}})) == "cc/32");
  CHECK(binary_layout(geom({2, 3, 4}, {{12, 4, 1}, {0, 0, 0}})) == "cs/32");
  CHECK(binary_layout(geom({2, 3, 4}, {{24, 4, 1}, {12, 4, 1}})) == "gc/2/32");
  // Negative strides (reversed views).
  CHECK(binary_layout(geom({5}, {{-1}, {1}}, {4, 0})) == "gc/1/32");
  // 64-bit indexing once any index can pass 2^31 - 1.
  CHECK(binary_layout(geom({3000000000}, {{1}, {1}})) == "cc/64");
  CHECK(binary_layout(geom({10}, {{1}, {1}}, {2147483640, 0})) == "cc/64");
  CHECK(binary_layout(geom({10}, {{1}, {1}}, {2147483637, 0})) == "cc/32");
  CHECK(binary_layout(geom({3, 2}, {{1073741824, 1}, {2, 1}})) == "gc/2/64");
  CHECK(binary_layout(geom({10}, {{1}, {1}}, {}, 2147483640)) == "cc/64");

  KernelKey k =
      elementwise_key("select", "Select", {"b", "f16", "f16"}, "f16", geom({8}, {{1}, {0}, {1}}));
  CHECK(k.canonical() == "select:idx=32,in=b.f16.f16,layout=csc,op=Select,out=f16");
}

TEST_CASE("elementwise_key rejects inconsistent descriptions") {
  CHECK_THROWS_AS(elementwise_key("binary", "Add", {"f32"}, "f32", geom({4}, {{1}})),
                  std::invalid_argument);
  CHECK_THROWS_AS(elementwise_key("binary", "Add", {"f32", "f32"}, "f32", geom({4}, {{1}})),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      elementwise_key("binary", "Add", {"f32", "f32"}, "f32", geom({4, 2}, {{1}, {2, 1}})),
      std::invalid_argument);
  CHECK_THROWS_AS(elementwise_key("ternary", "Add", {"f32"}, "f32", geom({4}, {{1}})),
                  std::invalid_argument);
  CHECK_THROWS_AS(elementwise_key("unary", "Exp", {"f32"}, "f32", geom({-1}, {{1}})),
                  std::invalid_argument);
}

TEST_CASE("elementwise_launch packs size and offsets for contiguous inputs") {
  auto g = geom({1000}, {{1}, {0}}, {7, 3}, 11);
  KernelKey key = elementwise_key("binary", "Multiply", {"f32", "f32"}, "f32", g);
  KernelSource src = render(key, full_caps());
  Launch l = elementwise_launch(key, src, g);
  CHECK(src.push_constant_bytes == 16);
  CHECK(words(l.push_constants, false) == std::vector<int64_t>{1000, 11, 7, 3});
  CHECK(l.meta.empty());
  CHECK(src.workgroup_size[0] == 128);
  CHECK(src.spec_constants.at(1) == 4);                 // elements per invocation for f32
  CHECK(l.groups == std::array<uint32_t, 3>{2, 1, 1});  // ceil(1000 / (128 * 4))
}

TEST_CASE("elementwise_launch packs dims and strides of strided inputs (ranks 1-3)") {
  // rank 2: size, out_offset, in offsets, dim1, then the strides of each g input.
  auto g2 = geom({4, 5}, {{1, 4}, {5, 1}}, {2, 0});
  KernelKey k2 = elementwise_key("binary", "Add", {"i32", "i32"}, "i32", g2);
  Launch l2 = elementwise_launch(k2, render(k2, full_caps()), g2);
  CHECK(words(l2.push_constants, false) == std::vector<int64_t>{20, 0, 2, 0, 5, 1, 4});

  // rank 3 with a negative stride; dims 1 and 2 are packed.
  auto g3 = geom({2, 3, 4}, {{1, -2, 6}}, {4});
  KernelKey k3 = elementwise_key("unary", "Abs", {"f32"}, "f32", g3);
  CHECK(layout_of(k3) == "g/3/32");
  Launch l3 = elementwise_launch(k3, render(k3, full_caps()), g3);
  CHECK(words(l3.push_constants, false) == std::vector<int64_t>{24, 0, 4, 3, 4, 1, -2, 6});

  // rank 1, 64-bit: every field takes 8 bytes.
  auto g1 = geom({3}, {{1073741824}}, {0});
  KernelKey k1 = elementwise_key("copy", "Copy", {"u8"}, "f32", g1);
  CHECK(layout_of(k1) == "g/1/64");
  KernelSource s1 = render(k1, full_caps());
  Launch l1 = elementwise_launch(k1, s1, g1);
  CHECK(s1.push_constant_bytes == 32);
  CHECK(words(l1.push_constants, true) == std::vector<int64_t>{3, 0, 0, 1073741824});
}

TEST_CASE("elementwise_launch puts shape and strides of the N-d path in the meta buffer") {
  auto g = geom({2, 3, 4, 5}, {{60, 20, 5, 1}, {1, 2, 6, 24}}, {0, 1});
  KernelKey key = elementwise_key("binary", "Subtract", {"f32", "f32"}, "f32", g);
  KernelSource src = render(key, full_caps());
  CHECK(src.num_buffers == 4);  // two inputs, output, meta
  Launch l = elementwise_launch(key, src, g);
  CHECK(words(l.push_constants, false) == std::vector<int64_t>{120, 0, 0, 1, 4});
  CHECK(words(l.meta, false) == std::vector<int64_t>{2, 3, 4, 5, 60, 20, 5, 1, 1, 2, 6, 24});
}

TEST_CASE("large launches split over y (and z) with no dimension above 65535") {
  auto g = geom({100000000}, {{1}, {1}});
  KernelKey key = elementwise_key("binary", "Add", {"f32", "f32"}, "f32", g);
  KernelSource src = render(key, full_caps());
  Launch l = elementwise_launch(key, src, g);
  uint64_t needed = (100000000 + 511) / 512;  // 128 invocations x 4 elements
  CHECK(l.groups[0] <= 65535);
  CHECK(l.groups[1] > 1);
  CHECK(l.groups[2] == 1);
  uint64_t total = uint64_t(l.groups[0]) * l.groups[1] * l.groups[2];
  CHECK(total >= needed);
  CHECK(total - needed < l.groups[1]);  // at most one partly used row of groups per y
  MESSAGE("n = 1e8: groups " << l.groups[0] << " x " << l.groups[1] << " x " << l.groups[2]);

  // One element per group forces a z split: 2^32 - 1 elements need 4294967295 groups.
  DeviceCaps tiny = full_caps();
  tiny.max_workgroup_invocations = 1;
  auto huge = geom({4294967295}, {{1}});
  KernelKey hk = elementwise_key("unary", "Negative", {"f32"}, "f32", huge);
  KernelSource hs = render(hk, tiny);
  hs.spec_constants[1] = 1;  // the launch follows the source's elements per invocation
  Launch hl = elementwise_launch(hk, hs, huge);
  CHECK(hl.groups[2] == 2);
  CHECK(hl.groups[0] <= 65535);
  CHECK(hl.groups[1] <= 65535);
  CHECK(uint64_t(hl.groups[0]) * hl.groups[1] * hl.groups[2] >= 4294967295ull);

  // Narrow dtypes do more elements per invocation (spec constant 1).
  auto g8 = geom({100000}, {{1}});
  KernelKey k8 = elementwise_key("unary", "Negative", {"i8"}, "i8", g8);
  KernelSource s8 = render(k8, full_caps());
  CHECK(s8.spec_constants.at(1) == 16);
  CHECK(elementwise_launch(k8, s8, g8).groups == std::array<uint32_t, 3>{49, 1, 1});

  // Nothing to do: zero groups.
  auto g0 = geom({0}, {{1}});
  KernelKey k0 = elementwise_key("unary", "Negative", {"f32"}, "f32", g0);
  CHECK(elementwise_launch(k0, render(k0, full_caps()), g0).groups[0] == 0);
}

TEST_CASE("elementwise_launch refuses a geometry that does not match the key") {
  auto g = geom({4, 5}, {{5, 1}});
  KernelKey key = elementwise_key("unary", "Exp", {"f32"}, "f32", g);
  KernelSource src = render(key, full_caps());
  CHECK_THROWS_AS(elementwise_launch(key, src, geom({4, 5}, {{1, 4}})), std::invalid_argument);
  // A binding past 2^32 elements cannot be indexed.
  auto big = geom({10}, {{1}}, {4294967290ull});
  KernelKey bk = elementwise_key("unary", "Exp", {"f32"}, "f32", big);
  CHECK_THROWS_AS(elementwise_launch(bk, render(bk, full_caps()), big), std::invalid_argument);
}

namespace {

// The "vec" parameter elementwise_key picks ("" for the scalar path), with 32-byte
// aligned bindings unless `alignment` says otherwise.
std::string vec_of(const std::string& family, const std::vector<std::string>& in,
                   const std::string& out, ElementwiseGeometry g, uint32_t alignment = 32) {
  g.binding_alignment = alignment;
  std::string op = family == "copy" ? "Copy" : family == "select" ? "Select" : "Add";
  KernelKey k = elementwise_key(family, op, in, out, g);
  return k.params.count("vec") ? k.params.at("vec") : "";
}

}  // namespace

TEST_CASE("elementwise_key picks the vector path only where every operand reads whole vectors") {
  auto ff = std::vector<std::string>{"f32", "f32"};
  // Contiguous and scalar operands; the width is 16 bytes of the widest dtype, at least
  // 4 bytes of the narrowest.
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {0}})) == "4");
  CHECK(vec_of("binary", {"bf16", "bf16"}, "bf16", geom({1000}, {{1}, {1}})) == "8");
  CHECK(vec_of("binary", {"u8", "u8"}, "u8", geom({1000}, {{1}, {1}})) == "16");
  CHECK(vec_of("binary", {"i64", "i64"}, "i64", geom({1000}, {{1}, {1}})) == "2");
  CHECK(vec_of("binary", {"i64", "i64"}, "b", geom({1000}, {{1}, {1}})) == "4");
  CHECK(vec_of("copy", {"f32"}, "bf16", geom({1000}, {{1}})) == "4");
  CHECK(vec_of("select", {"b", "f16", "f16"}, "f16", geom({1000}, {{1}, {1}, {0}})) == "8");
  CHECK(vec_of("binary", ff, "f32", geom({3}, {{1}, {1}})) == "4");  // only a partial vector
  // Bindings must start 32-byte aligned; vectors must start at multiples of the width.
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {1}}), 16) == "");
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {1}}, {8, 4})) == "4");
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {1}}, {2, 0})) == "");
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {0}}, {0, 3})) == "4");  // a scalar
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {1}}, {}, 4)) == "4");
  CHECK(vec_of("binary", ff, "f32", geom({1000}, {{1}, {1}}, {}, 6)) == "");
  // Strided inputs: inner extent a multiple of the width, inner stride 1 (aligned offset
  // and outer strides) or 0 (one element for all lanes, any offset).
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{64, 1}, {0, 1}})) == "4");
  CHECK(vec_of("binary", ff, "f32", geom({8, 66}, {{66, 1}, {0, 1}})) == "");
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{64, 1}, {1, 0}}, {0, 3})) == "4");
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{68, 1}, {64, 1}})) == "4");
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{66, 1}, {64, 1}})) == "");
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{68, 1}, {64, 1}}, {2, 0})) == "");
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{-68, 1}, {64, 1}}, {476, 0})) == "4");
  CHECK(vec_of("binary", ff, "f32", geom({8, 64}, {{1, 8}, {64, 1}})) == "");  // transposed
  CHECK(vec_of("binary", ff, "f32", geom({64}, {{2}, {1}})) == "");            // rank-1 g
  CHECK(vec_of("binary", ff, "f32", geom({2, 3, 4, 8}, {{0, 32, 0, 1}, {96, 32, 8, 1}})) == "4");
}

TEST_CASE("vector keys launch one step per vector and only on aligned geometries") {
  auto g = geom({100003}, {{1}, {1}});
  g.binding_alignment = 32;
  KernelKey key = elementwise_key("binary", "Add", {"f32", "f32"}, "f32", g);
  REQUIRE(key.params.at("vec") == "4");
  KernelSource src = render(key, full_caps());
  CHECK(src.spec_constants.at(1) == 2);  // vectors per invocation
  // ceil(100003 / 4) = 25001 steps, 256 per group (128 invocations x 2).
  CHECK(elementwise_launch(key, src, g).groups == std::array<uint32_t, 3>{98, 1, 1});
  auto misaligned = g;
  misaligned.in_offsets = {1, 0};
  CHECK_THROWS_AS(elementwise_launch(key, src, misaligned), std::invalid_argument);
  // A scalar kernel still runs an aligned geometry.
  KernelKey scalar = key;
  scalar.params.erase("vec");
  CHECK_NOTHROW(elementwise_launch(scalar, render(scalar, full_caps()), g));
  // The width is implied by the dtypes, and rank-1 strided inputs never vectorize.
  KernelKey wrong = KernelKey::parse("binary:idx=32,in=f32.f32,layout=cc,op=Add,out=f32,vec=8");
  CHECK_THROWS_AS(render(wrong, full_caps()), std::invalid_argument);
  KernelKey rank1 =
      KernelKey::parse("binary:idx=32,in=f32.f32,layout=gc,op=Add,out=f32,rank=1,vec=4");
  CHECK_THROWS_AS(render(rank1, full_caps()), std::invalid_argument);
}

TEST_CASE("planning gives copies of transposed views the tiled transpose kernel") {
  // Input contiguous along the output's dim 0: a 2-d transpose.
  auto g2 = geom({64, 96}, {{1, 64}}, {5}, 3);
  KernelKey k2 = plan_elementwise("copy", "Copy", {"f32"}, "bf16", g2);
  CHECK(k2.canonical() == "transpose:idx=32,in=f32,out=bf16");
  KernelSource s2 = render(k2, full_caps());
  CHECK(s2.workgroup_size == std::array<uint32_t, 3>{32, 8, 1});
  Launch l2 = elementwise_launch(k2, s2, g2);
  // rows, cols, in offset, out offset, column stride, batch stride, output row stride.
  CHECK(words(l2.push_constants, false) == std::vector<int64_t>{64, 96, 5, 3, 64, 0, 96});
  CHECK(l2.groups == std::array<uint32_t, 3>{3, 2, 1});
  // A batch dim outside, a negative column stride and partial tiles.
  auto g3 = geom({3, 37, 40}, {{1480, 1, -37}}, {1443});
  KernelKey k3 = plan_elementwise("copy", "Copy", {"i64"}, "i64", g3);
  CHECK(k3.family == "transpose");
  Launch l3 = elementwise_launch(k3, render(k3, full_caps()), g3);
  CHECK(words(l3.push_constants, false) == std::vector<int64_t>{37, 40, 1443, 0, -37, 1480, 40});
  CHECK(l3.groups == std::array<uint32_t, 3>{2, 2, 3});
  // 64-bit indexing like every other kernel.
  auto big = geom({64, 96}, {{1, 64}}, {3000000000ull});
  CHECK(plan_elementwise("copy", "Copy", {"u8"}, "u8", big).canonical() ==
        "transpose:idx=64,in=u8,out=u8");

  // Not transposes: a thin side, a broadcast, rank 4, an op other than copy.
  CHECK(plan_elementwise("copy", "Copy", {"f32"}, "f32", geom({4, 96}, {{1, 4}})).family == "copy");
  CHECK(plan_elementwise("copy", "Copy", {"f32"}, "f32", geom({64, 96}, {{1, 0}})).family ==
        "copy");
  CHECK(plan_elementwise("copy", "Copy", {"f32"}, "f32",
                         geom({2, 3, 64, 96}, {{50000, 20000, 1, 64}}))
            .family == "copy");
  CHECK(plan_elementwise("unary", "Exp", {"f32"}, "f32", g2).family == "unary");
  // A transpose key refuses another geometry.
  CHECK_THROWS_AS(elementwise_launch(k2, s2, geom({64, 96}, {{96, 1}})), std::invalid_argument);
  // The variant choice is the planning step's alone: the strided key stays a strided copy
  // (which runs the same geometry correctly, only slower).
  KernelKey strided = elementwise_key("copy", "Copy", {"f32"}, "bf16", g2);
  CHECK(strided.family == "copy");
  CHECK_NOTHROW(elementwise_launch(strided, render(strided, full_caps()), g2));
}

TEST_CASE("a padded transpose writes rows of out_ld elements through the transpose kernel") {
  // x [100, 64] (rows of k) into [64, 104]: rows = k, cols = m, padded to 8.
  PaddedTranspose t;
  t.rows = 64;
  t.cols = 100;
  t.col_stride = 64;
  t.out_ld = 104;
  t.in_offset = 7;
  t.out_offset = 16;
  KernelKey k = padded_transpose_key("bf16", "bf16", t);
  CHECK(k.canonical() == "transpose:idx=32,in=bf16,out=bf16");
  Launch l = padded_transpose_launch(k, render(k, full_caps()), t);
  CHECK(words(l.push_constants, false) == std::vector<int64_t>{64, 100, 7, 16, 64, 0, 104});
  CHECK(l.groups == std::array<uint32_t, 3>{4, 2, 1});
  // The output's reach sets the index width: (rows - 1) * out_ld past 2^31.
  PaddedTranspose wide = t;
  wide.out_ld = int64_t{1} << 26;
  CHECK(padded_transpose_key("f16", "f16", wide).canonical() == "transpose:idx=64,in=f16,out=f16");
  // One 16-bit dtype with even rows, offsets and strides moves two elements a word, in a
  // tile twice as wide; an odd number of columns needs a padding column for that.
  PaddedTranspose even = t;
  even.in_offset = 8;
  KernelKey kp = padded_transpose_key("bf16", "bf16", even);
  CHECK(kp.canonical() == "transpose:idx=32,in=bf16,out=bf16,pairs=1");
  Launch lp = padded_transpose_launch(kp, render(kp, full_caps()), even);
  CHECK(lp.groups == std::array<uint32_t, 3>{2, 1, 1});
  PaddedTranspose odd = even;
  odd.cols = 99;
  CHECK(padded_transpose_key("f16", "f16", odd).params.count("pairs") == 1);
  odd.out_ld = 99;
  CHECK(padded_transpose_key("f16", "f16", odd).params.count("pairs") == 0);
  CHECK_THROWS_AS(padded_transpose_launch(kp, render(kp, full_caps()), odd), std::invalid_argument);
  CHECK(padded_transpose_key("f32", "f32", even).params.count("pairs") == 0);
  CHECK(padded_transpose_key("f16", "bf16", even).params.count("pairs") == 0);
  // A dense transposed copy of one 16-bit dtype moves in pairs too where it is even; a pairs
  // key refuses a geometry that is not.
  auto g2 = geom({64, 96}, {{1, 64}});
  KernelKey kd = plan_elementwise("copy", "Copy", {"f16"}, "f16", g2);
  CHECK(kd.canonical() == "transpose:idx=32,in=f16,out=f16,pairs=1");
  Launch ld = elementwise_launch(kd, render(kd, full_caps()), g2);
  CHECK(words(ld.push_constants, false) == std::vector<int64_t>{64, 96, 0, 0, 64, 0, 96});
  CHECK(ld.groups == std::array<uint32_t, 3>{2, 1, 1});
  auto odd_stride = geom({64, 95}, {{1, 95}});
  CHECK(plan_elementwise("copy", "Copy", {"f16"}, "f16", odd_stride).params.count("pairs") == 0);
  CHECK_THROWS_AS(elementwise_launch(kd, render(kd, full_caps()), odd_stride),
                  std::invalid_argument);
  // Refused: rows shorter than their columns, an empty side.
  PaddedTranspose narrow = t;
  narrow.out_ld = 99;
  CHECK_THROWS_AS(padded_transpose_launch(k, render(k, full_caps()), narrow),
                  std::invalid_argument);
  PaddedTranspose empty = t;
  empty.cols = 0;
  CHECK_THROWS_AS(padded_transpose_launch(k, render(k, full_caps()), empty), std::invalid_argument);
}
