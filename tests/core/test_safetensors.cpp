// load_safetensors / save_safetensors: round trips of every dtype and shape class, files
// written byte by byte from the format's description (so the reader and the writer are each
// checked against the spec, not only against each other), every malformed-file error with
// the file and tensor it names, and a seeded fuzzer over mutated files.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mlx/io.h"
#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
namespace fs = std::filesystem;

namespace {

// A scratch directory per test case, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ =
        fs::temp_directory_path() / (std::string("mlx_safetensors_test_") +
                                     std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const {
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

using Bytes = std::vector<uint8_t>;

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A safetensors file: the little-endian header length (or `length` when given), the
// header text, then the data bytes.
Bytes make_file(const std::string& header, const Bytes& data, int64_t length = -1) {
  uint64_t n = length < 0 ? header.size() : static_cast<uint64_t>(length);
  Bytes out;
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The row-major bytes of an array, evaluated.
Bytes bytes_of(mx::array a) {
  a = mx::contiguous(a);
  a.eval();
  const auto* p = a.data<uint8_t>();
  return Bytes(p, p + a.nbytes());
}

std::string shape_label(const mx::Shape& s) {
  return mx::shape_to_string(s);
}

const mx::Shape kShapes[] = {{}, {0}, {3, 0, 2}, {1}, {23}, {4, 6, 3, 1, 2}, {257, 131}};

}  // namespace

TEST_CASE("save_safetensors then load_safetensors returns every dtype and shape bit for bit") {
  TempDir dir;
  mlx_test::Rng rng(11);
  for (auto dtype : mx::all_dtypes) {
    for (const auto& shape : kShapes) {
      std::string label = mx::dtype_to_string(dtype) + " " + shape_label(shape);
      auto x = mlx_test::random_array(shape, dtype, rng, -100, 100);
      auto path = dir.file("t.safetensors");
      mx::save_safetensors(path, {{"x", x}, {"y", mx::array(7, mx::int32)}});
      auto [arrays, metadata] = mx::load_safetensors(path);
      REQUIRE_MESSAGE(arrays.size() == 2, label);
      CHECK(metadata.empty());
      const auto& got = arrays.at("x");
      CHECK_MESSAGE(got.dtype() == dtype, label);
      CHECK_MESSAGE(got.shape() == shape, label);
      CHECK_MESSAGE(got.status() == mx::array::Status::available, label);
      CHECK_MESSAGE(bytes_of(got) == bytes_of(x), label);
      CHECK(arrays.at("y").item<int>() == 7);
    }
  }
}

TEST_CASE("safetensors files of many tensors round-trip with the data 8-byte aligned") {
  TempDir dir;
  mlx_test::Rng rng(12);
  std::unordered_map<std::string, mx::array> in;
  for (int i = 0; i < 40; ++i) {
    auto dtype = mx::all_dtypes[i % mx::Dtype::num_types];
    in.emplace("layers." + std::to_string(i) + ".weight",
               mlx_test::random_array({i + 1, 3 * i + 5}, dtype, rng));
  }
  in.emplace("big", mlx_test::random_array({512, 1031}, mx::float32, rng));
  auto path = dir.file("many.safetensors");
  mx::save_safetensors(path, in);
  auto file = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  CHECK((8 + n) % 8 == 0);
  CHECK(file[8] == '{');
  auto [out, meta] = mx::load_safetensors(path);
  REQUIRE(out.size() == in.size());
  for (auto& [name, x] : in) {
    CHECK_MESSAGE(bytes_of(out.at(name)) == bytes_of(x), name);
  }
}

TEST_CASE("safetensors metadata strings round-trip, and an empty map writes a loadable file") {
  TempDir dir;
  auto path = dir.file("meta.safetensors");
  std::unordered_map<std::string, std::string> meta{{"format", "mlx"},
                                                    {"testing", "test"},
                                                    {"empty", ""},
                                                    {"unicode", "h\xc3\xa9llo \xe2\x9c\x93"}};
  mx::save_safetensors(path, {{"test", mx::ones({2, 2})}}, meta);
  auto [arrays, got] = mx::load_safetensors(path);
  CHECK(got == meta);
  CHECK(bytes_of(arrays.at("test")) == bytes_of(mx::ones({2, 2})));

  mx::save_safetensors(path, {});
  auto [none, no_meta] = mx::load_safetensors(path);
  CHECK(none.empty());
  CHECK(no_meta.empty());
}

TEST_CASE("save_safetensors appends .safetensors as MLX does and evaluates views") {
  TempDir dir;
  auto base = dir.file("model");
  auto x = mx::transpose(mx::reshape(mx::arange(12, mx::float32), {3, 4}));
  auto b = mx::broadcast_to(mx::array({1, 2, 3}, mx::int16), {2, 3});
  mx::save_safetensors(base, {{"x", x}, {"b", b}});
  CHECK_FALSE(fs::exists(base));
  REQUIRE(fs::exists(base + ".safetensors"));
  auto [arrays, meta] = mx::load_safetensors(base + ".safetensors");
  CHECK(arrays.at("x").shape() == mx::Shape{4, 3});
  CHECK(mlx_test::to_doubles(arrays.at("x")) == mlx_test::to_doubles(x));
  CHECK(mlx_test::to_doubles(arrays.at("b")) == std::vector<double>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("load_safetensors arrays work on every device and outlive the file") {
  TempDir dir;
  mlx_test::Rng rng(13);
  for (auto dev : mlx_test::test_devices()) {
    for (auto dtype : mx::all_dtypes) {
      std::string label =
          std::string(dev == mx::Device::gpu ? "gpu " : "cpu ") + mx::dtype_to_string(dtype);
      auto x = mlx_test::random_array({5, 33}, dtype, rng, -50, 50);
      auto path = dir.file("dev.safetensors");
      mx::save_safetensors(path, {{"x", x}});
      auto loaded = mx::load_safetensors(path, dev).first.at("x");
      fs::remove(path);
      // An op on the device reads the loaded buffer, and its result matches the source.
      auto y = mx::copy(loaded, dev);
      auto same = mx::array_equal(loaded, x, dev);
      CHECK_MESSAGE(bytes_of(y) == bytes_of(x), label);
      CHECK_MESSAGE(same.item<bool>(), label);
    }
    // An array computed on the device saves like any other.
    auto z = mx::multiply(mx::arange(6, mx::float32, dev), mx::array(2.0f), dev);
    auto path = dir.file("computed.safetensors");
    mx::save_safetensors(path, {{"z", z}});
    auto back = mx::load_safetensors(path, dev).first.at("z");
    CHECK(mlx_test::to_doubles(back) == std::vector<double>{0, 2, 4, 6, 8, 10});
  }
}

TEST_CASE("load_safetensors reads a file written byte by byte from the spec") {
  TempDir dir;
  // No padding and "__metadata__": null, as MLX writes it when there is no metadata.
  std::string header =
      R"({"__metadata__":null,"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I16","shape":[1,2],"data_offsets":[8,12]},)"
      R"("c":{"dtype":"BF16","shape":[],"data_offsets":[12,14]},)"
      R"("d":{"dtype":"BOOL","shape":[3],"data_offsets":[14,17]},)"
      R"("e":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[17,19]},)"
      R"("f":{"dtype":"U64","shape":[0,4],"data_offsets":[19,19]},)"
      R"("g":{"dtype":"C64","shape":[1],"data_offsets":[24,32]}})";
  Bytes data = {
      0x00, 0x00, 0xC0, 0x3F,        // 1.5f
      0x00, 0x00, 0x00, 0xC0,        // -2.0f
      0x02, 0x01, 0xFF, 0xFF,        // int16 258, -1
      0x80, 0x3F,                    // bf16 1.0
      0x00, 0x01, 0x07,              // false, true, true (any nonzero byte)
      0x38, 0xC8,                    // raw fp8 bytes, loaded as uint8
      0xAA, 0xAA, 0xAA, 0xAA, 0xAA,  // a gap no tensor uses
      0x00, 0x00, 0x80, 0x3F,        // real 1.0f
      0x00, 0x00, 0x00, 0xC1,        // imag -8.0f
  };
  auto path = dir.file("hand.safetensors");
  write_file(path, make_file(header, data));
  for (auto dev : mlx_test::test_devices()) {
    auto [arrays, meta] = mx::load_safetensors(path, dev);
    CHECK(meta.empty());
    REQUIRE(arrays.size() == 7);
    CHECK(mlx_test::to_vector<float>(arrays.at("a")) == std::vector<float>{1.5f, -2.0f});
    CHECK(arrays.at("b").shape() == mx::Shape{1, 2});
    CHECK(mlx_test::to_vector<int16_t>(arrays.at("b")) == std::vector<int16_t>{258, -1});
    CHECK(arrays.at("c").dtype() == mx::bfloat16);
    CHECK(arrays.at("c").ndim() == 0);
    CHECK(arrays.at("c").item<float>() == 1.0f);
    CHECK(mlx_test::to_doubles(arrays.at("d")) == std::vector<double>{0, 1, 1});
    CHECK(mx::sum(mx::astype(arrays.at("d"), mx::int32), false, dev).item<int>() == 2);
    CHECK(arrays.at("e").dtype() == mx::uint8);
    CHECK(mlx_test::to_vector<uint8_t>(arrays.at("e")) == std::vector<uint8_t>{0x38, 0xC8});
    CHECK(arrays.at("f").dtype() == mx::uint64);
    CHECK(arrays.at("f").shape() == mx::Shape{0, 4});
    auto g = arrays.at("g").item<mx::complex64_t>();
    CHECK(g.real() == 1.0f);
    CHECK(g.imag() == -8.0f);
  }
}

TEST_CASE("save_safetensors writes the spec's bytes: sorted JSON header padded with spaces") {
  TempDir dir;
  auto path = dir.file("known.safetensors");
  mx::save_safetensors(path,
                       {{"x", mx::array({1, -2}, mx::int32)}, {"h", mx::array(1.0, mx::float16)}},
                       {{"format", "mlx"}});
  std::string header =
      R"({"__metadata__":{"format":"mlx"},"h":{"data_offsets":[0,2],"dtype":"F16","shape":[]},)"
      R"("x":{"data_offsets":[2,10],"dtype":"I32","shape":[2]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes data = {0x00, 0x3C, 0x01, 0x00, 0x00, 0x00, 0xFE, 0xFF, 0xFF, 0xFF};
  CHECK(read_file(path) == make_file(header, data));
}

TEST_CASE("save_safetensors rejects what it cannot write") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(mx::save_safetensors(dir.file("m"), {{"__metadata__", mx::array(1)}}),
                       doctest::Contains("[save_safetensors]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::save_safetensors(dir.file("no/such/dir/m"), {{"a", mx::array(1)}}),
                       doctest::Contains("[save_safetensors]"), std::runtime_error);
  CHECK_THROWS_WITH_AS(
      mx::save_safetensors(dir.file("m"), {{"a", mx::array(1)}}, {{"bad", "\xff\xfe"}}),
      doctest::Contains("UTF-8"), std::invalid_argument);
}

namespace {

// Loads `bytes` from a file and expects std::invalid_argument whose message starts with
// "[load_safetensors]", names the file, and contains each of `parts`.
void check_rejected(const TempDir& dir, const std::string& label, const Bytes& bytes,
                    const std::vector<std::string>& parts) {
  auto path = dir.file(label + ".safetensors");
  write_file(path, bytes);
  try {
    mx::load_safetensors(path);
    FAIL_CHECK(label << ": loaded without an error");
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    CHECK_MESSAGE(msg.rfind("[load_safetensors] ", 0) == 0, label << ": " << msg);
    CHECK_MESSAGE(msg.find(path) != std::string::npos, label << ": " << msg);
    for (const auto& p : parts) {
      CHECK_MESSAGE(msg.find(p) != std::string::npos, label << ": '" << p << "' not in: " << msg);
    }
  }
}

std::string tensor(const std::string& name, const std::string& dtype, const std::string& shape,
                   const std::string& offsets) {
  return std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

}  // namespace

TEST_CASE(
    "load_safetensors rejects malformed files with invalid_argument naming the file and tensor") {
  TempDir dir;
  Bytes eight(8, 0);
  auto one = [](const std::string& t) { return std::string("{") + t + "}"; };

  check_rejected(dir, "empty", {}, {"0 bytes", "truncated"});
  check_rejected(dir, "short", {1, 0, 0}, {"3 bytes"});
  check_rejected(dir, "zero_length", make_file("{}", {}, 0), {"header length 0"});
  check_rejected(dir, "huge_length", make_file("{}", {}, int64_t(1) << 40), {"header length"});
  check_rejected(dir, "length_past_end", make_file("{}", {}, 3),
                 {"header length 3", "past the end"});
  check_rejected(dir, "bad_json", make_file(R"({"a":{"dtype":)", {}), {"not valid JSON"});
  check_rejected(dir, "trailing_nul", make_file(std::string("{}\0", 3), {}), {"not valid JSON"});
  check_rejected(dir, "not_object", make_file("[1,2]", {}), {"not a JSON object"});
  check_rejected(dir, "entry_not_object", make_file(R"({"w":5})", {}),
                 {"'w'", "not a JSON object"});
  check_rejected(dir, "no_dtype", make_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", eight),
                 {"'w'", "dtype"});
  check_rejected(dir, "dtype_not_string",
                 make_file(R"({"w":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", eight),
                 {"'w'", "dtype"});
  check_rejected(dir, "no_shape", make_file(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", eight),
                 {"'w'", "shape"});
  check_rejected(dir, "no_offsets", make_file(R"({"w":{"dtype":"F32","shape":[2]}})", eight),
                 {"'w'", "data_offsets"});
  check_rejected(dir, "three_offsets", make_file(one(tensor("w", "F32", "[2]", "[0,4,8]")), eight),
                 {"'w'", "data_offsets"});
  check_rejected(dir, "negative_offset", make_file(one(tensor("w", "F32", "[2]", "[-8,0]")), eight),
                 {"'w'", "non-negative"});
  check_rejected(dir, "unknown_dtype", make_file(one(tensor("w", "F7", "[2]", "[0,8]")), eight),
                 {"'w'", "unsupported dtype 'F7'"});
  check_rejected(dir, "f8_e5m2", make_file(one(tensor("w", "F8_E5M2", "[8]", "[0,8]")), eight),
                 {"'w'", "'F8_E5M2'"});
  check_rejected(dir, "negative_dim", make_file(one(tensor("w", "U8", "[-8]", "[0,8]")), eight),
                 {"'w'", "-8"});
  check_rejected(dir, "fractional_dim", make_file(one(tensor("w", "U8", "[2.5]", "[0,8]")), eight),
                 {"'w'", "2.5"});
  check_rejected(dir, "dim_past_int32",
                 make_file(one(tensor("w", "U8", "[2147483648]", "[0,8]")), eight),
                 {"'w'", "2^31"});
  check_rejected(
      dir, "bytes_overflow",
      make_file(one(tensor("w", "F64", "[2147483647,2147483647,2147483647]", "[0,8]")), eight),
      {"'w'", "64 bits"});
  check_rejected(dir, "offsets_reversed", make_file(one(tensor("w", "F32", "[0]", "[8,0]")), eight),
                 {"'w'", "[8, 0)", "end before"});
  check_rejected(dir, "offsets_past_data",
                 make_file(one(tensor("w", "F32", "[4]", "[0,16]")), eight),
                 {"'w'", "[0, 16)", "past the end of the data (8 bytes)"});
  check_rejected(dir, "size_mismatch", make_file(one(tensor("w", "F32", "[3]", "[0,8]")), eight),
                 {"'w'", "8 bytes", "(3)", "needs 12"});
  check_rejected(dir, "overlap",
                 make_file(std::string("{") + tensor("a", "F32", "[2]", "[0,8]") + "," +
                               tensor("b", "F32", "[2]", "[4,12]") + "}",
                           Bytes(12, 0)),
                 {"'a'", "'b'", "overlap"});
  check_rejected(dir, "same_range",
                 make_file(std::string("{") + tensor("a", "I32", "[2]", "[0,8]") + "," +
                               tensor("b", "U64", "[1]", "[0,8]") + "}",
                           eight),
                 {"'a'", "'b'", "overlap"});
  check_rejected(dir, "nested_overlap",
                 make_file(std::string("{") + tensor("outer", "U8", "[16]", "[0,16]") + "," +
                               tensor("inner", "U8", "[2]", "[10,12]") + "," +
                               tensor("after", "U8", "[4]", "[16,20]") + "}",
                           Bytes(20, 0)),
                 {"'outer'", "'inner'", "overlap"});
  check_rejected(dir, "metadata_number", make_file(R"({"__metadata__":{"k":1}})", {}),
                 {"metadata 'k'", "not a string"});
  check_rejected(dir, "metadata_list", make_file(R"({"__metadata__":["k"]})", {}),
                 {"'__metadata__'"});
  // A valid file cut short: the tensor's bytes run past the end.
  TempDir tmp;
  auto valid = tmp.file("v.safetensors");
  mx::save_safetensors(valid, {{"weight", mx::ones({4, 4})}});
  auto bytes = read_file(valid);
  bytes.resize(bytes.size() - 5);
  check_rejected(dir, "truncated_data", bytes, {"'weight'", "past the end", "truncated"});
  // Deeply nested JSON is parsed and freed without recursion.
  std::string deep =
      std::string("{\"a\":") + std::string(100000, '[') + std::string(100000, ']') + "}";
  check_rejected(dir, "deep_nesting", make_file(deep, {}), {"'a'", "not a JSON object"});
}

TEST_CASE("load_safetensors throws runtime_error naming a file it cannot read") {
  TempDir dir;
  auto missing = dir.file("missing.safetensors");
  CHECK_THROWS_WITH_AS(
      mx::load_safetensors(missing),
      doctest::Contains((std::string("[load_safetensors] '") + missing + "'").c_str()),
      std::runtime_error);
  auto sub = dir.file("a_directory");
  fs::create_directories(sub);
  CHECK_THROWS_WITH_AS(mx::load_safetensors(sub), doctest::Contains("not a regular file"),
                       std::runtime_error);
}

namespace {

// One seeded mutation of a valid file: edits of the header text (with the length prefix
// kept consistent, so the parser and the checks after it see them), then byte-level damage
// (bit flips, a wrong length prefix, truncation).
Bytes mutate(const Bytes& base, mlx_test::Rng& rng) {
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng.next() % n); };
  uint64_t n = 0;
  std::memcpy(&n, base.data(), 8);
  std::string header(base.begin() + 8, base.begin() + 8 + n);
  Bytes data(base.begin() + 8 + n, base.end());

  static const char* kNumbers[] = {"0",
                                   "1",
                                   "-1",
                                   "7",
                                   "8",
                                   "64",
                                   "4294967295",
                                   "4294967296",
                                   "2147483647",
                                   "2147483648",
                                   "9223372036854775807",
                                   "9223372036854775808",
                                   "18446744073709551615",
                                   "18446744073709551616",
                                   "1e300",
                                   "2.5",
                                   "-0",
                                   "null",
                                   "\"7\"",
                                   "[]",
                                   "{}",
                                   "[1,2,3]"};
  static const char* kDtypes[] = {"F32",  "F16",     "BF16",    "F64", "C64", "I8",         "U64",
                                  "BOOL", "F8_E4M3", "F8_E5M2", "f32", "",    "F32\\u0000", "I128"};
  static const char kChars[] = "{}[]\":,-0123456789e. \\\x01\xff";

  int header_edits = static_cast<int>(pick(4));
  for (int k = 0; k < header_edits && !header.empty(); ++k) {
    switch (pick(6)) {
      case 0: {  // a number token becomes another (or another JSON value)
        std::vector<size_t> starts;
        for (size_t i = 0; i < header.size(); ++i) {
          if (std::isdigit(static_cast<unsigned char>(header[i])) &&
              (i == 0 || !std::isdigit(static_cast<unsigned char>(header[i - 1])))) {
            starts.push_back(i);
          }
        }
        if (starts.empty()) {
          break;
        }
        size_t s = starts[pick(starts.size())], e = s;
        while (e < header.size() && std::isdigit(static_cast<unsigned char>(header[e]))) {
          ++e;
        }
        header.replace(s, e - s, kNumbers[pick(std::size(kNumbers))]);
        break;
      }
      case 1: {  // a dtype string becomes another
        auto at = header.find("\"dtype\":\"");
        for (size_t skip = pick(4); skip > 0 && at != std::string::npos; --skip) {
          at = header.find("\"dtype\":\"", at + 1);
        }
        if (at == std::string::npos) {
          break;
        }
        size_t s = at + 9, e = header.find('"', s);
        header.replace(s, e - s, kDtypes[pick(std::size(kDtypes))]);
        break;
      }
      case 2:  // one character becomes JSON punctuation or a stray byte
        header[pick(header.size())] = kChars[pick(sizeof(kChars) - 1)];
        break;
      case 3: {  // a slice is deleted
        size_t s = pick(header.size());
        header.erase(s, 1 + pick(std::min<size_t>(16, header.size() - s)));
        break;
      }
      case 4: {  // a slice is duplicated
        size_t s = pick(header.size());
        size_t len = 1 + pick(std::min<size_t>(40, header.size() - s));
        header.insert(pick(header.size() + 1), header.substr(s, len));
        break;
      }
      default:  // a bit flips in the header
        header[pick(header.size())] ^= static_cast<char>(1u << pick(8));
        break;
    }
  }
  Bytes out = make_file(header, data);
  int byte_edits = static_cast<int>(pick(3));
  for (int k = 0; k < byte_edits && !out.empty(); ++k) {
    switch (pick(4)) {
      case 0:  // a bit flips anywhere
        out[pick(out.size())] ^= static_cast<uint8_t>(1u << pick(8));
        break;
      case 1: {  // the length prefix is off by a little, or anything
        uint64_t len = header.size();
        len = pick(2) ? len + pick(17) - 8 : rng.next() >> pick(64);
        for (int i = 0; i < 8 && i < static_cast<int>(out.size()); ++i) {
          out[i] = static_cast<uint8_t>(len >> (8 * i));
        }
        break;
      }
      case 2:  // truncated anywhere
        out.resize(pick(out.size()));
        break;
      default:  // cut a few bytes off the end
        out.resize(out.size() - std::min<size_t>(out.size(), 1 + pick(8)));
        break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE(
    "load_safetensors under a seeded fuzzer: every mutated file loads or throws, never crashes") {
  TempDir dir;
  mlx_test::Rng values(14);
  std::vector<Bytes> bases;
  auto save = [&](const std::unordered_map<std::string, mx::array>& arrays,
                  const std::unordered_map<std::string, std::string>& meta) {
    auto path = dir.file("base.safetensors");
    mx::save_safetensors(path, arrays, meta);
    bases.push_back(read_file(path));
  };
  save({{"w", mlx_test::random_array({3, 4}, mx::float32, values)},
        {"b", mlx_test::random_array({4}, mx::bfloat16, values)},
        {"i", mlx_test::random_array({2}, mx::int64, values)},
        {"m", mlx_test::random_array({5}, mx::bool_, values)},
        {"e", mlx_test::random_array({0, 3}, mx::float16, values)},
        {"s", mx::array(9, mx::uint8)}},
       {{"format", "mlx"}});
  save({{"c", mlx_test::random_array({2, 2}, mx::complex64, values)},
        {"d", mlx_test::random_array({3}, mx::float64, values)},
        {"u", mlx_test::random_array({1, 1, 2}, mx::uint64, values)}},
       {});
  bases.push_back(
      make_file(R"({"__metadata__":null,"q":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]},)"
                R"("r":{"dtype":"I16","shape":[2],"data_offsets":[4,8]}})",
                Bytes{1, 2, 3, 4, 5, 6, 7, 8}));

  constexpr uint64_t kSeed = 20240611;
  constexpr int kCases = 3000;
  mlx_test::Rng rng(kSeed);
  auto path = dir.file("fuzz.safetensors");
  int loaded = 0, rejected = 0;
  for (int c = 0; c < kCases; ++c) {
    Bytes bytes = mutate(bases[c % bases.size()], rng);
    // A new file each time: rewriting a truncated one makes ext4 flush it on close.
    fs::remove(path);
    write_file(path, bytes);
    try {
      auto [arrays, meta] = mx::load_safetensors(path);
      // Touch every byte of every tensor: each must lie inside the file it came from.
      size_t total = 0;
      unsigned sum = 0;
      for (auto& [name, a] : arrays) {
        total += a.nbytes();
        for (auto b : bytes_of(a)) {
          sum += b;
        }
      }
      CHECK_MESSAGE(total <= bytes.size(), "seed " << kSeed << " case " << c);
      (void)sum;
      ++loaded;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      CHECK_MESSAGE(msg.rfind("[load_safetensors] ", 0) == 0,
                    "seed " << kSeed << " case " << c << ": " << msg);
      ++rejected;
    }
  }
  MESSAGE("fuzzer: " << loaded << " loaded, " << rejected << " rejected of " << kCases);
  CHECK(loaded > kCases / 20);
  CHECK(rejected > kCases / 2);
}
