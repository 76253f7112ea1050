// Templates: embedded at build time, each a complete shader with its defaults, #include
// expansion, and the MLX_VK_TEMPLATE_DIR development override.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "codegen/codegen.h"

using namespace mlx::core::vulkan::codegen;
namespace fs = std::filesystem;

namespace {

// Sets MLX_VK_TEMPLATE_DIR for one scope.
class TemplateDir {
 public:
  TemplateDir()
      : path_(fs::temp_directory_path() / ("mlxvk_templates_" + std::to_string(::getpid()))) {
    fs::create_directories(path_ / "include");
    ::setenv("MLX_VK_TEMPLATE_DIR", path_.c_str(), 1);
  }
  ~TemplateDir() {
    ::unsetenv("MLX_VK_TEMPLATE_DIR");
    fs::remove_all(path_);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(path_ / name) << text;
  }

 private:
  fs::path path_;
};

DeviceCaps caps() {
  DeviceCaps c;
  c.storage_8bit = c.storage_16bit = c.shader_int64 = true;
  c.fingerprint = "test-device";
  return c;
}

const KernelKey kExp{
    "unary", {{"op", "Exp"}, {"in", "f32"}, {"out", "f32"}, {"layout", "c"}, {"idx", "32"}}};

}  // namespace

TEST_CASE("every embedded family template compiles on its own with its default macros") {
  int families = 0;
  for (const auto& name : template_names()) {
    if (name.rfind("include/", 0) == 0) {
      continue;
    }
    CAPTURE(name);
    KernelSource src = render_template(name, {});
    // Not a family of the table, so the optimizer level is given explicitly.
    SpirvModule mod = compile(KernelKey{"template", {{"name", "default"}}}, src, 0);
    CHECK(validate_spirv(mod.words) == "");
    ++families;
  }
  CHECK(families >= 4);  // unary, binary, select, copy
}

TEST_CASE("includes are expanded once, with #line markers naming the original file") {
  KernelSource src = render(kExp, caps());
  CHECK(src.glsl.find("#include") == std::string::npos);
  CHECK(src.glsl.find("#line 1 \"include/elementwise.glsl\"") != std::string::npos);
  CHECK(src.glsl.find("#line 1 \"include/math.glsl\"") != std::string::npos);
  // types.glsl is included from two places but appears once.
  size_t first = src.glsl.find("#line 1 \"include/types.glsl\"");
  REQUIRE(first != std::string::npos);
  CHECK(src.glsl.find("#line 1 \"include/types.glsl\"", first + 1) == std::string::npos);
  CHECK(src.template_hash != 0);
  CHECK_THROWS_AS(template_text("no_such.glsl"), std::invalid_argument);
  CHECK_THROWS_AS(template_text("../CMakeLists.txt"), std::invalid_argument);
}

TEST_CASE("MLX_VK_TEMPLATE_DIR overrides templates and includes from disk") {
  KernelSource embedded = render(kExp, caps());
  uint64_t embedded_hash = kernel_hash(kExp, embedded, caps(), 0);
  {
    TemplateDir dir;
    // A modified family template: the marker comment must reach the rendered source.
    std::string text = template_text("unary.glsl");
    text += "\n// marker: edited unary template\n";
    dir.write("unary.glsl", text);
    KernelSource edited = render(kExp, caps());
    CHECK(edited.glsl.find("marker: edited unary template") != std::string::npos);
    CHECK(edited.template_hash != embedded.template_hash);
    CHECK(kernel_hash(kExp, edited, caps(), 0) != embedded_hash);
    CHECK(validate_spirv(compile(kExp, edited).words) == "");

    // An include edited on disk changes the hash of every template that uses it, and a
    // compile error there is reported against the include's own file and line.
    dir.write("unary.glsl", template_text("unary.glsl"));  // back to the original text
    std::string math = template_text("include/math.glsl");
    size_t pos = math.find("float m_exp(float x) {");
    REQUIRE(pos != std::string::npos);
    math.insert(pos + std::string("float m_exp(float x) {").size(), "\n  broken_here;");
    dir.write("include/math.glsl", math);
    KernelSource broken = render(kExp, caps());
    CHECK(broken.template_hash != embedded.template_hash);
    try {
      compile(kExp, broken);
      FAIL("a broken include should not compile");
    } catch (const std::runtime_error& e) {
      std::string msg = e.what();
      CHECK(msg.find("include/math.glsl:") != std::string::npos);
      CHECK(msg.find("broken_here;") != std::string::npos);
    }
  }
  // Without the variable, the embedded text is back.
  KernelSource again = render(kExp, caps());
  CHECK(again.glsl == embedded.glsl);
  CHECK(kernel_hash(kExp, again, caps(), 0) == embedded_hash);
}
