#include "mlx/backend/vulkan/serials.h"

#include <mutex>
#include <set>

namespace mlx::core::vulkan {

namespace {
struct Serials {
  std::mutex mtx;
  uint64_t next = 1;
  std::set<uint64_t> outstanding;
};
Serials& serials() {
  static Serials* s = new Serials(); // used by late frees at exit: never destroyed
  return *s;
}
} // namespace

uint64_t begin_serial() {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  uint64_t v = s.next++;
  s.outstanding.insert(v);
  return v;
}

void end_serial(uint64_t serial) {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  s.outstanding.erase(serial);
}

uint64_t completed_watermark() {
  auto& s = serials();
  std::lock_guard lk(s.mtx);
  return s.outstanding.empty() ? s.next - 1 : *s.outstanding.begin() - 1;
}

} // namespace mlx::core::vulkan
