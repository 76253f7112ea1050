// FIFOs, sockets and other files that are not regular files, under the names of cache
// entries: a lookup must never block on them (opening a FIFO for reading waits for a
// writer), they are bad entries, and the tool operations report and remove them. Every
// check that could hang runs in a child process with a time limit.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>

#include "cache/disk_cache.h"
#include "cache/file_io.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

// Long enough for a loaded 2-core CI machine; a lookup that blocks never finishes.
constexpr int kChildTimeoutS = 60;

fs::path entry_path(const fs::path& root, const std::string& device, uint64_t hash) {
  return kernel_path(root, fingerprint_hash(device), hash);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A listening-less Unix socket bound at `path` (the file stays after close).
bool make_socket_file(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) {
    return false;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof(addr.sun_path)) {
    ::close(fd);
    return false;
  }
  std::strcpy(addr.sun_path, path.c_str());
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TEST_CASE("read_file refuses a FIFO, a device and a directory without blocking") {
  TempDir tmp;
  fs::path fifo = tmp.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::path link = tmp.path() / "link-to-fifo";
  fs::create_symlink(fifo, link);
  int rc = run_in_child(
      [&]() -> int {
        for (const auto& [path, kind] :
             std::vector<std::pair<fs::path, std::string>>{{fifo, "a FIFO"},
                                                           {link, "a FIFO"},
                                                           {"/dev/null", "a character device"},
                                                           {tmp.path(), "a directory"}}) {
          std::string error;
          bool not_regular = false;
          if (read_file(path, error, kMaxFileBytes, &not_regular)) {
            return 10;
          }
          if (!not_regular || !contains(error, kind + ", not a regular file")) {
            return 11;
          }
        }
        std::string error;
        bool not_regular = true;
        if (read_file(tmp.path() / "absent", error, kMaxFileBytes, &not_regular) ||
            !error.empty() || not_regular) {
          return 12;
        }
        return 0;
      },
      kChildTimeoutS);
  CHECK(rc == 0);  // -2: read_file blocked
}

TEST_CASE("a FIFO or socket in place of an entry is a miss, warned once, and a store replaces it") {
  TempDir tmp;
  fs::path root = tmp.path();
  {
    auto cache = DiskCache::open(config_for(root), kDeviceA);
    cache.store(make_entry(1));  // creates the device directory
  }
  REQUIRE(::mkfifo(entry_path(root, kDeviceA, 2).c_str(), 0644) == 0);
  REQUIRE(::mkfifo(pipeline_cache_path(root, fingerprint_hash(kDeviceA)).c_str(), 0644) == 0);
  REQUIRE(make_socket_file(entry_path(root, kDeviceA, 3)));

  int rc = run_in_child(
      [&]() -> int {
        WarningCapture warnings;
        auto cache = DiskCache::open(config_for(root), kDeviceA);
        if (cache.load(2) || cache.load(2) || cache.load(3)) {
          return 10;
        }
        if (cache.load_pipeline_cache()) {
          return 11;
        }
        if (!cache.load(1)) {
          return 12;  // the good entry beside them still hits
        }
        auto stats = cache.stats();
        if (stats.bad_entries != 4 || stats.disk_misses != 3 || stats.kernel_files != 1) {
          return 13;
        }
        // One warning per bad file, however often it is looked up.
        if (warnings.lines.size() != 3) {
          return 14;
        }
        for (const auto& line : warnings.lines) {
          if (!contains(line, "not a regular file")) {
            return 15;
          }
        }
        if (!cache.writable()) {
          return 16;  // a bad entry is not a write error
        }
        // rename() replaces a FIFO or socket: the next store makes the entry good again.
        cache.store(make_entry(2));
        cache.store(make_entry(3));
        auto two = cache.load(2);
        auto three = cache.load(3);
        if (!two || !is_whole_entry(*two, 2) || !three || !is_whole_entry(*three, 3)) {
          return 17;
        }
        return 0;
      },
      kChildTimeoutS);
  CHECK(rc == 0);  // -2: a lookup blocked
}

TEST_CASE(
    "verify and list report a FIFO entry as bad, and verify --remove-bad and clear remove it") {
  TempDir tmp;
  fs::path root = tmp.path();
  auto cache = DiskCache::open(config_for(root), kDeviceA);
  cache.store(make_entry(1));
  fs::path fifo = entry_path(root, kDeviceA, 2);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::path pipe_fifo = pipeline_cache_path(root, fingerprint_hash(kDeviceA));
  REQUIRE(::mkfifo(pipe_fifo.c_str(), 0644) == 0);

  int rc = run_in_child(
      [&]() -> int {
        auto tool = DiskCache::open(config_for(root), "");
        auto scanned = scan(root);
        size_t irregular = 0;
        for (const auto& f : scanned) {
          irregular += !f.regular;
        }
        if (scanned.size() != 4 || irregular != 2) {
          return 10;  // kernel, fingerprint.txt, and the two FIFOs
        }
        std::vector<BadFile> bad;
        auto entries = tool.list(&bad);
        if (entries.size() != 1 || bad.size() != 1 || bad[0].path != fifo.string() ||
            !contains(bad[0].reason, "a FIFO, not a regular file")) {
          return 11;
        }
        auto report = tool.verify(false);
        if (report.checked != 4 || report.ok != 2 || report.bad.size() != 2) {
          return 12;
        }
        for (const auto& b : report.bad) {
          if (!contains(b.reason, "a FIFO")) {
            return 13;
          }
        }
        report = tool.verify(true);
        if (report.removed != 2 || fs::exists(fifo) || fs::exists(pipe_fifo)) {
          return 14;
        }
        if (!tool.verify(false).bad.empty()) {
          return 15;
        }
        if (::mkfifo(fifo.c_str(), 0644) != 0) {
          return 16;
        }
        if (tool.clear() != 3 || fs::exists(fifo)) {
          return 17;  // the kernel, fingerprint.txt and the FIFO
        }
        return 0;
      },
      kChildTimeoutS);
  CHECK(rc == 0);  // -2: verify or list blocked
}

TEST_CASE("export skips a FIFO entry and import refuses a FIFO bundle, neither blocking") {
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  auto cache = DiskCache::open(config_for(root), kDeviceA);
  cache.store(make_entry(1));
  REQUIRE(::mkfifo(entry_path(root, kDeviceA, 2).c_str(), 0644) == 0);
  fs::path bundle_fifo = tmp.path() / "bundle";
  REQUIRE(::mkfifo(bundle_fifo.c_str(), 0644) == 0);

  int rc = run_in_child(
      [&]() -> int {
        auto tool = DiskCache::open(config_for(root), kDeviceA);
        auto report = tool.export_bundle(tmp.path() / "out.bundle");
        if (report.kernels != 1 || report.skipped.size() != 1 ||
            !contains(report.skipped[0].reason, "a FIFO")) {
          return 10;
        }
        try {
          tool.import_bundle(bundle_fifo);
          return 11;
        } catch (const std::runtime_error& e) {
          if (!contains(e.what(), "cannot open bundle") || !contains(e.what(), "a FIFO")) {
            return 12;
          }
        }
        return 0;
      },
      kChildTimeoutS);
  CHECK(rc == 0);  // -2: export or import blocked
}
