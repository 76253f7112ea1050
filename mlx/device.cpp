#include "mlx/device.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/eval.h"
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

void check_available(const Device& d, const char* who) {
  if (d == Device::gpu && !gpu::is_available()) {
    throw std::runtime_error(
        std::string("[") + who +
        "] the GPU is not available: no Vulkan device was found (or this build has no GPU "
        "backend). Use the CPU device, or install a Vulkan driver (e.g. mesa-vulkan-drivers).");
  }
}

} // namespace

const Device& default_device() {
  return mutable_default_device();
}

void set_default_device(const Device& d) {
  check_available(d, "set_default_device");
  mutable_default_device() = d;
}

bool is_available(const Device& d) {
  return d == Device::cpu || gpu::is_available();
}

bool operator==(const Device& lhs, const Device& rhs) {
  return lhs.type == rhs.type && lhs.index == rhs.index;
}

bool operator!=(const Device& lhs, const Device& rhs) {
  return !(lhs == rhs);
}

Stream default_stream(Device d) {
  check_available(d, "default_stream");
  auto& r = registry();
  std::lock_guard lk(r.mtx);
  auto it = r.default_index.find(d.type);
  if (it != r.default_index.end()) {
    return r.streams[it->second];
  }
  Stream s = r.make(d);
  if (d == Device::gpu) {
    gpu::new_stream(s);
  }
  r.default_index[d.type] = s.index;
  return s;
}

void set_default_stream(Stream s) {
  auto& r = registry();
  std::lock_guard lk(r.mtx);
  r.default_index[s.device.type] = s.index;
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
  if (s.device == Device::gpu) {
    gpu::synchronize(s);
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
  return std::get<Stream>(s);
}

} // namespace mlx::core
