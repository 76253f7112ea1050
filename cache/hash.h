// xxHash64 for the cache: file checksums, fingerprint and key hashes, file names.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mlx::core::vulkan::cache {

uint64_t xxh64(std::span<const uint8_t> bytes, uint64_t seed = 0);
uint64_t xxh64(std::string_view text, uint64_t seed = 0);

// Streaming form: for bundles too large to hash in one piece, and for identities built
// from many fields (codegen's kernel_hash), which use the length-prefixed add() so that no
// two different field lists hash the same byte stream.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void update(std::span<const uint8_t> bytes);
  void add(std::string_view field);  // its length, then its bytes
  void add(uint64_t value);          // 8 bytes, host order
  uint64_t digest() const;

 private:
  void* state_;  // XXH64_state_t, kept opaque so that only hash.cpp includes xxhash.h
};

// 16 lowercase hex digits: the on-disk spelling of a hash.
std::string to_hex(uint64_t value);
// Inverse of to_hex; false unless text is exactly 16 lowercase hex digits.
bool from_hex(std::string_view text, uint64_t& value);

// The hash that names a device's directory and is stored in every file header.
inline uint64_t fingerprint_hash(std::string_view fingerprint) {
  return xxh64(fingerprint);
}

}  // namespace mlx::core::vulkan::cache
