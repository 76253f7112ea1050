// Helpers of the warm-start tests. A warm start must be a NEW process, so the tests re-run
// this test binary as a child (only the "warm workload child" case, with MLX_WARM_RESULT
// naming a file for its results) and run spvdump between those runs.
#pragma once

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cache/cache_test_utils.h"

extern char** environ;

namespace warm_test {

namespace fs = std::filesystem;
using cache_test::TempDir;

// The child's test case, its result file variable, and the cache variables a child must
// not inherit from whoever runs the tests.
inline const char* kChildCase = "warm workload child";
inline const char* kResultVar = "MLX_WARM_RESULT";

struct Run {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `program args...` with the cache environment cleared, then `env` set ("" unsets).
// Everything is prepared before fork(): the parent may have Vulkan driver threads, so the
// child only calls async-signal-safe functions (open, dup2, execve).
inline Run run_program(const std::string& program, const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env) {
  TempDir io;
  fs::path out = io.path() / "out", err = io.path() / "err";
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) {
      vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const char* v : {"MLX_VK_CACHE_DIR", "MLX_VK_CACHE", "MLX_VK_CACHE_MAX_MB",
                        "MLX_VK_RECORD_KERNELS", "MLX_VK_STATS", "XDG_CACHE_HOME", kResultVar}) {
    vars.erase(v);
  }
  vars["HOME"] = "/nonexistent-home-for-warm-tests";
  for (const auto& [k, v] : env) {
    if (v.empty()) {
      vars.erase(k);
    } else {
      vars[k] = v;
    }
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : vars) {
    env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> arg_strings = {program};
  arg_strings.insert(arg_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : arg_strings) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// What one workload process saw (written by the child case, one "name value" a line).
struct Result {
  int code = -1;
  std::string err;
  std::map<std::string, double> values;
  double operator[](const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? -1 : it->second;
  }
};

// Runs the workload in a new process with the cache at `root` plus `env`.
inline Result run_workload(const fs::path& root, std::map<std::string, std::string> env = {}) {
  TempDir tmp;
  fs::path result_file = tmp.path() / "result.txt";
  env.emplace("MLX_VK_CACHE_DIR", root.string());
  env[kResultVar] = result_file.string();
  std::string self = fs::read_symlink("/proc/self/exe").string();
  Run run = run_program(self, {std::string("--test-case=") + kChildCase, "--no-version"}, env);
  Result r;
  r.code = run.code;
  r.err = run.err;
  std::istringstream in(slurp(result_file));
  std::string name;
  double v;
  while (in >> name >> v) {
    r.values[name] = v;
  }
  if (r.code != 0 || r.values.empty()) {
    MESSAGE("workload child exited " << run.code << "\nstdout:\n"
                                     << run.out << "\nstderr:\n"
                                     << run.err);
  }
  return r;
}

#ifdef SPVDUMP_PATH
inline Run spvdump(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {}) {
  return run_program(SPVDUMP_PATH, args, env);
}
#endif

// The one device directory under a root (the tests use one device).
inline std::optional<fs::path> device_dir(const fs::path& root) {
  std::optional<fs::path> found;
  if (!fs::exists(root)) {
    return found;
  }
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "fingerprint.txt")) {
      found = e.path();
    }
  }
  return found;
}

inline std::vector<fs::path> kernel_files(const fs::path& root) {
  std::vector<fs::path> out;
  if (auto dir = device_dir(root)) {
    for (const auto& e : fs::directory_iterator(*dir)) {
      if (e.path().extension() == ".kernel") {
        out.push_back(e.path());
      }
    }
  }
  return out;
}

inline size_t count_files(const fs::path& root) {
  size_t n = 0;
  if (fs::exists(root)) {
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      n += e.is_regular_file();
    }
  }
  return n;
}

inline std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      out.push_back(line);
    }
  }
  return out;
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace warm_test
