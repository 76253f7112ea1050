// Template loading (embedded or MLX_VK_TEMPLATE_DIR), #include expansion and #define
// injection: the first half of render().
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cache/hash.h"
#include "codegen/codegen.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// `#include "name"` -> name, or "" when the line is not an include.
std::string include_target(const std::string& line) {
  size_t p = line.find_first_not_of(" \t");
  if (p == std::string::npos || line[p] != '#') {
    return "";
  }
  p = line.find_first_not_of(" \t", p + 1);
  if (p == std::string::npos || line.compare(p, 7, "include") != 0) {
    return "";
  }
  size_t open = line.find('"', p + 7);
  size_t close = open == std::string::npos ? open : line.find('"', open + 1);
  if (close == std::string::npos) {
    throw std::invalid_argument("[render] malformed #include line: " + line);
  }
  return line.substr(open + 1, close - open - 1);
}

// Inlines every #include (each file once, like #pragma once) and brackets it with
// `#line N "file"` so glslang reports errors against the original files.
void expand(const std::string& name, const std::string& text, std::set<std::string>& seen,
            int depth, std::string& out) {
  if (depth > 16) {
    throw std::invalid_argument("[render] #include nesting too deep at " + name + ".");
  }
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::string target = include_target(line);
    if (target.empty()) {
      out += line;
      out += '\n';
      continue;
    }
    if (seen.insert(target).second) {
      out += "#line 1 \"" + target + "\"\n";
      expand(target, template_text(target), seen, depth + 1, out);
    }
    out += "#line " + std::to_string(number + 1) + " \"" + name + "\"\n";
  }
}

bool valid_template_name(const std::string& name) {
  return !name.empty() && name.find("..") == std::string::npos && name[0] != '/' &&
         name.find('\\') == std::string::npos;
}

}  // namespace

std::string template_text(const std::string& name) {
  if (!valid_template_name(name)) {
    throw std::invalid_argument("[template_text] invalid template name '" + name + "'.");
  }
  // A development override: files present in MLX_VK_TEMPLATE_DIR win, the rest stay embedded,
  // so a directory holding only the template being edited is enough.
  if (const char* dir = std::getenv("MLX_VK_TEMPLATE_DIR"); dir && *dir) {
    std::string text;
    if (read_file(std::string(dir) + "/" + name, text)) {
      return text;
    }
  }
  for (const auto& [embedded_name, text] : embedded_templates()) {
    if (embedded_name == name) {
      return std::string(text);
    }
  }
  throw std::invalid_argument("[template_text] unknown template '" + name + "'.");
}

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  for (const auto& entry : embedded_templates()) {
    names.emplace_back(entry.first);
  }
  return names;
}

namespace {

// The template with its includes inlined. Embedded templates never change, so their
// expansion is kept; with MLX_VK_TEMPLATE_DIR set it is redone each time (files may change).
std::string expanded_template(const std::string& name) {
  auto expand_now = [&] {
    std::set<std::string> seen{name};
    std::string body;
    expand(name, template_text(name), seen, 0, body);
    return body;
  };
  const char* dir = std::getenv("MLX_VK_TEMPLATE_DIR");
  if (dir && *dir) {
    return expand_now();
  }
  static std::mutex mtx;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mtx);
  auto it = cache.find(name);
  if (it == cache.end()) {
    it = cache.emplace(name, expand_now()).first;
  }
  return it->second;
}

}  // namespace

KernelSource render_template(const std::string& template_name,
                             const std::vector<std::string>& defines) {
  std::string body = expanded_template(template_name);

  KernelSource source;
  source.template_name = template_name;
  source.defines = defines;
  source.template_hash = cache::xxh64(body);

  // Inject the defines right after #version; the #line marker keeps the template's own line
  // numbers in glslang's messages.
  size_t pos = 0;
  int line = 0;
  bool found = false;
  while (pos < body.size() && !found) {
    size_t end = body.find('\n', pos);
    end = end == std::string::npos ? body.size() : end;
    ++line;
    size_t first = body.find_first_not_of(" \t", pos);
    found = first < end && body.compare(first, 8, "#version") == 0;
    pos = end + 1;
  }
  if (!found) {
    throw std::invalid_argument("[render] template " + template_name + " has no #version line.");
  }
  std::string header = "#extension GL_GOOGLE_cpp_style_line_directive : require\n";
  for (const auto& d : defines) {
    if (d.empty() || d.find('\n') != std::string::npos) {
      throw std::invalid_argument("[render] invalid define '" + d + "' for " + template_name + ".");
    }
    header += "#define " + d + "\n";
  }
  header += "#line " + std::to_string(line + 1) + " \"" + template_name + "\"\n";
  source.glsl = body.substr(0, pos) + header + body.substr(std::min(pos, body.size()));
  return source;
}

std::string rendered_source_line(const std::string& glsl, const std::string& file, int line) {
  bool flat = file.empty() || file == "0";
  std::istringstream lines(glsl);
  std::string text;
  std::string current = "0";
  int number = 0;  // number of the line about to be read
  int flat_number = 0;
  while (std::getline(lines, text)) {
    ++flat_number;
    ++number;
    if (flat) {
      if (flat_number == line) {
        return text;
      }
      continue;
    }
    if (text.rfind("#line ", 0) == 0) {
      std::istringstream directive(text.substr(6));
      int next = 0;
      std::string quoted;
      directive >> next >> quoted;
      if (quoted.size() >= 2 && quoted.front() == '"' && quoted.back() == '"') {
        current = quoted.substr(1, quoted.size() - 2);
      }
      number = next - 1;
      continue;
    }
    if (current == file && number == line) {
      return text;
    }
  }
  return "";
}

}  // namespace mlx::core::vulkan::codegen
