#include "mlx/device.h"

#include <atomic>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/eval.h"
#include "mlx/eval_worker.h"
#include "mlx/stream.h"

namespace mlx::core {

namespace {

Device& mutable_default_device() {
  static Device d = gpu::is_available() ? Device{Device::gpu} : Device{Device::cpu};
  return d;
}

struct StreamRegistry {
  std::mutex mtx;
  std::vector<Stream> streams;
  std::map<Device::DeviceType, int> default_index;
  // default_index read without the lock (-1: not made yet), by device type (cpu, gpu).
  // Every op of a graph asks for its default stream: the lock and the map lookup were 6% of
  // building a Qwen3 decode step's graph (callgrind, docs/performance.md).
  std::atomic<int> cached_default[2] = {-1, -1};

  Stream make(Device d) {
    Stream s(static_cast<int>(streams.size()), d);
    streams.push_back(s);
    return s;
  }
};

StreamRegistry& registry() {
  static StreamRegistry r;
  return r;
}

std::string describe(const Device& d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// There is one device of each type, index 0: the CPU, and the Vulkan device in use.
bool index_exists(const Device& d) {
  return d.index == 0;
}

// An index that names no device is the caller's mistake (invalid_argument); a GPU that
// is missing is the machine's (runtime_error), and the backend says why.
void check_available(const Device& d, const char* who) {
  if (!index_exists(d)) {
    throw std::invalid_argument(
        std::string("[") + who + "] " + describe(d) + " names no device: the devices are " +
        (gpu::is_available() ? "Device(cpu, 0) and Device(gpu, 0)" : "Device(cpu, 0) only") + ".");
  }
  if (d == Device::gpu && !gpu::is_available()) {
    throw std::runtime_error(std::string("[") + who + "] the GPU is not available: " +
                             gpu::unavailable_reason() + ". Use the CPU device (Device::cpu).");
  }
}

}  // namespace

const Device& default_device() {
  return mutable_default_device();
}

void set_default_device(const Device& d) {
  check_available(d, "set_default_device");
  mutable_default_device() = d;
}

bool is_available(const Device& d) {
  return index_exists(d) && (d == Device::cpu || gpu::is_available());
}

bool operator==(const Device& lhs, const Device& rhs) {
  return lhs.type == rhs.type && lhs.index == rhs.index;
}

bool operator!=(const Device& lhs, const Device& rhs) {
  return !(lhs == rhs);
}

Stream default_stream(Device d) {
  auto& r = registry();
  auto& cached = r.cached_default[d.type == Device::cpu ? 0 : 1];
  // A cached index means this device was available when its default stream was made.
  if (int i = cached.load(std::memory_order_acquire); i >= 0 && index_exists(d)) {
    return Stream(i, d);
  }
  check_available(d, "default_stream");
  std::lock_guard lk(r.mtx);
  auto it = r.default_index.find(d.type);
  if (it != r.default_index.end()) {
    cached.store(it->second, std::memory_order_release);
    return r.streams[it->second];
  }
  Stream s = r.make(d);
  if (d == Device::gpu) {
    gpu::new_stream(s);
  }
  r.default_index[d.type] = s.index;
  cached.store(s.index, std::memory_order_release);
  return s;
}

void set_default_stream(Stream s) {
  auto& r = registry();
  std::lock_guard lk(r.mtx);
  r.default_index[s.device.type] = s.index;
  r.cached_default[s.device.type == Device::cpu ? 0 : 1].store(s.index, std::memory_order_release);
}

Stream new_stream(Device d) {
  check_available(d, "new_stream");
  auto& r = registry();
  Stream s = [&] {
    std::lock_guard lk(r.mtx);
    return r.make(d);
  }();
  if (d == Device::gpu) {
    gpu::new_stream(s);
  }
  return s;
}

void synchronize(Stream s) {
  // Graphs still queued for the eval thread are part of every stream's work.
  detail::drain_eval_jobs();
  if (s.device == Device::gpu) {
    gpu::synchronize(s);
  }
}

void clear_streams() {
  std::vector<Stream> streams;
  {
    auto& r = registry();
    std::lock_guard lk(r.mtx);
    streams = r.streams;
  }
  for (auto& s : streams) {
    synchronize(s);
  }
}

void synchronize() {
  if (gpu::is_available()) {
    synchronize(default_stream(Device::gpu));
  }
}

std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << "Device(" << (d.type == Device::cpu ? "cpu" : "gpu") << ", " << d.index << ")";
}

std::ostream& operator<<(std::ostream& os, const Stream& s) {
  return os << "Stream(" << s.device << ", " << s.index << ")";
}

Stream to_stream(StreamOrDevice s) {
  return to_stream(s, default_device());
}

Stream to_stream(StreamOrDevice s, Device default_) {
  if (std::holds_alternative<std::monostate>(s)) {
    return default_stream(default_);
  }
  if (std::holds_alternative<Device>(s)) {
    return default_stream(std::get<Device>(s));
  }
  // Streams come from default_stream/new_stream, which check their device; one built by
  // hand with a bad index is caught here.
  const Stream& stream = std::get<Stream>(s);
  if (!index_exists(stream.device)) {
    check_available(stream.device, "to_stream");
  }
  return stream;
}

}  // namespace mlx::core
