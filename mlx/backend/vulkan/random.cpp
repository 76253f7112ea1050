// eval_gpu of RandomBits: the "random" family (codegen/random.h, templates/random_bits.glsl),
// Threefry-2x32-20 in MLX's layout, bit for bit the CPU reference's stream. Keys (..., 2) are
// read dense (copied first when they are a strided view); the output is written as 32-bit
// words: in pairs (one hash, two words) when every key's block is whole words and the output
// fits one binding, else word by word in windows that each fit one binding (by word indices
// when every block is whole words: outputs up to 16 GiB; by bytes otherwise: up to 2 GiB).
// docs/random.md.
#include <algorithm>
#include <limits>

#include "codegen/random.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;
using vulkan::Buf;

void launch(vulkan::CommandEncoder& enc, const vulkan::BoundOperand& bk, const Buf& out_words,
            codegen::RandomBitsGeometry g) {
  auto& dev = vulkan::device("RandomBits");
  int64_t words = g.pairs ? (g.total_bytes + 3) / 4 : g.words;
  auto bo = vulkan::bind_run(dev, out_words.at(g.first_word), words, true);
  g.key_offset = bk.elem_offset;
  g.out_offset = bo.elem_offset;
  const int64_t sig[] = {vulkan::family_word("random"),
                         g.pairs ? 1 : 0,
                         g.num_keys,
                         g.bytes_per_key,
                         g.first_word,
                         g.words,
                         static_cast<int64_t>(g.key_offset),
                         static_cast<int64_t>(g.out_offset)};
  const auto& planned = vulkan::memoized(sig, [&] {
    auto key = codegen::random_bits_key();
    const auto& kernel = vulkan::kernel_library().get(key);
    return vulkan::MemoEntry{&kernel, codegen::random_bits_launch(key, kernel.source, g)};
  });
  const vulkan::Binding bindings[] = {bk.binding, bo.binding};
  vulkan::record_launch(enc, *planned.kernel, planned.launch, bindings);
}

}  // namespace

void RandomBits::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& keys = inputs[0];
  if (keys.dtype() != uint32 || keys.ndim() < 1 || keys.shape(-1) != 2) {
    throw std::invalid_argument("[RandomBits] expects uint32 keys of shape (..., 2).");
  }
  Dtype expected = width_ == 1 ? uint8 : width_ == 2 ? uint16 : uint32;
  if (out.dtype() != expected) {
    throw std::invalid_argument("[RandomBits] output dtype does not match the width.");
  }
  // The kernel's indices are 32-bit: words of whole-word blocks, else bytes.
  const int64_t num_keys = static_cast<int64_t>(keys.size() / 2);
  const int64_t per_key = num_keys > 0 ? static_cast<int64_t>(out.nbytes()) / num_keys : 0;
  if (keys.size() >= std::numeric_limits<uint32_t>::max() / 2) {
    vulkan::cpu_fallback(*this, inputs, out, "2^30 keys or more");
    return;
  }
  if (static_cast<int64_t>(out.nbytes()) > codegen::random_bits_max_bytes(per_key)) {
    vulkan::cpu_fallback(*this, inputs, out,
                         codegen::random_bits_pairs(per_key)
                             ? "an output of 16 GiB or more"
                             : "an output of 2 GiB or more whose blocks are not whole words");
    return;
  }
  if (!vulkan::copies_fit({keys})) {
    vulkan::cpu_fallback(*this, inputs, out, "a key view wider than one storage binding");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (num_keys == 0 || out.size() == 0) {
    return;
  }
  auto& dev = vulkan::device("RandomBits");
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  Buf kb = vulkan::dense_run(enc, stream, keys, "u32");
  auto bk = vulkan::bind_run(dev, kb, static_cast<int64_t>(keys.size()), false);
  // The output as 32-bit words from its first byte (a new allocation, so word aligned).
  Buf words_buf{vulkan::allocation(out.buffer()), static_cast<int64_t>(out.offset()), "u32", 4};

  codegen::RandomBitsGeometry g;
  g.num_keys = num_keys;
  g.total_bytes = static_cast<int64_t>(out.nbytes());
  g.bytes_per_key = per_key;
  int64_t total_words = (g.total_bytes + 3) / 4;
  int64_t window = vulkan::binding_elems(dev, 4);
  if (codegen::random_bits_pairs(g.bytes_per_key) && total_words <= window) {
    g.pairs = true;
    launch(enc, bk, words_buf, g);
    return;
  }
  for (int64_t w0 = 0; w0 < total_words; w0 += window) {
    g.first_word = w0;
    g.words = std::min(window, total_words - w0);
    launch(enc, bk, words_buf, g);
  }
}

}  // namespace mlx::core
