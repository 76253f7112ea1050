// Qwen3's tokenizer: a Hugging Face tokenizer.json with byte-level BPE (NFC normalizer, the
// Qwen2 split regex, GPT-2's byte-to-unicode map, ranked merges, added tokens), and an
// incremental decoder for streaming text. Only what Qwen2/Qwen3 tokenizer files use is
// implemented; any other normalizer, pre-tokenizer, model or decoder is refused by name.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qwen3 {

class Tokenizer {
 public:
  // Reads `path`; a missing file, invalid JSON or an unsupported configuration throws
  // std::invalid_argument("[tokenizer] <path>: ...").
  static Tokenizer from_file(const std::string& path);
  // `text` is the contents of a tokenizer.json; `source` names it in errors.
  static Tokenizer from_json(const std::string& text, const std::string& source);

  // Added tokens (<|im_start|>, <think>, ...) in `text` become their ids; the text between
  // them is NFC-normalized, split by the pre-tokenizer regex and merged by BPE. Bytes that
  // are not valid UTF-8 are kept as they are (one byte-level symbol each).
  std::vector<int> encode(std::string_view text) const;

  // The bytes of the tokens, concatenated: the exact inverse of encode for NFC input
  // (invalid UTF-8 included). Ids that name no token give nothing, as in Hugging Face's
  // decode; skip_special drops added tokens marked special.
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const;
  // The bytes of one token ("" for an id that names none).
  std::string token_bytes(int id) const;

  // The id of a vocabulary or added token by its text in the file ("<|im_end|>", "Ġthe").
  std::optional<int> token_id(const std::string& token) const;
  bool is_special(int id) const;
  // One past the largest id.
  int vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Turns a stream of token ids into valid UTF-8 pieces: bytes of a character split across
// tokens are held until it is complete; bytes that can never form a character come out as
// U+FFFD, one per maximal invalid sequence (Hugging Face's errors="replace").
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}
  // The text completed by `id` (possibly empty).
  std::string push(int id);
  // What is still held, as U+FFFD (an unfinished character at the end of the stream).
  std::string flush();

 private:
  std::string take(bool final);

  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;
};

// The text Qwen3's chat template renders for one user message with add_generation_prompt:
// "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n", followed by the empty
// thinking block "<think>\n\n</think>\n\n" when thinking is off (enable_thinking=false).
std::string chat_prompt(const std::string& prompt, bool enable_thinking = true);

}  // namespace qwen3
