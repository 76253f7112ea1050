#include "mlx/backend/vulkan/serials.h"

#include <atomic>
#include <map>
#include <mutex>

#include "mlx/backend/vulkan/fence_wait.h"

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
  // Every serial below it has ended: serial_completed answers those without the lock (a
  // decode step asks for each product's next weights, written long ago).
  std::atomic<uint64_t> floor{1};
  void refresh_floor_locked() {
    floor.store(outstanding.empty() ? next : outstanding.begin()->first, std::memory_order_release);
  }
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
  s.refresh_floor_locked();
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
  s.refresh_floor_locked();
}

bool serial_submitted(uint64_t serial) {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  auto it = s.outstanding.find(serial);
  return it == s.outstanding.end() || it->second.fence != VK_NULL_HANDLE;
}

bool serial_completed(uint64_t serial) {
  auto& s = serials();
  if (serial < s.floor.load(std::memory_order_acquire)) {
    return true;
  }
  std::lock_guard lk(s.mtx);
  auto it = s.outstanding.find(serial);
  if (it == s.outstanding.end()) {
    return serial < s.next;  // ended (completed or never submitted)
  }
  if (!it->second.fence || vkGetFenceStatus(it->second.device, it->second.fence) != VK_SUCCESS) {
    return false;
  }
  s.outstanding.erase(it);
  s.refresh_floor_locked();
  return true;
}

bool wait_serial_unlocked(const Device& d, uint64_t serial) {
  VkFence fence;
  {
    auto& s = serials();
    std::lock_guard lk(s.mtx);
    auto it = s.outstanding.find(serial);
    if (it == s.outstanding.end()) {
      return true;  // ended: completed (or never submitted, which nobody waits for)
    }
    if (!it->second.fence) {
      return false;
    }
    fence = it->second.fence;
  }
  // Once the batch completes, its stream may reuse the fence for a later batch (after
  // end_serial); waiting on that one then only waits longer, never wrongly.
  wait_fence(d, fence);
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
  s.refresh_floor_locked();
  return s.outstanding.empty() ? s.next - 1 : s.outstanding.begin()->first - 1;
}

}  // namespace mlx::core::vulkan
