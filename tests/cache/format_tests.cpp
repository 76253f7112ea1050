// The byte format: encode/decode round trips and every way decoding must refuse a file.
#include <doctest/doctest.h>

#include <cstring>

#include "cache/format.h"
#include "cache/hash.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

std::string reason_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "<accepted>";
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  REQUIRE(at + 4 <= b.size());
  uint8_t le[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                   static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
  std::memcpy(b.data() + at, le, 4);
}

}  // namespace

TEST_CASE("kernel entry survives encode and decode with every field intact") {
  KernelEntry e = make_entry(0xfeedface12345678ull, 7);
  auto file = encode_kernel(e, kDeviceA);
  KernelEntry d = decode_kernel(file, fingerprint_hash(kDeviceA), e.hash);
  CHECK(d.hash == e.hash);
  CHECK(d.key == e.key);
  CHECK(d.fingerprint == kDeviceA);
  CHECK(d.template_name == e.template_name);
  CHECK(d.template_hash == e.template_hash);
  CHECK(d.defines == e.defines);
  CHECK(d.glsl == e.glsl);
  CHECK(d.compiler_version == e.compiler_version);
  CHECK(d.optimizer_level == e.optimizer_level);
  CHECK(d.glslang_ms == e.glslang_ms);
  CHECK(d.optimize_ms == e.optimize_ms);
  CHECK(d.pipeline_ms == e.pipeline_ms);
  CHECK(d.created_ms == e.created_ms);
  CHECK(d.spirv == e.spirv);
}

TEST_CASE("header layout is little-endian at the documented offsets") {
  KernelEntry e = make_entry(0x0102030405060708ull);
  auto file = encode_kernel(e, kDeviceA);
  REQUIRE(file.size() > kHeaderSize);
  CHECK(std::memcmp(file.data(), "MLXVKKRN", 8) == 0);
  CHECK(file[8] == kFormatVersion);
  CHECK(file[12] == kHeaderSize);
  uint64_t payload_size = 0;
  std::memcpy(&payload_size, file.data() + 16, 8);  // the test host is little-endian
  CHECK(payload_size == file.size() - kHeaderSize);
  uint64_t payload_hash = 0, fp = 0, key = 0;
  std::memcpy(&payload_hash, file.data() + 24, 8);
  std::memcpy(&fp, file.data() + 32, 8);
  std::memcpy(&key, file.data() + 40, 8);
  CHECK(payload_hash == xxh64(std::span(file).subspan(kHeaderSize)));
  CHECK(fp == fingerprint_hash(kDeviceA));
  CHECK(key == e.hash);
  for (size_t i = 48; i < 64; ++i) {
    CHECK(file[i] == 0);
  }
}

TEST_CASE("decode names the reason for every kind of bad kernel file") {
  KernelEntry e = make_entry(42);
  const auto good = encode_kernel(e, kDeviceA);
  const uint64_t fp = fingerprint_hash(kDeviceA);
  auto decode = [&](std::vector<uint8_t> b, uint64_t key = 42) {
    return reason_of([&] { decode_kernel(b, fp, key); });
  };

  CHECK(decode(good) == "<accepted>");

  auto corrupt = good;
  corrupt[kHeaderSize + 20] ^= 0x40;
  CHECK(decode(corrupt).find("checksum") != std::string::npos);

  auto truncated = good;
  truncated.resize(good.size() - 3);
  CHECK(decode(truncated).find("truncated") != std::string::npos);

  auto header_only = good;
  header_only.resize(40);
  CHECK(decode(header_only).find("truncated") != std::string::npos);

  auto longer = good;
  longer.push_back(0);
  CHECK(decode(longer).find("longer") != std::string::npos);

  auto magic = good;
  std::memcpy(magic.data(), "GARBAGE!", 8);
  CHECK(decode(magic).find("wrong magic") != std::string::npos);

  auto kind = good;
  std::memcpy(kind.data(), "MLXVKPLC", 8);
  CHECK(decode(kind).find("wrong file kind") != std::string::npos);

  auto version = good;
  put_u32(version, 8, kFormatVersion + 1);
  CHECK(decode(version).find("format version 2") != std::string::npos);

  auto reserved = good;
  reserved[60] = 1;
  CHECK(decode(reserved).find("reserved") != std::string::npos);

  CHECK(decode(good, 43).find("key hash mismatch") != std::string::npos);
  CHECK(reason_of([&] {
          decode_kernel(good, fingerprint_hash(kDeviceB), 42);
        }).find("another device") != std::string::npos);

  CHECK(decode({}).find("truncated") != std::string::npos);
}

TEST_CASE("a correctly sealed payload that lies about its contents is still refused") {
  // Re-sealing with a valid checksum defeats the checksum; the payload's own checks remain.
  const uint64_t fp = fingerprint_hash(kDeviceA);
  auto reseal = [](std::vector<uint8_t> file) {
    std::span<const uint8_t> payload(file.data() + kHeaderSize, file.size() - kHeaderSize);
    FileHeader h = decode_header(file, FileKind::Kernel);
    h.payload_hash = xxh64(payload);
    auto header = encode_header(h);
    std::copy(header.begin(), header.end(), file.begin());
    return file;
  };

  KernelEntry bad_spirv = make_entry(5);
  bad_spirv.spirv[0] = 0xdeadbeef;
  auto file = reseal(encode_kernel(bad_spirv, kDeviceA));
  CHECK(reason_of([&] { decode_kernel(file, fp, 5); }).find("SPIR-V") != std::string::npos);

  KernelEntry short_spirv = make_entry(6);
  short_spirv.spirv.resize(3);
  file = encode_kernel(short_spirv, kDeviceA);
  CHECK(reason_of([&] { decode_kernel(file, fp, 6); }).find("fewer than 5") != std::string::npos);

  // The header claims device A but the payload's fingerprint text is device B's.
  auto foreign = encode_kernel(make_entry(7), kDeviceB);
  FileHeader h = decode_header(foreign, FileKind::Kernel);
  h.fingerprint_hash = fp;
  auto header = encode_header(h);
  std::copy(header.begin(), header.end(), foreign.begin());
  CHECK(reason_of([&] { decode_kernel(foreign, fp, 7); }).find("fingerprint text") !=
        std::string::npos);

  // A length field pointing past the end of the payload (first string: the fingerprint).
  auto lying = encode_kernel(make_entry(8), kDeviceA);
  put_u32(lying, kHeaderSize + 8, 0x7fffffff);
  lying = reseal(lying);
  CHECK(reason_of([&] { decode_kernel(lying, fp, 8); }).find("ends early") != std::string::npos);
}

TEST_CASE("pipeline-cache blob round trips and malformed driver data is refused") {
  auto blob = make_pipeline_blob(0xab);
  auto file = encode_pipeline_cache(blob, kDeviceA);
  auto back = decode_pipeline_cache(file, fingerprint_hash(kDeviceA));
  CHECK(back.data == blob);
  CHECK(back.fingerprint == kDeviceA);

  CHECK(reason_of([&] {
          decode_pipeline_cache(file, fingerprint_hash(kDeviceB));
        }).find("another device") != std::string::npos);

  CHECK(pipeline_cache_problem(std::vector<uint8_t>(10, 0)).has_value());
  auto bad_header = blob;
  bad_header[0] = 200;  // header size beyond the data
  CHECK(pipeline_cache_problem(bad_header).has_value());
  CHECK_FALSE(pipeline_cache_problem(blob).has_value());
}

TEST_CASE("hex spelling of hashes round trips and rejects anything else") {
  uint64_t v = 0;
  CHECK(to_hex(0x00ff00ff12345678ull) == "00ff00ff12345678");
  CHECK(from_hex("00ff00ff12345678", v));
  CHECK(v == 0x00ff00ff12345678ull);
  CHECK_FALSE(from_hex("00FF00FF12345678", v));  // upper case is not ours
  CHECK_FALSE(from_hex("00ff00ff1234567", v));
  CHECK_FALSE(from_hex("00ff00ff1234567g", v));
}
