#include "cache/bundle.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "cache/file_io.h"
#include "cache/format.h"
#include "cache/hash.h"
#include "cache/layout.h"

namespace mlx::core::vulkan::cache {

namespace {

enum RecordKind : uint32_t { kKernelRecord = 1, kPipelineRecord = 2 };
constexpr size_t kRecordHeaderSize = 16;  // u32 kind, u32 reserved, u64 length

[[noreturn]] void fail(const std::string& message) {
  throw std::runtime_error("[cache] " + message);
}

std::string errno_text() {
  return std::strerror(errno);
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= uint64_t{p[i]} << (8 * i);
  }
  return v;
}

uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// The bundle's temp file: written sequentially, hashed as it goes, renamed at the end.
class BundleWriter {
 public:
  explicit BundleWriter(const std::filesystem::path& path) : path_(path) {
    static std::atomic<uint64_t> counter{0};
    tmp_ = path.parent_path() /
           (".tmp-" + path.filename().string() + "-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter.fetch_add(1)));
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      fail("cannot create " + tmp_.string() + ": " + errno_text());
    }
    uint8_t zeros[kHeaderSize] = {};
    write_raw(zeros, kHeaderSize);  // placeholder until the payload hash is known
  }
  ~BundleWriter() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  void record(uint32_t kind, std::span<const uint8_t> bytes) {
    uint8_t head[kRecordHeaderSize] = {};
    put_u32(head, kind);
    put_u64(head + 8, bytes.size());
    payload(std::span<const uint8_t>(head, kRecordHeaderSize));
    payload(bytes);
  }

  uint64_t finish() {
    FileHeader h;
    h.kind = FileKind::Bundle;
    h.payload_size = payload_size_;
    h.payload_hash = hasher_.digest();
    auto header = encode_header(h);
    if (::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
        ::fsync(fd_) != 0) {
      fail("cannot write " + tmp_.string() + ": " + errno_text());
    }
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp_.c_str());
      fail("cannot write " + path_.string() + ": " + std::strerror(err));
    }
    return kHeaderSize + payload_size_;
  }

 private:
  void payload(std::span<const uint8_t> bytes) {
    hasher_.update(bytes);
    payload_size_ += bytes.size();
    write_raw(bytes.data(), bytes.size());
  }
  void write_raw(const uint8_t* data, size_t size) {
    while (size > 0) {
      ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        fail("cannot write " + tmp_.string() + ": " + errno_text());
      }
      data += n;
      size -= static_cast<size_t>(n);
    }
  }

  std::filesystem::path path_;
  std::filesystem::path tmp_;
  int fd_ = -1;
  Hasher hasher_;
  uint64_t payload_size_ = 0;
};

class BundleReader {
 public:
  explicit BundleReader(const std::filesystem::path& path) : path_(path) {
    // A bundle is read with pread: a FIFO could not work, and must not block either.
    std::string error;
    bool not_regular = false;
    fd_ = open_regular(path, error, not_regular);
    if (fd_ < 0) {
      fail(error.empty() ? "cannot open bundle " + path.string() + ": " + std::strerror(ENOENT)
                         : "cannot open bundle: " + error);
    }
  }
  ~BundleReader() {
    ::close(fd_);
  }
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;

  // Reads exactly `size` bytes at `offset`; false at end of file.
  bool read_at(uint64_t offset, uint8_t* out, size_t size) {
    while (size > 0) {
      ssize_t n = ::pread(fd_, out, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        fail("cannot read bundle " + path_.string() + ": " + errno_text());
      }
      if (n == 0) {
        return false;
      }
      out += n;
      size -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return true;
  }

  // Validates the header and the checksum of the whole payload; returns the payload size.
  uint64_t check() {
    uint8_t header[kHeaderSize];
    if (!read_at(0, header, kHeaderSize)) {
      fail("bundle " + path_.string() + " is truncated (no complete header)");
    }
    FileHeader h;
    try {
      h = decode_header(std::span<const uint8_t>(header, kHeaderSize), FileKind::Bundle);
    } catch (const FormatError& e) {
      fail("bad bundle " + path_.string() + ": " + e.what());
    }
    Hasher hasher;
    std::vector<uint8_t> chunk(1 << 20);
    uint64_t done = 0;
    while (done < h.payload_size) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), h.payload_size - done));
      if (!read_at(kHeaderSize + done, chunk.data(), n)) {
        fail("bundle " + path_.string() + " is truncated");
      }
      hasher.update(std::span<const uint8_t>(chunk.data(), n));
      done += n;
    }
    uint8_t extra;
    if (read_at(kHeaderSize + h.payload_size, &extra, 1)) {
      fail("bundle " + path_.string() + " is longer than its header says");
    }
    if (hasher.digest() != h.payload_hash) {
      fail("bundle " + path_.string() + " is corrupt (payload checksum mismatch)");
    }
    return h.payload_size;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

void write_or_fail(const std::filesystem::path& path, std::span<const uint8_t> bytes, bool sync) {
  if (auto err = atomic_write(path, bytes, sync)) {
    fail(*err);
  }
}

}  // namespace

ExportReport export_bundle(const std::filesystem::path& root, const std::filesystem::path& bundle) {
  ExportReport report;
  BundleWriter writer(bundle);
  for (const auto& f : scan(root)) {
    if (f.role != FileRole::Kernel && f.role != FileRole::PipelineCache) {
      continue;
    }
    std::string error;
    auto bytes = read_file(f.path, error);
    if (!bytes) {
      if (!error.empty()) {  // a file evicted since the scan is simply gone
        report.skipped.push_back({f.path.string(), error});
      }
      continue;
    }
    try {
      if (f.role == FileRole::Kernel) {
        decode_kernel(*bytes, f.fingerprint_hash, f.key_hash);
        writer.record(kKernelRecord, *bytes);
        ++report.kernels;
      } else {
        decode_pipeline_cache(*bytes, f.fingerprint_hash);
        writer.record(kPipelineRecord, *bytes);
        ++report.pipeline_caches;
      }
    } catch (const FormatError& e) {
      report.skipped.push_back({f.path.string(), e.what()});
    }
  }
  report.bytes = writer.finish();
  return report;
}

ImportReport import_bundle(const std::filesystem::path& root, const std::filesystem::path& bundle,
                           const std::string& current_fingerprint) {
  ImportReport report;
  BundleReader reader(bundle);
  uint64_t payload_size = reader.check();
  uint64_t offset = 0;
  int index = 0;
  while (offset < payload_size) {
    std::string where = bundle.string() + " record " + std::to_string(index++);
    uint8_t head[kRecordHeaderSize];
    if (payload_size - offset < kRecordHeaderSize ||
        !reader.read_at(kHeaderSize + offset, head, kRecordHeaderSize)) {
      fail("bundle " + bundle.string() + " has a truncated record header");
    }
    uint32_t kind = get_u32(head);
    uint64_t length = get_u64(head + 8);
    offset += kRecordHeaderSize;
    if (length > payload_size - offset) {
      fail("bundle " + bundle.string() + ": " + where + " runs past the end");
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(length));
    if (!reader.read_at(kHeaderSize + offset, bytes.data(), bytes.size())) {
      fail("bundle " + bundle.string() + " shrank while it was read");
    }
    offset += length;
    if (get_u32(head + 4) != 0) {
      report.bad.push_back({where, "reserved record bytes are not zero"});
      continue;
    }
    try {
      if (kind == kKernelRecord) {
        KernelEntry e = decode_kernel(bytes, std::nullopt, std::nullopt);
        if (auto err = prepare_device_dir(root, e.fingerprint)) {
          fail(*err);
        }
        write_or_fail(kernel_path(root, fingerprint_hash(e.fingerprint), e.hash), bytes, false);
        ++report.kernels;
        if (e.fingerprint != current_fingerprint) {
          ++report.foreign_kernels;
        }
      } else if (kind == kPipelineRecord) {
        PipelineCacheFile p = decode_pipeline_cache(bytes, std::nullopt);
        if (p.fingerprint != current_fingerprint) {
          ++report.foreign_pipeline_caches;
          continue;
        }
        if (auto err = prepare_device_dir(root, p.fingerprint)) {
          fail(*err);
        }
        write_or_fail(pipeline_cache_path(root, fingerprint_hash(p.fingerprint)), bytes, true);
        ++report.pipeline_caches;
      } else {
        report.bad.push_back({where, "unknown record kind " + std::to_string(kind)});
      }
    } catch (const FormatError& e) {
      report.bad.push_back({where, e.what()});
    }
  }
  return report;
}

}  // namespace mlx::core::vulkan::cache
