// render + compile over the elementwise families: every op, every dtype, every layout class
// and index width produce valid SPIR-V whose bindings and push constants follow the
// documented convention; unsupported requests fail with the right exception.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/elementwise.h"
#include "spirv_reflect.h"

using namespace mlx::core::vulkan::codegen;

namespace {

const std::vector<std::string> kDtypes = {"b",   "u8",  "u16", "u32", "u64",  "i8",
                                          "i16", "i32", "i64", "f16", "bf16", "f32"};

DeviceCaps full_caps() {
  DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = caps.shader_int64 = true;
  caps.max_workgroup_invocations = 1024;
  caps.fingerprint = "test-device";
  return caps;
}

KernelKey key(const std::string& family, const std::string& op, const std::string& in,
              const std::string& out, const std::string& layout, const std::string& rank = "",
              const std::string& idx = "32") {
  KernelKey k{family, {{"op", op}, {"in", in}, {"out", out}, {"layout", layout}, {"idx", idx}}};
  if (!rank.empty()) {
    k.params["rank"] = rank;
  }
  return k;
}

// The push-constant members the key implies (include/elementwise.glsl, in order).
std::vector<std::string> expected_push_members(const KernelKey& k) {
  const std::string& layout = k.params.at("layout");
  std::string rank = k.params.count("rank") ? k.params.at("rank") : "";
  std::vector<std::string> m = {"size", "out_offset"};
  for (size_t i = 0; i < layout.size(); ++i) {
    m.push_back("in" + std::to_string(i) + "_offset");
  }
  if (rank == "n") {
    m.push_back("ndim");
  }
  if (rank == "2" || rank == "3") {
    m.push_back("dim1");
  }
  if (rank == "3") {
    m.push_back("dim2");
  }
  if (rank == "1" || rank == "2" || rank == "3") {
    for (size_t i = 0; i < layout.size(); ++i) {
      if (layout[i] == 'g') {
        m.push_back("in" + std::to_string(i) + "_strides");
      }
    }
  }
  return m;
}

struct Sweep {
  int compiled = 0;
  double glslang_ms = 0;

  void run(const KernelKey& k, const DeviceCaps& caps = full_caps()) {
    CAPTURE(k.canonical());
    KernelSource src = render(k, caps);
    SpirvModule mod = compile(k, src);
    ++compiled;
    glslang_ms += mod.glslang_ms;
    REQUIRE(validate_spirv(mod.words) == "");
    SpirvLayout r = reflect(mod.words);
    std::set<uint32_t> want_bindings;
    for (uint32_t b = 0; b < src.num_buffers; ++b) {
      want_bindings.insert(b);
    }
    CHECK(r.bindings == want_bindings);
    CHECK(r.spec_ids == std::set<uint32_t>{0, 1});
    std::vector<std::string> names;
    for (const auto& [name, offset] : r.push) {
      names.push_back(name);
    }
    CHECK(names == expected_push_members(k));
    CHECK(r.push_bytes == src.push_constant_bytes);
    CHECK(src.push_constant_bytes <= 128);  // the minimum maxPushConstantsSize
  }
};

// The key elementwise_key gives an aligned geometry: the vector path when `vectorized`.
KernelKey vector_key(const std::string& family, const std::string& op,
                     const std::vector<std::string>& in, const std::string& out,
                     std::vector<int64_t> shape, std::vector<std::vector<int64_t>> strides) {
  ElementwiseGeometry g;
  g.shape = std::move(shape);
  g.in_strides = std::move(strides);
  g.in_offsets.assign(g.in_strides.size(), 0);
  g.binding_alignment = 32;
  KernelKey k = elementwise_key(family, op, in, out, g);
  CHECK_MESSAGE(k.params.count("vec") == 1, k.canonical());
  return k;
}

}  // namespace

TEST_CASE("every elementwise op, dtype and layout class renders to valid SPIR-V") {
  Sweep sweep;
  auto start = std::chrono::steady_clock::now();

  // Every unary op once, in f32 (or an integer type for integer-only ops).
  for (const auto& op : elementwise_ops("unary")) {
    std::string dt = op == "BitwiseInvert" ? "i32" : "f32";
    bool predicate = op == "LogicalNot" || op == "IsNan" || op == "IsInf";
    sweep.run(key("unary", op, dt, predicate ? "b" : dt, "c"));
  }
  // Every binary op once.
  for (const auto& op : elementwise_ops("binary")) {
    bool int_only = op.rfind("Bitwise", 0) == 0 || op.find("Shift") != std::string::npos;
    std::string dt = int_only ? "i32" : "f32";
    bool predicate = op.find("Equal") != std::string::npos || op.rfind("Less", 0) == 0 ||
                     op.rfind("Greater", 0) == 0 || op.rfind("Logical", 0) == 0;
    sweep.run(key("binary", op, dt + "." + dt, predicate ? "b" : dt, "cc"));
  }
  // Every dtype through the ops whose code differs per kind.
  for (const auto& dt : kDtypes) {
    bool is_float = dt[0] == 'f' || dt == "bf16";
    bool is_int = !is_float && dt != "b";
    sweep.run(key("unary", "Abs", dt, dt, "c"));
    sweep.run(key("unary", "Square", dt, dt, "g", "2"));
    sweep.run(key("unary", "LogicalNot", dt, "b", "s"));
    sweep.run(key("unary", "IsNan", dt, "b", "c"));
    sweep.run(key("binary", "Add", dt + "." + dt, dt, "cs"));
    sweep.run(key("binary", "FloorDivide", dt + "." + dt, dt, "gc", "1"));
    sweep.run(key("binary", "Remainder", dt + "." + dt, dt, "cc"));
    sweep.run(key("binary", "Power", dt + "." + dt, dt, "cc"));
    sweep.run(key("binary", "Maximum", dt + "." + dt, dt, "sc"));
    sweep.run(key("binary", "Less", dt + "." + dt, "b", "cg", "3"));
    sweep.run(key("select", "Select", "b." + dt + "." + dt, dt, "ccs"));
    if (is_float) {
      sweep.run(key("unary", "Exp", dt, dt, "c"));
      sweep.run(key("binary", "Divide", dt + "." + dt, dt, "cc"));
    }
    if (is_int || dt == "b") {
      sweep.run(key("unary", "BitwiseInvert", dt, dt, "c"));
      sweep.run(key("binary", "BitwiseXor", dt + "." + dt, dt, "cc"));
    }
    if (is_int) {
      sweep.run(key("binary", "RightShift", dt + "." + dt, dt, "cc"));
      sweep.run(key("binary", "LeftShift", dt + "." + dt, dt, "cc"));
    }
    // Every conversion, on the N-d path and on the vector path (every pair of lane widths).
    for (const auto& to : kDtypes) {
      sweep.run(key("copy", "Copy", dt, to, "g", "n"));
      sweep.run(vector_key("copy", "Copy", {dt}, to, {64}, {{1}}));
    }
    // The vector path with a row-broadcast input (rank 2), and with a lane-splat input
    // (inner stride 0) beside a scalar on the N-d path.
    sweep.run(vector_key("binary", "Add", {dt, dt}, dt, {8, 64}, {{64, 1}, {0, 1}}));
    sweep.run(vector_key("binary", "Less", {dt, dt}, "b", {8, 64}, {{64, 1}, {1, 0}}));
    sweep.run(vector_key("select", "Select", {"b", dt, dt}, dt, {2, 3, 4, 64},
                         {{0, 64, 0, 1}, {0, 0, 0, 0}, {0, 0, 1, 0}}));
  }
  // Every layout class and index width.
  const char* letters = "scg";
  for (const char* idx : {"32", "64"}) {
    for (int a = 0; a < 3; ++a) {
      for (int b = 0; b < 3; ++b) {
        std::string layout = {letters[a], letters[b]};
        if (layout.find('g') == std::string::npos) {
          sweep.run(key("binary", "Add", "f32.f32", "f32", layout, "", idx));
          continue;
        }
        for (const char* rank : {"1", "2", "3", "n"}) {
          sweep.run(key("binary", "Add", "f32.f32", "f32", layout, rank, idx));
        }
      }
    }
    // The largest push-constant block: three strided rank-3 inputs with 64-bit indices.
    sweep.run(key("select", "Select", "b.i64.i64", "i64", "ggg", "3", idx));
    sweep.run(key("select", "Select", "b.bf16.bf16", "bf16", "ggg", "n", idx));
    sweep.run(key("copy", "Copy", "f16", "u8", "s", "", idx));
    sweep.run(key("unary", "ErfInv", "bf16", "bf16", "g", "1", idx));
  }

  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("compiled " << sweep.compiled << " kernels in " << wall << " s (glslang "
                      << sweep.glslang_ms << " ms)");
  CHECK(sweep.compiled > 300);
}

TEST_CASE("the transpose kernel renders to valid SPIR-V for every dtype pair class") {
  for (const auto& dt : kDtypes) {
    for (const char* to : {"f32", "b", "i64"}) {
      for (const char* idx : {"32", "64"}) {
        KernelKey k{"transpose", {{"in", dt}, {"out", to}, {"idx", idx}}};
        CAPTURE(k.canonical());
        KernelSource src = render(k, full_caps());
        SpirvModule mod = compile(k, src);
        REQUIRE(validate_spirv(mod.words) == "");
        SpirvLayout r = reflect(mod.words);
        CHECK(r.bindings == std::set<uint32_t>{0, 1});
        CHECK(r.spec_ids == std::set<uint32_t>{1});
        std::vector<std::string> names;
        for (const auto& [name, offset] : r.push) {
          names.push_back(name);
        }
        CHECK(names == std::vector<std::string>{"rows", "cols", "in0_offset", "out_offset",
                                                "col_stride", "batch_stride", "out_ld"});
        CHECK(r.push_bytes == src.push_constant_bytes);
      }
    }
  }
  KernelKey bad{"transpose", {{"in", "f32"}, {"out", "f32"}, {"idx", "32"}, {"rank", "2"}}};
  CHECK_THROWS_AS(render(bad, full_caps()), std::invalid_argument);
}

TEST_CASE("render refuses dtypes the GPU or the device cannot store") {
  DeviceCaps caps = full_caps();
  CHECK_THROWS_WITH_AS(render(key("unary", "Exp", "f64", "f64", "c"), caps),
                       doctest::Contains("does not support float64"), std::invalid_argument);
  CHECK_THROWS_AS(render(key("binary", "Add", "c64.c64", "c64", "cc"), caps),
                  std::invalid_argument);
  CHECK_THROWS_AS(render(key("copy", "Copy", "f32", "f64", "c"), caps), std::invalid_argument);

  DeviceCaps no8 = caps;
  no8.storage_8bit = false;
  CHECK_THROWS_WITH_AS(render(key("unary", "Abs", "u8", "u8", "c"), no8),
                       doctest::Contains("u8 needs 8-bit storage"), std::runtime_error);
  CHECK_THROWS_WITH_AS(render(key("unary", "IsNan", "f32", "b", "c"), no8),
                       doctest::Contains("b needs 8-bit storage"), std::runtime_error);
  DeviceCaps no16 = caps;
  no16.storage_16bit = false;
  CHECK_THROWS_WITH_AS(render(key("unary", "Exp", "bf16", "bf16", "c"), no16),
                       doctest::Contains("bf16 needs 16-bit storage"), std::runtime_error);
  DeviceCaps no64 = caps;
  no64.shader_int64 = false;
  CHECK_THROWS_WITH_AS(render(key("unary", "Abs", "i64", "i64", "c"), no64),
                       doctest::Contains("i64 needs 64-bit integers"), std::runtime_error);
  CHECK_THROWS_WITH_AS(render(key("unary", "Abs", "f32", "f32", "c", "", "64"), no64),
                       doctest::Contains("64-bit indexing needs shaderInt64"), std::runtime_error);
  // What such a device can still run.
  CHECK_NOTHROW(render(key("unary", "Abs", "f32", "f32", "c"), no8));
}

TEST_CASE("render rejects malformed or unsupported keys with invalid_argument") {
  DeviceCaps caps = full_caps();
  std::vector<KernelKey> bad = {
      key("unary", "Sqrt", "i32", "i32", "c"),             // float-only op
      key("unary", "Negative", "b", "b", "c"),             // not for bool
      key("binary", "LeftShift", "f32.f32", "f32", "cc"),  // integer-only op
      key("binary", "Add", "f32.i32", "f32", "cc"),        // inputs must match
      key("binary", "Less", "f32.f32", "f32", "cc"),       // predicates output b
      key("unary", "Exp", "f32", "f16", "c"),              // output dtype is the input's
      key("select", "Select", "f32.f32.f32", "f32", "ccc"),
      key("unary", "Frobnicate", "f32", "f32", "c"),
      key("unary", "Exp", "f32", "f32", "x"),            // bad layout letter
      key("unary", "Exp", "f32", "f32", "cc"),           // one letter per input
      key("unary", "Exp", "f32", "f32", "g"),            // rank missing
      key("unary", "Exp", "f32", "f32", "c", "2"),       // rank without a strided input
      key("unary", "Exp", "f32", "f32", "g", "4"),       // rank must be 1, 2, 3 or n
      key("unary", "Exp", "f32", "f32", "c", "", "16"),  // idx must be 32 or 64
      key("unary", "Exp", "f32.f32", "f32", "c"),        // one input dtype
      key("matmul", "Exp", "f32", "f32", "c"),           // unknown family
  };
  for (const auto& k : bad) {
    CAPTURE(k.canonical());
    CHECK_THROWS_AS(render(k, caps), std::invalid_argument);
  }
  KernelKey extra = key("unary", "Exp", "f32", "f32", "c");
  extra.params["tile"] = "4";
  CHECK_THROWS_AS(render(extra, caps), std::invalid_argument);
  KernelKey missing = key("unary", "Exp", "f32", "f32", "c");
  missing.params.erase("op");
  CHECK_THROWS_WITH_AS(render(missing, caps), doctest::Contains("missing parameter 'op'"),
                       std::invalid_argument);
}

TEST_CASE("render specializes by injected defines and specialization constants") {
  DeviceCaps caps = full_caps();
  caps.max_workgroup_invocations = 128;
  KernelKey k = key("binary", "Remainder", "i16.i16", "i16", "gc", "2");
  KernelSource src = render(k, caps);
  CHECK(src.template_name == "binary.glsl");
  CHECK(src.workgroup_size == std::array<uint32_t, 3>{128, 1, 1});
  CHECK(src.spec_constants == std::map<uint32_t, uint32_t>{{0, 128}, {1, 8}});
  CHECK(src.num_buffers == 3);
  auto has = [&](const std::string& d) {
    return std::find(src.defines.begin(), src.defines.end(), d) != src.defines.end();
  };
  CHECK(has("IN0_ST int16_t"));
  CHECK(has("IN0_CT int"));
  CHECK(has("OUT_STORE(v) int16_t(v)"));
  CHECK(has("OP(a, b) op_remainder(a, b)"));
  CHECK(has("OP_BITS 16"));
  CHECK(has("IN0_LAYOUT LAYOUT_G"));
  CHECK(has("RANK 2"));
  // The defines come right after #version, before any template text.
  size_t version = src.glsl.find("#version 450");
  size_t define = src.glsl.find("#define OP(a, b) op_remainder(a, b)");
  size_t body = src.glsl.find("element_value");
  CHECK(version == 0);
  CHECK(version < define);
  CHECK(define < body);
}

TEST_CASE("compile errors name the kernel, glslang's message and the GLSL line") {
  KernelKey k = key("unary", "Exp", "f32", "f32", "c");
  KernelSource src = render(k, full_caps());
  // Break the op expression: the error is reported where the template uses it.
  src = render_template("unary.glsl", {"OP(x) no_such_function(x)"});
  try {
    compile(k, src);
    FAIL("compile should have thrown");
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    CHECK(msg.find(k.canonical()) != std::string::npos);
    CHECK(msg.find("no_such_function") != std::string::npos);
    CHECK(msg.find("include/elementwise_main.glsl:") != std::string::npos);
    CHECK(msg.find("return MLX_APPLY(IN0_LOAD(in0[loc[0]])") != std::string::npos);
    MESSAGE(msg);
  }
  // A syntax error in an injected define is reported on the template line that expands it.
  src = render_template("binary.glsl", {"OP(a, b) ((a) + )"});
  CHECK_THROWS_WITH_AS(compile(k, src), doctest::Contains("return MLX_APPLY(IN0_LOAD(in0[loc[0]])"),
                       std::runtime_error);
}

TEST_CASE("workgroup_memory_bytes counts shared arrays sized by the workgroup-size constant") {
  // A row reduction holds two arrays of gl_WorkGroupSize.x elements (partial sums and their
  // compensations), 8 bytes an invocation, and no other shared variable; an elementwise
  // kernel holds none.
  auto caps = full_caps();
  caps.subgroup_size = 8;
  caps.subgroup_shuffle = true;
  auto reduce = KernelKey::parse("reduce:idx=32,in=f32,mode=row,op=Sum,out=f32,sg=8,vec=4");
  auto src = render(reduce, caps);
  auto words = compile(reduce, src).words;
  REQUIRE(src.spec_constants.count(0) == 1);
  CHECK(workgroup_memory_bytes(words, src.spec_constants) == 8 * src.spec_constants.at(0));
  CHECK(workgroup_memory_bytes(words, {{0, 128}}) == 8 * 128);
  CHECK(workgroup_memory_bytes(words, {{0, 1024}}) == 8 * 1024);
  // qmv's team sums without shuffles go through team_red[SUBGROUP == 1 ? 1 : WGS *
  // TEAM_VALUES] (include/teams.glsl): a length glslang leaves to a select over
  // specialization constants. One row and column: 4 bytes an invocation; with shuffles 4.
  caps.max_workgroup_invocations = 1024;
  const std::string qmv =
      "qmv:bits=4,dot=f32,dtype=f32,glu=0,gs=64,idx=32,ks=1,mr=1,nc=1,"
      "norm=0,pf=0,res=0,sg=";
  const std::string rest = ",stream=0,tpr=8,u=4,vec=1,wvec=1,xpacks=0";
  caps.subgroup_shuffle = false;
  auto team = KernelKey::parse(qmv + "0" + rest);
  auto team_src = render(team, caps);
  auto team_words = compile(team, team_src).words;
  CHECK(workgroup_memory_bytes(team_words, team_src.spec_constants) ==
        4 * team_src.spec_constants.at(0));
  CHECK(workgroup_memory_bytes(team_words, {{0, 128}}) == 4 * 128);
  caps.subgroup_shuffle = true;
  auto shuffled = KernelKey::parse(qmv + "1" + rest);
  CHECK(workgroup_memory_bytes(compile(shuffled, render(shuffled, caps)).words) == 4);
  auto add = key("binary", "Add", "f32.f32", "f32", "cc");
  CHECK(workgroup_memory_bytes(compile(add, render(add, caps)).words) == 0);
  // A truncated module counts what it read, without reading past its end.
  words.resize(words.size() / 2);
  CHECK(workgroup_memory_bytes(words, {{0, 128}}) <= 8 * 128);
}
