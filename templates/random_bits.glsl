#version 450
// random::bits: Threefry-2x32 with 20 rounds in MLX's layout, the same function as the CPU
// reference (mlx/backend/cpu/random_bits.cpp, threefry.h), so one key draws the same bits on
// both devices. Each key i fills its own block of B (bytes_per_key) bytes: W = ceil(B / 4)
// words, H = W / 2, odd = W % 2; the hash of counter (j, j + H + odd) gives words j and
// j + H + odd (j < H), an odd middle word H is the first half of the hash of (H, 0), and the
// last word keeps its low B % 4 bytes. The output is written as 32-bit words whatever the
// element width (1, 2 or 4 bytes), so one pipeline serves every width.
//   MODE 0 (pairs), when B % 4 == 0: one invocation per counter (i, j) writes both words of
//     its hash, so each hash is computed once.
//   MODE 1 (bytes), any B: one invocation per 32-bit word of the output's byte stream; it
//     gathers the word's 4 bytes (from up to 4 keys' blocks when B < 4) and keeps the bytes
//     past the end of the output when the last word is partial (they are not the array's).
//     Byte indices are 32-bit: outputs under 2 GiB.
//   MODE 2 (whole words), when B % 4 == 0: one invocation per output word, its key and
//     block word found from word indices alone, so outputs up to 2^32 words (16 GiB) are
//     written, in windows that each fit one binding.
// No define changes the code: the engine only sets the workgroup size.

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer Keys {
  uint keys[];
};
// Not writeonly: MODE 1 reads back the bytes of a partial last word that it must keep.
layout(std430, set = 0, binding = 1) buffer Out {
  uint outw[];
};

// codegen/random.cpp packs exactly these fields.
layout(push_constant) uniform Params {
  uint count;          // invocations of this launch
  uint key_offset;     // element 0 of the keys (uint32 words) in their binding
  uint out_offset;     // the word at first_word in the output binding
  uint first_word;     // MODE 1: the first output word of this launch
  uint bytes_per_key;  // B (0 in MODE 2, where it may not fit)
  uint half_words;     // H
  uint odd;            // W % 2
  uint total_bytes;    // bytes of the whole output (0 in MODE 2)
  uint mode;
  uint words_per_key;  // W
}
pc;

const int kRotations[8] = int[8](13, 15, 26, 6, 17, 29, 16, 24);

uint rotl32(uint x, int r) {
  return (x << r) | (x >> (32 - r));
}

// Hashes counter (c0, c1) under key (k0, k1) (Random123's constants, threefry.h).
uvec2 threefry2x32_20(uint k0, uint k1, uint c0, uint c1) {
  uint ks[3] = uint[3](k0, k1, 0x1BD11BDAu ^ k0 ^ k1);
  uint x0 = c0 + ks[0];
  uint x1 = c1 + ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = rotl32(x1, kRotations[r & 7]);
    x1 ^= x0;
    if ((r & 3) == 3) {
      uint s = uint(r / 4 + 1);
      x0 += ks[s % 3u];
      x1 += ks[(s + 1u) % 3u] + s;
    }
  }
  return uvec2(x0, x1);
}

uint invocation() {
  return gl_WorkGroupID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
}

uvec2 key_of(uint i) {
  return uvec2(keys[pc.key_offset + 2u * i], keys[pc.key_offset + 2u * i + 1u]);
}

// Word w of key i's block.
uint block_word(uint i, uint w) {
  uvec2 k = key_of(i);
  uint h = pc.half_words;
  uint shift = h + pc.odd;
  if (w < h) {
    return threefry2x32_20(k.x, k.y, w, w + shift).x;
  }
  if (w < shift) {  // the odd middle word
    return threefry2x32_20(k.x, k.y, h, 0u).x;
  }
  return threefry2x32_20(k.x, k.y, w - shift, w).y;
}

void main() {
  uint t = invocation();
  if (t >= pc.count) {
    return;
  }
  if (pc.mode == 0u) {
    uint per_key = pc.half_words + pc.odd;
    uint i = t / per_key;
    uint j = t - i * per_key;
    uint words = 2u * pc.half_words + pc.odd;
    uint base = pc.out_offset + i * words;
    uvec2 k = key_of(i);
    if (j < pc.half_words) {
      uvec2 v = threefry2x32_20(k.x, k.y, j, j + per_key);
      outw[base + j] = v.x;
      outw[base + j + per_key] = v.y;
    } else {
      outw[base + j] = threefry2x32_20(k.x, k.y, j, 0u).x;
    }
    return;
  }
  uint g = pc.first_word + t;
  if (pc.mode == 2u) {
    uint i = g / pc.words_per_key;
    outw[pc.out_offset + t] = block_word(i, g - i * pc.words_per_key);
    return;
  }
  uint value = 0u;
  uint kept_mask = 0u;  // bytes of a partial last word that are not the output's
  uint cached_key = 0xffffffffu;
  uint cached_word = 0xffffffffu;
  uint word = 0u;
  for (uint b = 0u; b < 4u; ++b) {
    uint byte_index = 4u * g + b;
    if (byte_index >= pc.total_bytes) {
      kept_mask |= 0xffu << (8u * b);
      continue;
    }
    uint i = byte_index / pc.bytes_per_key;
    uint off = byte_index - i * pc.bytes_per_key;
    if (i != cached_key || (off >> 2) != cached_word) {
      cached_key = i;
      cached_word = off >> 2;
      word = block_word(i, cached_word);
    }
    value |= ((word >> (8u * (off & 3u))) & 0xffu) << (8u * b);
  }
  uint dst = pc.out_offset + t;
  if (kept_mask != 0u) {
    value |= outw[dst] & kept_mask;
  }
  outw[dst] = value;
}
