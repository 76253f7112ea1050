// The fused family's key grammar: a group's text round-trips through the canonical key,
// renders from the key alone (as prewarm and spvdump do), compiles, validates and carries
// the subgraph in the GLSL (the FUSED_TAPE define and a readable comment); integer groups
// splice the integer helpers once per compute type; the layout variants follow the launch
// geometry; tapes the emitter does not take are refused with a message.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/fused.h"

namespace cg = mlx::core::vulkan::codegen;

namespace {

cg::DeviceCaps full_caps() {
  cg::DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = caps.shader_int64 = true;
  return caps;
}

cg::FusedTape tape(std::vector<std::string> in, std::vector<cg::FusedNode> nodes,
                   std::vector<int> out) {
  cg::FusedTape t;
  t.inputs = std::move(in);
  t.nodes = std::move(nodes);
  t.outputs = std::move(out);
  return t;
}

// Renders, compiles and validates the key; returns the GLSL.
std::string build(const cg::KernelKey& key) {
  auto parsed = cg::KernelKey::parse(key.canonical());
  REQUIRE(parsed == key);
  auto src = cg::render(parsed, full_caps());
  auto mod = cg::compile(parsed, src);
  CHECK(cg::validate_spirv(mod.words) == "");
  return src.glsl;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("fused keys round-trip, render from their text and validate") {
  auto t = tape({"bf16", "bf16", "b"},
                {{"unary", "Exp", "bf16", {"i0"}},
                 {"binary", "Add", "bf16", {"n0", "i1"}},
                 {"binary", "Greater", "b", {"n1", "i0"}},
                 {"select", "Select", "bf16", {"i2", "n1", "n0"}},
                 {"astype", "AsType", "f32", {"n3"}}},
                {4, 2});
  auto key = cg::fused_key(t);
  auto back = cg::parse_fused(cg::KernelKey::parse(key.canonical()));
  CHECK(back.nodes.size() == 5);
  CHECK(back.outputs == std::vector<int>{4, 2});
  auto src = cg::render(key, full_caps());
  CHECK(src.num_buffers == 3 + 2 + 1);
  std::string glsl = build(key);
  CHECK(glsl.find("FUSED_TAPE unary/Exp/bf16/i0;") != std::string::npos);
  // The readable subgraph, for spvdump show.
  CHECK(glsl.find("//   v1 = Add(v0, i1) : bf16\n") != std::string::npos);
  CHECK(glsl.find("//   v3 = Select(i2, v1, v0) : bf16\n") != std::string::npos);
  CHECK(glsl.find("//   v4 = AsType(v3) : f32 -> out0\n") != std::string::npos);
  CHECK(glsl.find("//   v2 = Greater(v1, i0) : b -> out1\n") != std::string::npos);
}

TEST_CASE("integer fused groups splice the integer helpers once per compute type") {
  // i8 floor division and shifts (int), u32 remainder (uint), i64 power (int64_t), bool
  // arithmetic (uint): three copies of int_ops.glsl, overloaded on the type.
  auto t = tape({"i8", "i8", "u32", "i64", "b"},
                {{"binary", "FloorDivide", "i8", {"i0", "i1"}},
                 {"binary", "RightShift", "i8", {"n0", "i1"}},
                 {"astype", "AsType", "u32", {"n1"}},
                 {"binary", "Remainder", "u32", {"n2", "i2"}},
                 {"astype", "AsType", "i64", {"n3"}},
                 {"binary", "Power", "i64", {"n4", "i3"}},
                 {"binary", "Add", "b", {"i4", "i4"}},
                 {"binary", "Maximum", "b", {"n6", "i4"}},
                 {"unary", "LogicalNot", "b", {"n1"}}},
                {3, 5, 7, 8});
  std::string glsl = build(cg::fused_key(t));
  CHECK(count(glsl, "#define OP_T int\n") == 1);
  CHECK(count(glsl, "#define OP_T uint\n") == 1);
  CHECK(count(glsl, "#define OP_T int64_t\n") == 1);
  CHECK(count(glsl, "#undef MLX_INT_OPS_GLSL") == 3);
  // 8-bit results wrap in registers; bool sums become 0/1; OP_T in a body is the node's type.
  CHECK(glsl.find("int v0 = bitfieldExtract(int((uint(OP0(x0,x1)) & 0xffu)), 0, 8);") !=
        std::string::npos);
  CHECK(glsl.find("uint v6 = ((OP6(x4,x4)) != 0u ? 1u : 0u);") != std::string::npos);
  CHECK(glsl.find("#define OP8(x) ((x) == int(0) ? 1u : 0u)") != std::string::npos);
}

TEST_CASE("fused layout variants follow the geometry and show in the key") {
  auto t = tape(
      {"bf16", "f32"},
      {{"astype", "AsType", "bf16", {"i1"}}, {"binary", "Multiply", "bf16", {"i0", "n0"}}}, {1});
  cg::FusedGeometry g;
  g.shape = {4, 16};
  g.in_offsets = {0, 0};
  g.in_strides = {{16, 1}, {0, 0}};
  g.out_offsets = {0};
  g.binding_alignment = 32;
  // Contiguous and scalar, aligned: vectors of 16 bytes of f32 (4), at least 4 bytes of bf16.
  cg::classify_fused(t, g);
  CHECK(t.layout == "cs");
  CHECK(t.vec == 4);
  auto vkey = cg::fused_key(t);
  CHECK(vkey.canonical().find(",layout=cs,") != std::string::npos);
  CHECK(vkey.canonical().ends_with(",vec=4"));
  std::string glsl = build(vkey);
  CHECK(glsl.find("#define VEC 4") != std::string::npos);
  CHECK(glsl.find("steps of 4 elements") != std::string::npos);
  auto launch = cg::fused_launch(vkey, cg::render(vkey, full_caps()), g);
  CHECK(launch.groups[0] == 1);
  // Vector steps per invocation follow the device's tuning (spec constant 1), and the
  // launch takes that many fewer invocations.
  if (std::getenv("MLX_VK_FUSED_EPT") == nullptr) {
    auto two = full_caps();
    two.fused_vector_steps = 2;
    CHECK(cg::render(vkey, full_caps()).spec_constants.at(1) == 1);
    CHECK(cg::render(vkey, two).spec_constants.at(1) == 2);
    cg::FusedGeometry big = g;
    big.shape = {1024, 1024};
    big.in_strides = {{1024, 1}, {0, 0}};
    auto groups = [&](const cg::DeviceCaps& caps) {
      auto l = cg::fused_launch(vkey, cg::render(vkey, caps), big);
      return uint64_t{l.groups[0]} * l.groups[1] * l.groups[2];
    };
    CHECK(groups(full_caps()) == 2 * groups(two));
  }
  // An offset off the vector grid: contiguous, element by element.
  g.in_offsets = {2, 0};
  cg::classify_fused(t, g);
  CHECK(t.layout == "cs");
  CHECK(t.vec == 0);
  build(cg::fused_key(t));
  CHECK_THROWS_AS(cg::fused_launch(vkey, cg::render(vkey, full_caps()), g), std::invalid_argument);
  // A transposed input: any strides, no layout in the key.
  g.in_strides = {{1, 4}, {0, 0}};
  cg::classify_fused(t, g);
  CHECK(t.layout.empty());
  CHECK(cg::fused_key(t).params.count("layout") == 0);
  // Size-1 dimensions do not break contiguity; 64-bit operands make vectors of 2.
  auto w = tape({"i64", "i64"}, {{"binary", "Add", "i64", {"i0", "i1"}}}, {0});
  cg::FusedGeometry h;
  h.shape = {1, 8, 1};
  h.in_offsets = {2, 4};
  h.in_strides = {{99, 1, 7}, {0, 1, 0}};
  h.out_offsets = {0};
  h.binding_alignment = 64;
  cg::classify_fused(w, h);
  CHECK(w.layout == "cc");
  CHECK(w.vec == 2);
  build(cg::fused_key(w));
}

TEST_CASE("column slices of a wider matrix take the row-strided layout") {
  // silu(g) * u over the two halves of a [2, 3, 96] product: rows of 48, 96 apart.
  auto t = tape({"bf16", "bf16"},
                {{"unary", "Sigmoid", "bf16", {"i0"}},
                 {"binary", "Multiply", "bf16", {"i0", "n0"}},
                 {"binary", "Multiply", "bf16", {"n1", "i1"}}},
                {2});
  cg::FusedGeometry g;
  g.shape = {2, 3, 48};
  g.in_offsets = {0, 48};
  g.in_strides = {{288, 96, 1}, {288, 96, 1}};
  g.out_offsets = {0};
  g.binding_alignment = 32;
  CHECK(cg::fused_row_stride(g.shape, g.in_strides[0]) == 96);
  cg::classify_fused(t, g);
  CHECK(t.layout == "rr");
  CHECK(t.vec == 8);
  auto key = cg::fused_key(t);
  std::string glsl = build(key);
  CHECK(glsl.find("#define FUSED_ROWS 1") != std::string::npos);
  CHECK(glsl.find("(u / cv) * rsv1 + u % cv") != std::string::npos);
  // The meta buffer ends with the row length and each input's row stride.
  auto launch = cg::fused_launch(key, cg::render(key, full_caps()), g);
  std::vector<int32_t> meta(launch.meta.size() / 4);
  std::memcpy(meta.data(), launch.meta.data(), launch.meta.size());
  CHECK(std::vector<int32_t>(meta.end() - 3, meta.end()) == std::vector<int32_t>{48, 96, 96});
  // Rows that are not a whole number of vectors: row-strided, element by element.
  g.shape = {2, 3, 44};
  cg::classify_fused(t, g);
  CHECK(t.layout == "rr");
  CHECK(t.vec == 0);
  build(cg::fused_key(t));
  // Every other row of a [6, 96] matrix: rows 192 apart; the rows of a [2, 3] outer block
  // that are not evenly spaced (a transposed outer pair) are not row-strided.
  CHECK(cg::fused_row_stride({3, 48}, {192, 1}) == 192);
  CHECK(cg::fused_row_stride({2, 3, 48}, {96, 288, 1}) == std::nullopt);
  CHECK(cg::fused_row_stride({1, 1, 48}, {0, 7, 1}) == 0);
  CHECK(cg::fused_row_stride({4, 48}, {96, 2}) == std::nullopt);
  CHECK(cg::fused_row_stride({48}, {1}) == std::nullopt);
}

TEST_CASE("fused tapes the emitter does not take are refused") {
  auto caps = full_caps();
  auto refuse = [&](cg::FusedTape t) {
    CHECK_THROWS_AS(cg::render(cg::fused_key(t), caps), std::invalid_argument);
  };
  refuse(tape({"f32"}, {{"unary", "Exp", "f32", {"n1"}}, {"unary", "Exp", "f32", {"i0"}}}, {0}));
  refuse(tape({"f32"}, {{"unary", "Exp", "f32", {"i1"}}}, {0}));
  refuse(tape({"f32"}, {{"unary", "Exp", "f32", {"i0"}}}, {3}));
  refuse(tape({"i32"}, {{"unary", "Exp", "i32", {"i0"}}}, {0}));  // Exp of an integer
  refuse(tape({"f32"}, {{"binary", "LeftShift", "f32", {"i0", "i0"}}}, {0}));
  refuse(tape({"f64"}, {{"unary", "Negative", "f64", {"i0"}}}, {0}));  // not a GPU dtype
  refuse(tape({"i32"}, {{"unary", "IsNan", "i32", {"i0"}}}, {0}));     // produces b
  auto t = tape({"f32", "f32"}, {{"binary", "Add", "f32", {"i0", "i1"}}}, {0});
  // (assign, not =: GCC 12 reports a false -Wrestrict for short literals here.)
  t.layout.assign("cg");
  refuse(t);
  t.layout.assign(1, 'c');
  refuse(t);
  t.layout.assign("cc");
  t.vec = 8;  // f32 takes 4
  refuse(t);
  t.layout.clear();
  t.vec = 4;  // vectors need a layout
  refuse(t);
}

TEST_CASE("float scalar constants are written into the kernel; x / 2^k becomes a multiply") {
  auto t = tape({"f32", "f32", "bf16", "f32"},
                {{"binary", "Divide", "f32", {"i0", "i1"}},
                 {"binary", "Divide", "f32", {"n0", "i3"}},
                 {"binary", "Multiply", "bf16", {"i2", "i2"}},
                 {"astype", "AsType", "f32", {"n2"}},
                 {"binary", "Add", "f32", {"n1", "n3"}}},
                {4});
  t.consts = {"", "c0000000", "3f800000", "40400000"};  // i1 = -2, i2 = 1 (bf16), i3 = 3
  auto key = cg::fused_key(t);
  CHECK(key.params.at("c1") == "c0000000");
  CHECK(key.params.count("c0") == 0);
  auto back = cg::parse_fused(cg::KernelKey::parse(key.canonical()));
  CHECK(back.consts == t.consts);
  std::string glsl = build(key);
  CHECK(glsl.find("FUSED_CONST1 uintBitsToFloat(0xc0000000u)") != std::string::npos);
  // Divide by -2: a multiply by -0.5 from |x| >= 2^-125 (m_div_pow2); by 3: the division
  // routine with a constant.
  CHECK(glsl.find("m_div_pow2(x0, FUSED_CONST1, uintBitsToFloat(0xbf000000u), "
                  "uintBitsToFloat(0x01000000u))") != std::string::npos);
  CHECK(count(glsl, "m_div(") >= 1);
  // The constant inputs are not loaded (input 0 is).
  CHECK(glsl.find("LOAD(in0[") != std::string::npos);
  CHECK(glsl.find("LOAD(in1[") == std::string::npos);
  CHECK(glsl.find("LOAD(in3[") == std::string::npos);
  // Divisors whose reciprocal is not exact or not normal stay divisions.
  for (const char* c : {"00000000", "7f800000", "7f000000", "00400000", "3fc00000"}) {
    CAPTURE(c);
    auto d = tape({"f32", "f32"}, {{"binary", "Divide", "f32", {"i0", "i1"}}}, {0});
    d.consts = {"", c};
    CHECK(build(cg::fused_key(d)).find("m_div_pow2(x0") == std::string::npos);
  }
  // Constants are f32 bits of a float input, and name an input.
  auto bad = [&](const std::string& text) {
    CHECK_THROWS_AS(cg::render(cg::KernelKey::parse(text), full_caps()), std::invalid_argument);
  };
  bad("fused:c1=3f80,in=f32.f32,out=0,tape=binary/Add/f32/i0/i1");
  bad("fused:c1=3F800000,in=f32.f32,out=0,tape=binary/Add/f32/i0/i1");
  bad("fused:c2=3f800000,in=f32.f32,out=0,tape=binary/Add/f32/i0/i1");
  bad("fused:c1=3f800000,in=i16.i16,out=0,tape=binary/Add/i16/i0/i1");
  // Integer and bool constants: their stored bits, as literals of their compute type.
  auto ints = tape({"i8", "i8", "u16", "b", "i64", "u32"},
                   {{"binary", "Add", "i8", {"i0", "i1"}},
                    {"binary", "Add", "u16", {"i2", "i2"}},
                    {"binary", "LogicalAnd", "b", {"i3", "i3"}},
                    {"binary", "Add", "i64", {"i4", "i4"}},
                    {"binary", "Multiply", "u32", {"i5", "i5"}}},
                   {0, 1, 2, 3});
  ints.consts = {"", "fb", "ffff", "01", "8000000000000000", ""};
  std::string g = build(cg::fused_key(ints));
  CHECK(g.find("FUSED_CONST1 int(0xfffffffbu)") != std::string::npos);  // -5
  CHECK(g.find("FUSED_CONST2 0x0000ffffu") != std::string::npos);
  CHECK(g.find("FUSED_CONST3 1u") != std::string::npos);
  CHECK(g.find("FUSED_CONST4 int64_t(packUint2x32(uvec2(0x00000000u, 0x80000000u)))") !=
        std::string::npos);
  bad("fused:c1=fffb,in=i8.i8,out=0,tape=binary/Add/i8/i0/i1");
}
