// The backend linked when the library is built without a GPU backend.
#include "mlx/backend/gpu/available.h"

#include <stdexcept>

#include "mlx/backend/gpu/device_info.h"
#include "mlx/backend/gpu/eval.h"

namespace mlx::core::gpu {

bool is_available() {
  return false;
}

std::string unavailable_reason() {
  return "this build has no GPU backend (configure with -DMLX_BUILD_VULKAN=ON)";
}

int device_count() {
  return 0;
}

const std::unordered_map<std::string, DeviceInfoValue>& device_info(int) {
  throw std::runtime_error("[device_info] this build has no GPU backend.");
}

namespace {
[[noreturn]] void no_gpu(const char* fn) {
  throw std::runtime_error(std::string("[gpu::") + fn + "] this build has no GPU backend.");
}
}  // namespace

void new_stream(Stream) {
  no_gpu("new_stream");
}
void eval(array&) {
  no_gpu("eval");
}
void finalize(Stream) {
  no_gpu("finalize");
}
void synchronize(Stream) {
  no_gpu("synchronize");
}
bool is_ready(const array&) {
  return true;  // nothing runs on a GPU here
}
void wait_ready(const array&) {}
void prefetch_for_host(const array&) {}
void begin_tape(const std::vector<array>&) {}
void end_tape() {}

}  // namespace mlx::core::gpu
