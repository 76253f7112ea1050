#include "tokenizer.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <mutex>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <nlohmann/json.hpp>

namespace qwen3 {

namespace {

using nlohmann::json;

std::invalid_argument tokenizer_error(const std::string& source, const std::string& what) {
  return std::invalid_argument("[tokenizer] " + source + ": " + what);
}

// The UTF-8 sequence starting at s[i]: complete (its length), a valid prefix cut off by the
// end of s, or invalid (the length of its maximal valid prefix, at least 1), by the
// well-formed byte sequences of the Unicode standard (table 3-7).
enum class Utf8 { complete, truncated, invalid };
struct Utf8Step {
  Utf8 kind;
  size_t length;
};

Utf8Step utf8_step(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    return {Utf8::complete, 1};
  }
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    lo = b0 == 0xE0 ? 0xA0 : 0x80;
    hi = b0 == 0xED ? 0x9F : 0xBF;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    lo = b0 == 0xF0 ? 0x90 : 0x80;
    hi = b0 == 0xF4 ? 0x8F : 0xBF;
  } else {
    return {Utf8::invalid, 1};
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) {
      return {Utf8::truncated, k};
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) {
      return {Utf8::invalid, k};
    }
  }
  return {Utf8::complete, need};
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The code points of valid UTF-8 `s`; nullopt if it is not valid.
std::optional<std::vector<uint32_t>> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    auto step = utf8_step(s, i);
    if (step.kind != Utf8::complete) {
      return std::nullopt;
    }
    auto b = reinterpret_cast<const unsigned char*>(s.data() + i);
    uint32_t cp = step.length == 1   ? b[0]
                  : step.length == 2 ? ((b[0] & 0x1Fu) << 6) | (b[1] & 0x3Fu)
                  : step.length == 3
                      ? ((b[0] & 0x0Fu) << 12) | ((b[1] & 0x3Fu) << 6) | (b[2] & 0x3Fu)
                      : ((b[0] & 0x07u) << 18) | ((b[1] & 0x3Fu) << 12) | ((b[2] & 0x3Fu) << 6) |
                            (b[3] & 0x3Fu);
    out.push_back(cp);
    i += step.length;
  }
  return out;
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68
// bytes for U+0100.. in byte order, so every byte is a visible character in the vocabulary.
std::array<uint32_t, 256> bytes_to_unicode() {
  std::array<uint32_t, 256> map{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[b] = printable ? b : next++;
  }
  return map;
}

const std::string& as_string(const json& j, const std::string& what, const std::string& source) {
  if (!j.is_string()) {
    throw tokenizer_error(source, what + " is not a string");
  }
  return j.get_ref<const std::string&>();
}

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") && j.at("type").is_string()
             ? j.at("type").get<std::string>()
             : j.dump();
}

bool flag(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_boolean() && j.at(key).get<bool>();
}

struct CodeFree {
  void operator()(pcre2_code* c) const {
    pcre2_code_free(c);
  }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* m) const {
    pcre2_match_data_free(m);
  }
};

}  // namespace

struct Tokenizer::Impl {
  std::string source;
  std::unique_ptr<pcre2_code, CodeFree> split;
  bool nfc = false;

  std::unordered_map<std::string, int> vocab;  // byte-level text ("Ġthe") -> id
  std::vector<std::string> bytes;              // id -> the bytes it decodes to
  std::vector<char> has_token;                 // id names a token
  std::vector<char> special;                   // id is a special added token
  std::array<int, 256> byte_id{};              // the id of each single byte

  // (left id, right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int, int>> merges;

  struct Added {
    std::string content;
    int id;
  };
  std::vector<Added> added;
  std::unordered_map<std::string, int> added_ids;
  // Indices into `added` by first byte, longest first.
  std::array<std::vector<int>, 256> added_by_byte;

  // Word cache: a pre-tokenized piece -> its ids.
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int>> cache;

  void set_token(int id, std::string text_bytes, const std::string& what) {
    // Ids index dense tables: a bound keeps a corrupt file from allocating gigabytes.
    if (id < 0 || id >= (1 << 24)) {
      throw tokenizer_error(source, what + " has id " + std::to_string(id) + ", outside [0, 2^24)");
    }
    if (static_cast<size_t>(id) >= bytes.size()) {
      bytes.resize(id + 1);
      has_token.resize(id + 1, 0);
      special.resize(id + 1, 0);
    }
    bytes[id] = std::move(text_bytes);
    has_token[id] = 1;
  }

  void parse_normalizer(const json& n) {
    if (n.is_null()) {
      return;
    }
    if (type_of(n) == "NFC") {
      nfc = true;
      return;
    }
    throw tokenizer_error(source, "unsupported normalizer " + type_of(n) + " (only NFC)");
  }

  // Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false, add_prefix_space=false)],
  // what Qwen2 and Qwen3 ship.
  void parse_pre_tokenizer(const json& p) {
    const std::string expected =
        "(expected Sequence of Split(Regex, behavior Isolated) and ByteLevel(use_regex "
        "false, add_prefix_space false))";
    if (type_of(p) != "Sequence" || !p.contains("pretokenizers") ||
        !p.at("pretokenizers").is_array() || p.at("pretokenizers").size() != 2) {
      throw tokenizer_error(source, "unsupported pre_tokenizer " + type_of(p) + " " + expected);
    }
    const auto& s = p.at("pretokenizers")[0];
    const auto& b = p.at("pretokenizers")[1];
    if (type_of(s) != "Split" || !s.contains("pattern") || !s.at("pattern").is_object() ||
        !s.at("pattern").contains("Regex") || s.value("behavior", "") != "Isolated" ||
        flag(s, "invert")) {
      throw tokenizer_error(source, "unsupported pre_tokenizer split " + s.dump() + " " + expected);
    }
    if (type_of(b) != "ByteLevel" || flag(b, "use_regex") || flag(b, "add_prefix_space")) {
      throw tokenizer_error(source, "unsupported pre_tokenizer step " + b.dump() + " " + expected);
    }
    const auto& pattern = as_string(s.at("pattern").at("Regex"), "the split regex", source);
    int code = 0;
    PCRE2_SIZE offset = 0;
    split.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &offset,
                              nullptr));
    if (!split) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(code, message.data(), message.size());
      throw tokenizer_error(source, "the split regex does not compile at offset " +
                                        std::to_string(offset) + ": " +
                                        reinterpret_cast<const char*>(message.data()));
    }
    // JIT is an optimization only: without it the interpreter gives the same matches.
    pcre2_jit_compile(split.get(), PCRE2_JIT_COMPLETE);
  }

  void parse_model(const json& m) {
    if (type_of(m) != "BPE") {
      throw tokenizer_error(source, "unsupported model " + type_of(m) + " (only BPE)");
    }
    auto empty = [&](const char* key) {
      return !m.contains(key) || m.at(key).is_null() || m.at(key) == json("");
    };
    if (flag(m, "byte_fallback") || flag(m, "ignore_merges") || !empty("dropout") ||
        !empty("continuing_subword_prefix") || !empty("end_of_word_suffix")) {
      throw tokenizer_error(source,
                            "unsupported BPE options (byte_fallback, ignore_merges, dropout, "
                            "continuing_subword_prefix and end_of_word_suffix must be off)");
    }
    if (!m.contains("vocab") || !m.at("vocab").is_object()) {
      throw tokenizer_error(source, "model.vocab is missing or not an object");
    }
    if (!m.contains("merges") || !m.at("merges").is_array()) {
      throw tokenizer_error(source, "model.merges is missing or not an array");
    }
    std::unordered_map<uint32_t, int> unicode_to_byte;
    auto to_unicode = bytes_to_unicode();
    for (int b = 0; b < 256; ++b) {
      unicode_to_byte[to_unicode[b]] = b;
    }
    // A token's bytes: each character through the byte map, or the token's own UTF-8 when
    // some character is not in the map (Hugging Face's ByteLevel decoder does the same).
    auto token_to_bytes = [&](const std::string& token) {
      std::string out;
      auto cps = code_points(token);
      if (!cps) {
        return token;
      }
      for (auto cp : *cps) {
        auto it = unicode_to_byte.find(cp);
        if (it == unicode_to_byte.end()) {
          return token;
        }
        out += static_cast<char>(it->second);
      }
      return out;
    };
    vocab.reserve(m.at("vocab").size());
    for (const auto& [token, id] : m.at("vocab").items()) {
      if (!id.is_number_integer()) {
        throw tokenizer_error(source, "model.vocab[\"" + token + "\"] is not an integer");
      }
      vocab[token] = id.get<int>();
      set_token(id.get<int>(), token_to_bytes(token), "model.vocab[\"" + token + "\"]");
    }
    for (int b = 0; b < 256; ++b) {
      std::string symbol;
      append_utf8(symbol, to_unicode[b]);
      auto it = vocab.find(symbol);
      if (it == vocab.end()) {
        throw tokenizer_error(source, "the vocabulary lacks the byte-level symbol of byte " +
                                          std::to_string(b) + " (" + symbol + ")");
      }
      byte_id[b] = it->second;
    }
    const auto& list = m.at("merges");
    merges.reserve(list.size());
    for (size_t rank = 0; rank < list.size(); ++rank) {
      const auto& e = list[rank];
      std::string left, right;
      if (e.is_string()) {
        const auto& s = e.get_ref<const std::string&>();
        auto space = s.find(' ');
        if (space == std::string::npos) {
          throw tokenizer_error(
              source, "model.merges[" + std::to_string(rank) + "] \"" + s + "\" is not two tokens");
        }
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        left = e[0].get<std::string>();
        right = e[1].get<std::string>();
      } else {
        throw tokenizer_error(source, "model.merges[" + std::to_string(rank) +
                                          "] is neither \"a b\" nor [\"a\", \"b\"]");
      }
      auto l = vocab.find(left), r = vocab.find(right), merged = vocab.find(left + right);
      if (l == vocab.end() || r == vocab.end() || merged == vocab.end()) {
        throw tokenizer_error(source, "model.merges[" + std::to_string(rank) + "] (" + left + " " +
                                          right + ") names a token not in the vocabulary");
      }
      // A pair listed twice keeps its first (lowest) rank, as Hugging Face does.
      merges.try_emplace(pair_key(l->second, r->second), static_cast<int>(rank), merged->second);
    }
  }

  void parse_added(const json& list) {
    if (list.is_null()) {
      return;
    }
    if (!list.is_array()) {
      throw tokenizer_error(source, "added_tokens is not an array");
    }
    for (const auto& t : list) {
      if (!t.is_object() || !t.contains("id") || !t.at("id").is_number_integer() ||
          !t.contains("content") || !t.at("content").is_string()) {
        throw tokenizer_error(source, "an added token lacks an integer id or a string content");
      }
      const auto content = t.at("content").get<std::string>();
      if (content.empty()) {
        throw tokenizer_error(source, "an added token has empty content");
      }
      if (flag(t, "single_word") || flag(t, "lstrip") || flag(t, "rstrip")) {
        throw tokenizer_error(source, "added token " + content +
                                          ": single_word, lstrip and rstrip are not supported");
      }
      const int id = t.at("id").get<int>();
      set_token(id, content, "added token " + content);
      special[id] = flag(t, "special") ? 1 : 0;
      added_ids[content] = id;
      added.push_back({content, id});
    }
    for (size_t i = 0; i < added.size(); ++i) {
      added_by_byte[static_cast<unsigned char>(added[i].content[0])].push_back(static_cast<int>(i));
    }
    for (auto& v : added_by_byte) {
      std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
        return added[a].content.size() > added[b].content.size();
      });
    }
  }

  static uint64_t pair_key(int a, int b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  // The longest added token at text[i], or -1.
  int added_at(std::string_view text, size_t i) const {
    for (int k : added_by_byte[static_cast<unsigned char>(text[i])]) {
      const auto& c = added[k].content;
      if (text.compare(i, c.size(), c) == 0) {
        return k;
      }
    }
    return -1;
  }

  // NFC of the valid UTF-8 runs; bytes that are not UTF-8 stay as they are.
  std::string normalize(std::string_view text) const {
    bool ascii = true;
    for (char c : text) {
      ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    }
    if (!nfc || ascii) {
      return std::string(text);
    }
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) {
      throw std::runtime_error(std::string("[tokenizer] ICU's NFC normalizer is unavailable: ") +
                               u_errorName(status));
    }
    std::string out;
    size_t run = 0;
    auto flush_run = [&](size_t end) {
      if (end > run) {
        icu::StringByteSink<std::string> sink(&out);
        UErrorCode s = U_ZERO_ERROR;
        n->normalizeUTF8(0, icu::StringPiece(text.data() + run, static_cast<int32_t>(end - run)),
                         sink, nullptr, s);
        if (U_FAILURE(s)) {
          throw std::runtime_error(std::string("[tokenizer] NFC normalization failed: ") +
                                   u_errorName(s));
        }
      }
    };
    for (size_t i = 0; i < text.size();) {
      auto step = utf8_step(text, i);
      if (step.kind == Utf8::complete) {
        i += step.length;
        continue;
      }
      flush_run(i);
      out.append(text.substr(i, step.length));
      i += step.length;
      run = i;
    }
    flush_run(text.size());
    return out;
  }

  // Byte-level BPE of one piece: start from one symbol per byte and apply the lowest-ranked
  // merge present (leftmost on ties) until none applies, as Hugging Face's Word::merge_all.
  std::vector<int> bpe(std::string_view piece) const {
    struct Symbol {
      int id, prev, next;
      bool alive;
    };
    std::vector<Symbol> s(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) {
      s[i] = {byte_id[static_cast<unsigned char>(piece[i])], static_cast<int>(i) - 1,
              i + 1 < piece.size() ? static_cast<int>(i) + 1 : -1, true};
    }
    struct Candidate {
      int rank, pos, left, right;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto consider = [&](int pos) {
      if (pos < 0 || s[pos].next < 0) {
        return;
      }
      auto it = merges.find(pair_key(s[pos].id, s[s[pos].next].id));
      if (it != merges.end()) {
        queue.push({it->second.first, pos, s[pos].id, s[s[pos].next].id});
      }
    };
    for (int i = 0; i + 1 < static_cast<int>(s.size()); ++i) {
      consider(i);
    }
    while (!queue.empty()) {
      auto c = queue.top();
      queue.pop();
      // A merged symbol always has a new (longer) id, so matching ids mean the pair is
      // still there.
      auto& left = s[c.pos];
      if (!left.alive || left.id != c.left || left.next < 0 || s[left.next].id != c.right) {
        continue;
      }
      auto& right = s[left.next];
      left.id = merges.at(pair_key(c.left, c.right)).second;
      right.alive = false;
      left.next = right.next;
      if (left.next >= 0) {
        s[left.next].prev = c.pos;
      }
      consider(left.prev);
      consider(c.pos);
    }
    std::vector<int> ids;
    for (int i = s.empty() ? -1 : 0; i >= 0; i = s[i].next) {
      ids.push_back(s[i].id);
    }
    return ids;
  }

  void encode_piece(std::string_view piece, std::vector<int>& out) const {
    std::string key(piece);
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      auto it = cache.find(key);
      if (it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    auto ids = bpe(piece);
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache.size() >= (1u << 16)) {
      cache.clear();
    }
    cache.emplace(std::move(key), std::move(ids));
  }

  // Normalize, split by the regex (matches and the text between them are pieces: the
  // "Isolated" behavior), then BPE each piece.
  void encode_text(std::string_view raw, std::vector<int>& out) const {
    if (raw.empty()) {
      return;
    }
    const std::string text = normalize(raw);
    std::unique_ptr<pcre2_match_data, MatchDataFree> match(
        pcre2_match_data_create_from_pattern(split.get(), nullptr));
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;
    while (pos < text.size()) {
      int rc = pcre2_match(split.get(), subject, text.size(), pos, 0, match.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) {
        break;
      }
      if (rc < 0) {
        std::array<PCRE2_UCHAR, 256> message{};
        pcre2_get_error_message(rc, message.data(), message.size());
        throw std::runtime_error(std::string("[tokenizer] the split regex failed: ") +
                                 reinterpret_cast<const char*>(message.data()));
      }
      const PCRE2_SIZE* v = pcre2_get_ovector_pointer(match.get());
      size_t start = v[0], end = v[1];
      if (start > pos) {
        encode_piece(std::string_view(text).substr(pos, start - pos), out);
      }
      if (end > start) {
        encode_piece(std::string_view(text).substr(start, end - start), out);
        pos = end;
      } else {
        // An empty match: move past one character so the search cannot stall.
        auto step = utf8_step(text, start);
        size_t next = start + (step.kind == Utf8::complete ? step.length : 1);
        encode_piece(std::string_view(text).substr(start, next - start), out);
        pos = next;
      }
    }
    if (pos < text.size()) {
      encode_piece(std::string_view(text).substr(pos), out);
    }
  }
};

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::invalid_argument("[tokenizer] cannot open " + path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path);
}

Tokenizer Tokenizer::from_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw tokenizer_error(source, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) {
    throw tokenizer_error(source, "not a JSON object");
  }
  for (const char* key : {"model", "pre_tokenizer"}) {
    if (!j.contains(key)) {
      throw tokenizer_error(source, std::string("missing field \"") + key + "\"");
    }
  }
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  impl->parse_normalizer(j.value("normalizer", json()));
  impl->parse_pre_tokenizer(j.at("pre_tokenizer"));
  const auto decoder = j.value("decoder", json());
  if (type_of(decoder) != "ByteLevel") {
    throw tokenizer_error(source, "unsupported decoder " + type_of(decoder) + " (only ByteLevel)");
  }
  impl->parse_model(j.at("model"));
  impl->parse_added(j.value("added_tokens", json()));
  return Tokenizer(std::move(impl));
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
  std::vector<int> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    int k = impl_->added_at(text, i);
    if (k < 0) {
      ++i;
      continue;
    }
    impl_->encode_text(text.substr(start, i - start), out);
    out.push_back(impl_->added[k].id);
    i += impl_->added[k].content.size();
    start = i;
  }
  impl_->encode_text(text.substr(start), out);
  return out;
}

std::string Tokenizer::token_bytes(int id) const {
  if (id < 0 || id >= vocab_size() || !impl_->has_token[id]) {
    return {};
  }
  return impl_->bytes[id];
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  std::string out;
  for (int id : ids) {
    if (!(skip_special && is_special(id))) {
      out += token_bytes(id);
    }
  }
  return out;
}

std::optional<int> Tokenizer::token_id(const std::string& token) const {
  if (auto it = impl_->added_ids.find(token); it != impl_->added_ids.end()) {
    return it->second;
  }
  if (auto it = impl_->vocab.find(token); it != impl_->vocab.end()) {
    return it->second;
  }
  return std::nullopt;
}

bool Tokenizer::is_special(int id) const {
  return id >= 0 && id < vocab_size() && impl_->special[id];
}

int Tokenizer::vocab_size() const {
  return static_cast<int>(impl_->bytes.size());
}

std::string StreamDecoder::push(int id) {
  if (!(skip_special_ && tokenizer_.is_special(id))) {
    pending_ += tokenizer_.token_bytes(id);
  }
  return take(false);
}

std::string StreamDecoder::flush() {
  return take(true);
}

std::string StreamDecoder::take(bool final) {
  static const std::string replacement = "\xEF\xBF\xBD";
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    auto step = utf8_step(pending_, i);
    if (step.kind == Utf8::truncated && !final) {
      break;  // the rest of the character may come with the next token
    }
    if (step.kind == Utf8::complete) {
      out.append(pending_, i, step.length);
    } else {
      out += replacement;
    }
    i += step.length;
  }
  pending_.erase(0, i);
  return out;
}

std::string chat_prompt(const std::string& prompt, bool enable_thinking) {
  std::string text = "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n";
  if (!enable_thinking) {
    text += "<think>\n\n</think>\n\n";
  }
  return text;
}

}  // namespace qwen3
