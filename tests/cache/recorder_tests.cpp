// MLX_VK_RECORD_KERNELS: one line per distinct key, across runs and processes.
#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "cache/recorder.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

std::vector<std::string> raw_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_CASE("a recorder writes each key once, in first-use order") {
  TempDir tmp;
  fs::path file = tmp.path() / "keys.txt";
  KeyRecorder rec(file);
  rec.record("binary:in=f32,op=Add");
  rec.record("unary:in=f16,op=Exp");
  rec.record("binary:in=f32,op=Add");
  CHECK(raw_lines(file) == std::vector<std::string>{"binary:in=f32,op=Add", "unary:in=f16,op=Exp"});
}

TEST_CASE("a second run appends only keys the file does not hold yet") {
  TempDir tmp;
  fs::path file = tmp.path() / "keys.txt";
  {
    KeyRecorder first(file);
    first.record("a:x=1");
    first.record("b:x=2");
  }
  KeyRecorder second(file);
  second.record("b:x=2");
  second.record("c:x=3");
  CHECK(raw_lines(file) == std::vector<std::string>{"a:x=1", "b:x=2", "c:x=3"});
}

TEST_CASE("keys that cannot be one line are refused with a warning") {
  TempDir tmp;
  WarningCapture warnings;
  KeyRecorder rec(tmp.path() / "keys.txt");
  rec.record("bad\nkey");
  rec.record("");
  rec.record(" padded");
  rec.record("#comment");
  rec.record("good:k=v");
  CHECK(raw_lines(tmp.path() / "keys.txt") == std::vector<std::string>{"good:k=v"});
  CHECK(warnings.lines.size() == 4);
}

TEST_CASE("recorders in several processes leave whole lines that fold to the union") {
  TempDir tmp;
  fs::path file = tmp.path() / "keys.txt";
  constexpr int kProcs = 4;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      KeyRecorder rec(file);
      for (int i = 0; i < 60; ++i) {
        // Overlapping sets: process p records keys p*10 .. p*10+59.
        rec.record("family:param=" + std::to_string(p * 10 + i) + ",pad=" + std::string(40, 'x'));
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
  }
  std::set<std::string> expected;
  for (int k = 0; k < (kProcs - 1) * 10 + 60; ++k) {
    expected.insert("family:param=" + std::to_string(k) + ",pad=" + std::string(40, 'x'));
  }
  for (const auto& line : raw_lines(file)) {
    CHECK(expected.count(line) == 1);  // never a torn or interleaved line
  }
  auto keys = read_recorded_keys(file);
  CHECK(std::set<std::string>(keys.begin(), keys.end()) == expected);
  CHECK(keys.size() == expected.size());
}

TEST_CASE("reading a key file skips blanks and comments and folds duplicates") {
  TempDir tmp;
  fs::path file = tmp.path() / "keys.txt";
  std::string text = "# recorded\n\na:x=1\n  b:x=2  \r\na:x=1\nc:x=3";
  write_bytes(file, std::vector<uint8_t>(text.begin(), text.end()));
  CHECK(read_recorded_keys(file) == std::vector<std::string>{"a:x=1", "b:x=2", "c:x=3"});
  CHECK(read_recorded_keys(tmp.path() / "missing.txt").empty());
  CHECK_THROWS_AS(read_recorded_keys(tmp.path()), std::runtime_error);  // a directory
}

TEST_CASE("an unwritable key file stops recording with one warning") {
  TempDir tmp;
  write_bytes(tmp.path() / "file", {1});
  WarningCapture warnings;
  KeyRecorder rec(tmp.path() / "file" / "keys.txt");
  rec.record("a:x=1");
  rec.record("b:x=2");
  CHECK(warnings.lines.size() == 1);
}

TEST_CASE("MLX_VK_RECORD_KERNELS names the recording file") {
  auto none = recorder_from_env([](const char*) { return std::optional<std::string>(); });
  CHECK(none == nullptr);
  auto rec = recorder_from_env([](const char* name) -> std::optional<std::string> {
    return std::string(name) == "MLX_VK_RECORD_KERNELS" ? std::optional<std::string>("/k.txt")
                                                        : std::nullopt;
  });
  REQUIRE(rec != nullptr);
  CHECK(rec->path() == fs::path("/k.txt"));
}
