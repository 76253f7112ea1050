// Kernel keys: canonical text, parsing and hashing.
#include <doctest/doctest.h>

#include <stdexcept>

#include "codegen/codegen.h"

using namespace mlx::core::vulkan::codegen;

TEST_CASE("canonical key text sorts params and parses back to the same key") {
  KernelKey key{"binary",
                {{"op", "Add"},
                 {"in", "f16.f16"},
                 {"layout", "cg"},
                 {"rank", "2"},
                 {"out", "f16"},
                 {"idx", "32"}}};
  std::string text = key.canonical();
  CHECK(text == "binary:idx=32,in=f16.f16,layout=cg,op=Add,out=f16,rank=2");
  KernelKey back = KernelKey::parse(text);
  CHECK(back == key);
  CHECK(back.canonical() == text);

  KernelKey bare{"fill", {}};
  CHECK(bare.canonical() == "fill:");
  CHECK(KernelKey::parse("fill:") == bare);
}

TEST_CASE("parsing accepts any param order but rejects malformed keys") {
  CHECK(KernelKey::parse("unary:op=Exp,idx=32").canonical() == "unary:idx=32,op=Exp");
  for (const char* bad : {"", "unary", ":op=Exp", "unary:op", "unary:op=", "unary:=Exp",
                          "unary:op=Exp,", "unary:op=Exp,op=Log", "un ary:op=Exp", "unary:op=E xp",
                          "unary:op=Exp,,idx=32", "unary:o-p=Exp"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(KernelKey::parse(bad), std::invalid_argument);
  }
}

TEST_CASE("canonical refuses values that would not parse back") {
  CHECK_THROWS_AS((KernelKey{"unary", {{"op", "a,b"}}}.canonical()), std::invalid_argument);
  CHECK_THROWS_AS((KernelKey{"unary", {{"op", ""}}}.canonical()), std::invalid_argument);
  CHECK_THROWS_AS((KernelKey{"", {}}.canonical()), std::invalid_argument);
}
