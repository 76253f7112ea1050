// The fused family's key grammar: a group's text round-trips through the canonical key,
// renders from the key alone (as prewarm and spvdump do), compiles, validates and carries
// the subgraph in the GLSL; tapes the emitter does not take are refused with a message.
#include <doctest/doctest.h>

#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/fused.h"

namespace cg = mlx::core::vulkan::codegen;

TEST_CASE("fused keys round-trip, render from their text and validate") {
  cg::FusedTape t;
  t.inputs = {"bf16", "bf16", "b"};
  t.nodes = {{"unary", "Exp", "bf16", {"i0"}},
             {"binary", "Add", "bf16", {"n0", "i1"}},
             {"binary", "Greater", "b", {"n1", "i0"}},
             {"select", "Select", "bf16", {"i2", "n1", "n0"}},
             {"astype", "AsType", "f32", {"n3"}}};
  t.outputs = {4, 2};
  auto key = cg::fused_key(t);
  auto parsed = cg::KernelKey::parse(key.canonical());
  CHECK(parsed == key);
  auto back = cg::parse_fused(parsed);
  CHECK(back.nodes.size() == 5);
  CHECK(back.outputs == std::vector<int>{4, 2});
  cg::DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = true;
  auto src = cg::render(parsed, caps);
  CHECK(src.num_buffers == 3 + 2 + 1);
  CHECK(src.glsl.find("FUSED_TAPE unary/Exp/bf16/i0;") != std::string::npos);
  auto mod = cg::compile(parsed, src);
  CHECK(cg::validate_spirv(mod.words) == "");
}

TEST_CASE("fused tapes the emitter does not take are refused") {
  cg::DeviceCaps caps;
  auto refuse = [&](cg::FusedTape t) {
    CHECK_THROWS_AS(cg::render(cg::fused_key(t), caps), std::invalid_argument);
  };
  refuse({{"f32"}, {{"unary", "Exp", "f32", {"n1"}}, {"unary", "Exp", "f32", {"i0"}}}, {0}});
  refuse({{"i32"}, {{"unary", "Negative", "i32", {"i0"}}}, {0}});
  refuse({{"f32"}, {{"unary", "Exp", "f32", {"i1"}}}, {0}});
  refuse({{"f32"}, {{"unary", "Exp", "f32", {"i0"}}}, {3}});
}
