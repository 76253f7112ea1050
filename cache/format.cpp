#include "cache/format.h"

#include <bit>
#include <cstring>

#include "cache/hash.h"

namespace mlx::core::vulkan::cache {

namespace {

constexpr char kKernelMagic[8] = {'M', 'L', 'X', 'V', 'K', 'K', 'R', 'N'};
constexpr char kPipelineMagic[8] = {'M', 'L', 'X', 'V', 'K', 'P', 'L', 'C'};
constexpr char kBundleMagic[8] = {'M', 'L', 'X', 'V', 'K', 'B', 'D', 'L'};

const char* magic_of(FileKind kind) {
  switch (kind) {
    case FileKind::Kernel:
      return kKernelMagic;
    case FileKind::PipelineCache:
      return kPipelineMagic;
    case FileKind::Bundle:
      return kBundleMagic;
  }
  return kKernelMagic;
}

const char* name_of(FileKind kind) {
  switch (kind) {
    case FileKind::Kernel:
      return "kernel entry";
    case FileKind::PipelineCache:
      return "pipeline-cache file";
    case FileKind::Bundle:
      return "bundle";
  }
  return "?";
}

// Little-endian on every host, so a cache or bundle moves between machines.
class Writer {
 public:
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
  }
  void i32(int32_t v) {
    u32(static_cast<uint32_t>(v));
  }
  void i64(int64_t v) {
    u64(static_cast<uint64_t>(v));
  }
  void f64(double v) {
    u64(std::bit_cast<uint64_t>(v));
  }
  void str(const std::string& s) {
    if (s.size() > UINT32_MAX) {
      throw FormatError("string too long for the cache format");
    }
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void bytes(std::span<const uint8_t> b) {
    out_.insert(out_.end(), b.begin(), b.end());
  }
  std::vector<uint8_t>& out() {
    return out_;
  }

 private:
  std::vector<uint8_t> out_;
};

// Every read is bounds-checked: a corrupt length can never read past the payload.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}

  uint32_t u32() {
    auto b = take(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= static_cast<uint32_t>(b[i]) << (8 * i);
    }
    return v;
  }
  uint64_t u64() {
    auto b = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      v |= static_cast<uint64_t>(b[i]) << (8 * i);
    }
    return v;
  }
  int32_t i32() {
    return static_cast<int32_t>(u32());
  }
  int64_t i64() {
    return static_cast<int64_t>(u64());
  }
  double f64() {
    return std::bit_cast<double>(u64());
  }
  std::string str() {
    uint32_t n = u32();
    auto b = take(n);
    return std::string(b.begin(), b.end());
  }
  std::span<const uint8_t> take(uint64_t n) {
    if (n > in_.size() - pos_) {
      throw FormatError("payload ends early (a length field points past its end)");
    }
    auto b = in_.subspan(pos_, n);
    pos_ += n;
    return b;
  }
  void expect_end() const {
    if (pos_ != in_.size()) {
      throw FormatError("payload has " + std::to_string(in_.size() - pos_) +
                        " unexpected trailing bytes");
    }
  }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

FileHeader finish_header(FileKind kind, std::span<const uint8_t> payload, uint64_t fingerprint_hash,
                         uint64_t key_hash) {
  FileHeader h;
  h.kind = kind;
  h.payload_size = payload.size();
  h.payload_hash = xxh64(payload);
  h.fingerprint_hash = fingerprint_hash;
  h.key_hash = key_hash;
  return h;
}

std::vector<uint8_t> seal(FileKind kind, std::vector<uint8_t> payload, uint64_t fingerprint_hash,
                          uint64_t key_hash) {
  auto header = encode_header(finish_header(kind, payload, fingerprint_hash, key_hash));
  // Sized once and filled by memcpy: GCC 12 misreports insert-after-reserve as an overflow.
  std::vector<uint8_t> file(header.size() + payload.size());
  std::memcpy(file.data(), header.data(), header.size());
  if (!payload.empty()) {
    std::memcpy(file.data() + header.size(), payload.data(), payload.size());
  }
  return file;
}

void check_device(const FileHeader& h, std::optional<uint64_t> expected) {
  if (expected && h.fingerprint_hash != *expected) {
    throw FormatError("written for another device (fingerprint hash " + to_hex(h.fingerprint_hash) +
                      ", this device " + to_hex(*expected) + ")");
  }
}

void check_fingerprint_text(const FileHeader& h, const std::string& fingerprint) {
  if (fingerprint_hash(fingerprint) != h.fingerprint_hash) {
    throw FormatError("fingerprint text does not match the header's fingerprint hash");
  }
}

}  // namespace

std::array<uint8_t, kHeaderSize> encode_header(const FileHeader& h) {
  Writer w;
  w.bytes({reinterpret_cast<const uint8_t*>(magic_of(h.kind)), 8});
  w.u32(h.version);
  w.u32(static_cast<uint32_t>(kHeaderSize));
  w.u64(h.payload_size);
  w.u64(h.payload_hash);
  w.u64(h.fingerprint_hash);
  w.u64(h.key_hash);
  w.u64(0);  // reserved
  w.u64(0);  // reserved
  std::array<uint8_t, kHeaderSize> out{};
  std::memcpy(out.data(), w.out().data(), kHeaderSize);
  return out;
}

FileHeader decode_header(std::span<const uint8_t> bytes, FileKind expected) {
  if (bytes.size() < kHeaderSize) {
    throw FormatError("truncated: " + std::to_string(bytes.size()) +
                      " bytes, shorter than the header");
  }
  FileHeader h;
  h.kind = expected;
  if (std::memcmp(bytes.data(), magic_of(expected), 8) != 0) {
    for (FileKind other : {FileKind::Kernel, FileKind::PipelineCache, FileKind::Bundle}) {
      if (std::memcmp(bytes.data(), magic_of(other), 8) == 0) {
        throw FormatError(std::string("wrong file kind: a ") + name_of(other) + ", expected a " +
                          name_of(expected));
      }
    }
    throw FormatError("wrong magic: not an mlx-vulkan cache file");
  }
  Reader r(bytes.subspan(8, kHeaderSize - 8));
  h.version = r.u32();
  if (h.version != kFormatVersion) {
    throw FormatError("format version " + std::to_string(h.version) + ", this build reads " +
                      std::to_string(kFormatVersion));
  }
  if (r.u32() != kHeaderSize) {
    throw FormatError("unexpected header size");
  }
  h.payload_size = r.u64();
  h.payload_hash = r.u64();
  h.fingerprint_hash = r.u64();
  h.key_hash = r.u64();
  if (r.u64() != 0 || r.u64() != 0) {
    throw FormatError("reserved header bytes are not zero");
  }
  return h;
}

FileHeader check_file(std::span<const uint8_t> file, FileKind expected) {
  FileHeader h = decode_header(file, expected);
  uint64_t have = file.size() - kHeaderSize;
  if (have < h.payload_size) {
    throw FormatError("truncated: payload has " + std::to_string(have) + " of " +
                      std::to_string(h.payload_size) + " bytes");
  }
  if (have > h.payload_size) {
    throw FormatError("file is " + std::to_string(have - h.payload_size) +
                      " bytes longer than its header says");
  }
  if (xxh64(file.subspan(kHeaderSize)) != h.payload_hash) {
    throw FormatError("payload checksum mismatch (corrupt bytes)");
  }
  return h;
}

std::vector<uint8_t> encode_kernel(const KernelEntry& e, const std::string& fingerprint) {
  Writer w;
  w.u64(e.hash);
  w.str(fingerprint);
  w.str(e.key);
  w.str(e.template_name);
  w.u64(e.template_hash);
  w.u32(static_cast<uint32_t>(e.defines.size()));
  for (const auto& d : e.defines) {
    w.str(d);
  }
  w.str(e.glsl);
  w.str(e.compiler_version);
  w.i32(e.optimizer_level);
  w.f64(e.glslang_ms);
  w.f64(e.optimize_ms);
  w.f64(e.pipeline_ms);
  w.i64(e.created_ms);
  w.u32(static_cast<uint32_t>(e.spirv.size()));
  for (uint32_t word : e.spirv) {
    w.u32(word);
  }
  return seal(FileKind::Kernel, std::move(w.out()), fingerprint_hash(fingerprint), e.hash);
}

KernelEntry decode_kernel(std::span<const uint8_t> file,
                          std::optional<uint64_t> expected_fingerprint_hash,
                          std::optional<uint64_t> expected_key_hash) {
  FileHeader h = check_file(file, FileKind::Kernel);
  check_device(h, expected_fingerprint_hash);
  if (expected_key_hash && h.key_hash != *expected_key_hash) {
    throw FormatError("key hash mismatch: header says " + to_hex(h.key_hash) + ", looked up " +
                      to_hex(*expected_key_hash));
  }
  Reader r(file.subspan(kHeaderSize));
  KernelEntry e;
  e.hash = r.u64();
  if (e.hash != h.key_hash) {
    throw FormatError("key hash in the payload does not match the header");
  }
  e.fingerprint = r.str();
  check_fingerprint_text(h, e.fingerprint);
  e.key = r.str();
  e.template_name = r.str();
  e.template_hash = r.u64();
  uint32_t n_defines = r.u32();
  for (uint32_t i = 0; i < n_defines; ++i) {
    e.defines.push_back(r.str());
  }
  e.glsl = r.str();
  e.compiler_version = r.str();
  e.optimizer_level = r.i32();
  e.glslang_ms = r.f64();
  e.optimize_ms = r.f64();
  e.pipeline_ms = r.f64();
  e.created_ms = r.i64();
  uint32_t n_words = r.u32();
  auto words = r.take(uint64_t{n_words} * 4);
  e.spirv.resize(n_words);
  for (uint32_t i = 0; i < n_words; ++i) {
    const uint8_t* b = words.data() + 4 * i;
    e.spirv[i] = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  }
  r.expect_end();
  if (auto problem = spirv_problem(e.spirv)) {
    throw FormatError("SPIR-V rejected: " + *problem);
  }
  return e;
}

std::vector<uint8_t> encode_pipeline_cache(std::span<const uint8_t> data,
                                           const std::string& fingerprint) {
  Writer w;
  w.str(fingerprint);
  w.u64(data.size());
  w.bytes(data);
  return seal(FileKind::PipelineCache, std::move(w.out()), fingerprint_hash(fingerprint), 0);
}

PipelineCacheFile decode_pipeline_cache(std::span<const uint8_t> file,
                                        std::optional<uint64_t> expected_fingerprint_hash) {
  FileHeader h = check_file(file, FileKind::PipelineCache);
  check_device(h, expected_fingerprint_hash);
  if (h.key_hash != 0) {
    throw FormatError("pipeline-cache file has a key hash");
  }
  Reader r(file.subspan(kHeaderSize));
  PipelineCacheFile out;
  out.fingerprint = r.str();
  check_fingerprint_text(h, out.fingerprint);
  auto data = r.take(r.u64());
  r.expect_end();
  out.data.assign(data.begin(), data.end());
  if (auto problem = pipeline_cache_problem(out.data)) {
    throw FormatError("pipeline-cache data rejected: " + *problem);
  }
  return out;
}

std::optional<std::string> spirv_problem(std::span<const uint32_t> words) {
  // Five header words: magic, version, generator, bound, schema.
  if (words.size() < 5) {
    return "fewer than 5 words";
  }
  if (words[0] != kSpirvMagic) {
    return "bad SPIR-V magic number";
  }
  if (words[3] == 0) {
    return "id bound is zero";
  }
  return std::nullopt;
}

std::optional<std::string> pipeline_cache_problem(std::span<const uint8_t> data) {
  // VkPipelineCacheHeaderVersionOne: headerSize, headerVersion, vendorID, deviceID, UUID[16].
  // The driver checks vendor, device and UUID itself; we only refuse malformed data.
  if (data.size() < 32) {
    return "shorter than the 32-byte Vulkan pipeline-cache header";
  }
  uint32_t header_size = uint32_t{data[0]} | uint32_t{data[1]} << 8 | uint32_t{data[2]} << 16 |
                         uint32_t{data[3]} << 24;
  if (header_size < 32 || header_size > data.size()) {
    return "Vulkan pipeline-cache header size " + std::to_string(header_size) + " is invalid";
  }
  return std::nullopt;
}

}  // namespace mlx::core::vulkan::cache
