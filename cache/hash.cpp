#include "cache/hash.h"

// GCC 12 reports -Warray-bounds false positives inside the inlined xxHash update loop.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#define XXH_INLINE_ALL
#include <xxhash.h>
#pragma GCC diagnostic pop

namespace mlx::core::vulkan::cache {

uint64_t xxh64(std::span<const uint8_t> bytes, uint64_t seed) {
  return XXH64(bytes.data(), bytes.size(), seed);
}

uint64_t xxh64(std::string_view text, uint64_t seed) {
  return XXH64(text.data(), text.size(), seed);
}

Hasher::Hasher() : state_(XXH64_createState()) {
  XXH64_reset(static_cast<XXH64_state_t*>(state_), 0);
}

Hasher::~Hasher() {
  XXH64_freeState(static_cast<XXH64_state_t*>(state_));
}

void Hasher::update(std::span<const uint8_t> bytes) {
  XXH64_update(static_cast<XXH64_state_t*>(state_), bytes.data(), bytes.size());
}

void Hasher::add(std::string_view field) {
  add(static_cast<uint64_t>(field.size()));
  XXH64_update(static_cast<XXH64_state_t*>(state_), field.data(), field.size());
}

void Hasher::add(uint64_t value) {
  XXH64_update(static_cast<XXH64_state_t*>(state_), &value, sizeof(value));
}

uint64_t Hasher::digest() const {
  return XXH64_digest(static_cast<XXH64_state_t*>(state_));
}

std::string to_hex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[i] = digits[value & 0xf];
    value >>= 4;
  }
  return out;
}

bool from_hex(std::string_view text, uint64_t& value) {
  if (text.size() != 16) {
    return false;
  }
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  value = v;
  return true;
}

}  // namespace mlx::core::vulkan::cache
