#include "mlx/backend/vulkan/serials.h"

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

namespace mlx::core::vulkan {

namespace {
struct Outstanding {
  VkDevice device = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;  // null while the batch is still recording
};
struct Serials {
  std::mutex mtx;
  uint64_t next = 1;
  std::map<uint64_t, Outstanding> outstanding;
};
Serials& serials() {
  static Serials* s = new Serials();  // used by late frees at exit: never destroyed
  return *s;
}
}  // namespace

uint64_t begin_serial() {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  uint64_t v = s.next++;
  s.outstanding.emplace(v, Outstanding{});
  return v;
}

void submitted_serial(uint64_t serial, VkDevice device, VkFence fence) {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  auto it = s.outstanding.find(serial);
  if (it != s.outstanding.end()) {
    it->second = {device, fence};
  }
}

void end_serial(uint64_t serial) {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  s.outstanding.erase(serial);
}

bool serial_submitted(uint64_t serial) {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  auto it = s.outstanding.find(serial);
  return it == s.outstanding.end() || it->second.fence != VK_NULL_HANDLE;
}

bool serial_completed(uint64_t serial) {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  auto it = s.outstanding.find(serial);
  if (it == s.outstanding.end()) {
    return serial < s.next;  // ended (completed or never submitted)
  }
  if (!it->second.fence || vkGetFenceStatus(it->second.device, it->second.fence) != VK_SUCCESS) {
    return false;
  }
  s.outstanding.erase(it);
  return true;
}

bool wait_serial_unlocked(uint64_t serial, uint64_t spin_us) {
  if (!serial_submitted(serial)) {
    return false;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  while (!serial_completed(serial)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

uint64_t completed_watermark() {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  // A fence is only queried while registered, and a stream unregisters (end_serial)
  // before it resets the fence for another batch, so the two never race.
  while (!s.outstanding.empty()) {
    auto it = s.outstanding.begin();
    if (!it->second.fence || vkGetFenceStatus(it->second.device, it->second.fence) != VK_SUCCESS) {
      break;
    }
    s.outstanding.erase(it);
  }
  return s.outstanding.empty() ? s.next - 1 : s.outstanding.begin()->first - 1;
}

}  // namespace mlx::core::vulkan
