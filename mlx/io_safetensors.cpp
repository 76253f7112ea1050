// The safetensors format: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {...}}),
// then the data buffer that the offsets index. docs/io.md describes what is checked.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/io.h"
#include "mlx/ops.h"
#include "mlx/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Tensor bytes are copied as they are: the format and this library are little-endian.
static_assert(std::endian::native == std::endian::little);

using json = nlohmann::json;

// The largest header the Rust reference implementation (and MLX) accepts.
constexpr uint64_t kMaxHeaderBytes = 100000000;

struct DtypeName {
  const char* name;
  Dtype dtype;
};

// What save writes for each dtype: MLX's names, and the spec's F64 (which MLX refuses).
constexpr DtypeName kDtypeNames[] = {
    {"BOOL", bool_},    {"U8", uint8},    {"U16", uint16},  {"U32", uint32},    {"U64", uint64},
    {"I8", int8},       {"I16", int16},   {"I32", int32},   {"I64", int64},     {"F16", float16},
    {"BF16", bfloat16}, {"F32", float32}, {"F64", float64}, {"C64", complex64},
};

// Read only: MLX loads the 8-bit float formats as their raw bytes.
constexpr DtypeName kRawByteNames[] = {{"F8_E4M3", uint8}, {"F8_E8M0", uint8}};

const char* safetensors_name(Dtype t) {
  for (const auto& d : kDtypeNames) {
    if (d.dtype == t) {
      return d.name;
    }
  }
  throw std::invalid_argument(std::string("[save_safetensors] dtype ") + dtype_to_string(t) +
                              " has no safetensors name.");
}

const DtypeName* find_dtype(const std::string& name) {
  for (const auto& d : kDtypeNames) {
    if (name == d.name) {
      return &d;
    }
  }
  for (const auto& d : kRawByteNames) {
    if (name == d.name) {
      return &d;
    }
  }
  return nullptr;
}

std::string in_quotes(const std::string& s) {
  return std::string("'") + s + "'";
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::invalid_argument(std::string("[load_safetensors] ") + in_quotes(file) + ": " + what);
}

[[noreturn]] void fail_tensor(const std::string& file, const std::string& name,
                              const std::string& what) {
  fail(file, std::string("tensor ") + in_quotes(name) + " " + what);
}

[[noreturn]] void fail_io(const std::string& file, const std::string& what, int err) {
  throw std::runtime_error(std::string("[load_safetensors] ") + in_quotes(file) + ": " + what +
                           " (" + std::strerror(err) + ").");
}

// A read-only private mapping of a whole file; unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      fail_io(path, "cannot open the file", errno);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      fail_io(path, "cannot stat the file", err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw std::runtime_error(std::string("[load_safetensors] ") + in_quotes(path) +
                               ": not a regular file.");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        fail_io(path, "cannot map the file", err);
      }
      map_ = p;
      // Tensors are copied front to back: ask for read-ahead of the whole file.
      ::madvise(map_, size_, MADV_SEQUENTIAL);
      ::madvise(map_, size_, MADV_WILLNEED);
    }
    // The mapping keeps the file's pages reachable; the descriptor is no longer needed.
    ::close(fd);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (map_) {
      ::munmap(map_, size_);
    }
  }

  const uint8_t* data() const {
    return static_cast<const uint8_t*>(map_);
  }
  size_t size() const {
    return size_;
  }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

// A tensor's header entry, validated against the data buffer.
struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

bool as_u64(const json& j, uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    auto v = j.get<int64_t>();
    if (v >= 0) {
      out = static_cast<uint64_t>(v);
      return true;
    }
  }
  return false;
}

std::string range_string(uint64_t begin, uint64_t end) {
  return std::string("[") + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

Entry parse_entry(const std::string& file, const std::string& name, const json& v,
                  uint64_t data_bytes) {
  if (!v.is_object()) {
    fail_tensor(file, name, "is not a JSON object.");
  }
  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) {
    fail_tensor(file, name, "has no string 'dtype'.");
  }
  const auto& dtype_name = dt->get_ref<const std::string&>();
  const DtypeName* known = find_dtype(dtype_name);
  if (!known) {
    fail_tensor(file, name,
                std::string("has the unsupported dtype ") + in_quotes(dtype_name) + ".");
  }
  Dtype dtype = known->dtype;

  auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) {
    fail_tensor(file, name, "has no 'shape' list.");
  }
  Shape shape;
  shape.reserve(sh->size());
  uint64_t count = 1;
  bool overflow = false;
  for (const auto& d : *sh) {
    uint64_t n;
    if (!as_u64(d, n) || n > static_cast<uint64_t>(std::numeric_limits<ShapeElem>::max())) {
      fail_tensor(
          file, name,
          std::string("has the shape entry ") + d.dump() + ", not an integer in [0, 2^31).");
    }
    shape.push_back(static_cast<ShapeElem>(n));
    overflow = overflow || __builtin_mul_overflow(count, n, &count);
  }
  bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  uint64_t nbytes = 0;
  if (!empty && (overflow || __builtin_mul_overflow(count, uint64_t(dtype.size), &nbytes))) {
    fail_tensor(file, name,
                std::string("has the shape ") + shape_to_string(shape) +
                    ", more bytes than fit in 64 bits.");
  }

  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2) {
    fail_tensor(file, name, "has no 'data_offsets' pair [begin, end].");
  }
  uint64_t begin, end;
  if (!as_u64((*off)[0], begin) || !as_u64((*off)[1], end)) {
    fail_tensor(
        file, name,
        std::string("has data_offsets ") + off->dump() + " that are not non-negative integers.");
  }
  if (end < begin) {
    fail_tensor(file, name,
                std::string("has data_offsets ") + range_string(begin, end) +
                    " that end before they begin.");
  }
  if (end > data_bytes) {
    fail_tensor(file, name,
                std::string("has data_offsets ") + range_string(begin, end) +
                    " past the end of the data (" + std::to_string(data_bytes) +
                    " bytes); is the file truncated?");
  }
  if (end - begin != nbytes) {
    fail_tensor(file, name,
                std::string("has data_offsets ") + range_string(begin, end) + " spanning " +
                    std::to_string(end - begin) + " bytes, but shape " + shape_to_string(shape) +
                    " of " + dtype_name + " needs " + std::to_string(nbytes) + ".");
  }
  return Entry{name, dtype, std::move(shape), begin, end};
}

// Two tensors may not share bytes (gaps and trailing bytes are allowed, as in MLX).
void check_overlap(const std::string& file, const std::vector<Entry>& entries) {
  std::vector<const Entry*> spans;
  for (const auto& e : entries) {
    if (e.end > e.begin) {
      spans.push_back(&e);
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  const Entry* furthest = nullptr;
  for (const Entry* e : spans) {
    if (furthest && e->begin < furthest->end) {
      fail(file, std::string("tensors ") + in_quotes(furthest->name) + " " +
                     range_string(furthest->begin, furthest->end) + " and " + in_quotes(e->name) +
                     " " + range_string(e->begin, e->end) + " overlap.");
    }
    if (!furthest || e->end > furthest->end) {
      furthest = e;
    }
  }
}

array make_array(const Entry& e, const uint8_t* src) {
  size_t nbytes = static_cast<size_t>(e.end - e.begin);
  array a(allocator::malloc(nbytes), e.shape, e.dtype);
  if (nbytes == 0) {
    return a;
  }
  auto* dst = a.data<uint8_t>();
  if (e.dtype == bool_) {
    // Any nonzero byte is true (as numpy reads it); a bool holding another value is UB.
    for (size_t i = 0; i < nbytes; ++i) {
      dst[i] = src[i] != 0;
    }
  } else {
    std::memcpy(dst, src, nbytes);
  }
  return a;
}

}  // namespace

SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s) {
  // The arrays are made here, evaluated, in the allocator's memory, which both devices
  // read; the stream is only checked, so a missing device fails as it does for any op.
  to_stream(s);

  MappedFile map(file);
  const uint64_t size = map.size();
  if (size < 8) {
    fail(file, std::string("the file has ") + std::to_string(size) +
                   " bytes, fewer than the 8 of the header length; is it truncated?");
  }
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) {
    header_bytes = (header_bytes << 8) | map.data()[i];
  }
  if (header_bytes == 0 || header_bytes >= kMaxHeaderBytes) {
    fail(file, std::string("the header length ") + std::to_string(header_bytes) +
                   " is not in [1, " + std::to_string(kMaxHeaderBytes) + ").");
  }
  if (header_bytes > size - 8) {
    fail(file, std::string("the header length ") + std::to_string(header_bytes) +
                   " runs past the end of the file (" + std::to_string(size) +
                   " bytes); is it truncated?");
  }
  const uint8_t* header_begin = map.data() + 8;
  const uint8_t* data = header_begin + header_bytes;
  const uint64_t data_bytes = size - 8 - header_bytes;

  // JSON has no raw NUL; nlohmann would end the input at one and ignore what follows.
  if (std::memchr(header_begin, 0, header_bytes)) {
    fail(file, "the header is not valid JSON: it contains a NUL byte.");
  }
  json header;
  try {
    header = json::parse(header_begin, data);
  } catch (const json::exception& e) {
    fail(file, std::string("the header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) {
    fail(file, "the header is not a JSON object.");
  }

  std::vector<Entry> entries;
  std::unordered_map<std::string, std::string> metadata;
  try {
    for (const auto& item : header.items()) {
      const std::string& key = item.key();
      const json& value = item.value();
      if (key == "__metadata__") {
        // MLX writes null when there is no metadata.
        if (value.is_null()) {
          continue;
        }
        if (!value.is_object()) {
          fail(file, "'__metadata__' is not a JSON object.");
        }
        for (const auto& m : value.items()) {
          if (!m.value().is_string()) {
            fail(file, std::string("metadata ") + in_quotes(m.key()) + " is " + m.value().dump() +
                           ", not a string.");
          }
          metadata.emplace(m.key(), m.value().get<std::string>());
        }
        continue;
      }
      entries.push_back(parse_entry(file, key, value, data_bytes));
    }
  } catch (const json::exception& e) {
    // Every access above checks its type first; this is a guard, not a path.
    fail(file, std::string("unexpected header contents: ") + e.what());
  }
  check_overlap(file, entries);

  std::unordered_map<std::string, array> arrays;
  arrays.reserve(entries.size());
  for (const auto& e : entries) {
    arrays.emplace(e.name, make_array(e, data + e.begin));
  }
  return {std::move(arrays), std::move(metadata)};
}

void save_safetensors(std::string file, std::unordered_map<std::string, array> a,
                      std::unordered_map<std::string, std::string> metadata) {
  if (!file.ends_with(".safetensors")) {
    file += ".safetensors";
  }
  if (a.count("__metadata__")) {
    throw std::invalid_argument(
        "[save_safetensors] '__metadata__' names the metadata and cannot name a tensor.");
  }

  // Sorted by name, so the same arrays always give the same file.
  std::vector<std::pair<std::string, array>> tensors;
  tensors.reserve(a.size());
  for (auto& [name, arr] : a) {
    safetensors_name(arr.dtype());
    tensors.emplace_back(name, contiguous(arr));
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  {
    std::vector<array> to_eval;
    to_eval.reserve(tensors.size());
    for (auto& t : tensors) {
      to_eval.push_back(t.second);
    }
    eval(std::move(to_eval));
  }

  json header = json::object();
  json meta = json::object();
  for (const auto& [k, v] : metadata) {
    meta[k] = v;
  }
  header["__metadata__"] = std::move(meta);
  uint64_t offset = 0;
  for (const auto& [name, arr] : tensors) {
    json entry = json::object();
    entry["dtype"] = safetensors_name(arr.dtype());
    entry["shape"] = arr.shape();
    entry["data_offsets"] = json::array({offset, offset + arr.nbytes()});
    header[name] = std::move(entry);
    offset += arr.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw std::invalid_argument(
        std::string("[save_safetensors] tensor names and metadata must be valid UTF-8: ") +
        e.what());
  }
  // The spec (and the Rust writer) pad the header with spaces so the data starts 8-aligned.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file.c_str(), "wb"), &std::fclose);
  auto write_failed = [&file](const char* what) {
    return std::runtime_error(std::string("[save_safetensors] ") + in_quotes(file) + ": " + what +
                              " (" + std::strerror(errno) + ").");
  };
  if (!f) {
    throw write_failed("cannot open the file for writing");
  }
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) {
    len[i] = static_cast<uint8_t>(n >> (8 * i));
  }
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 &&
            std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  for (auto& t : tensors) {
    if (!ok) {
      break;
    }
    size_t nbytes = t.second.nbytes();
    if (nbytes > 0) {
      ok = std::fwrite(t.second.data<char>(), 1, nbytes, f.get()) == nbytes;
    }
  }
  if (!ok) {
    throw write_failed("writing the file failed");
  }
  if (std::fclose(f.release()) != 0) {
    throw write_failed("closing the file failed");
  }
}

}  // namespace mlx::core
