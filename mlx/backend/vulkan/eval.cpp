// The backend contract (mlx/backend/gpu/*.h) on Vulkan: availability, device info, and the
// per-stream eval loop hooks.
#include "mlx/backend/gpu/eval.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/host_profile.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/serials.h"
#include "mlx/eval_worker.h"
#include "mlx/primitives.h"

namespace mlx::core::gpu {

bool is_available() {
  return vulkan::device_or_null() != nullptr;
}

int device_count() {
  return static_cast<int>(vulkan::all_device_info().size());
}

const std::unordered_map<std::string, DeviceInfoValue>& device_info(int device_index) {
  const auto& all = vulkan::all_device_info();
  if (device_index < 0 || device_index >= static_cast<int>(all.size())) {
    throw std::invalid_argument("[device_info] device index " + std::to_string(device_index) +
                                " is out of range: " + std::to_string(all.size()) +
                                " Vulkan device(s) available.");
  }
  return all[device_index];
}

void new_stream(Stream stream) {
  vulkan::create_encoder(stream.index);
}

namespace {

void eval_op(array& arr) {
  auto stream = arr.primitive().stream();
  auto& enc = vulkan::encoder(stream.index);
  // An input written by another stream's still-open batch: submit that batch first, so
  // queue order (and each batch's leading barrier) puts its writes before our reads.
  for (auto& in : arr.inputs()) {
    if (in.has_data() && in.buffer().ptr()) {
      int w = vulkan::allocation(in.buffer())->writer_stream.load();
      if (w >= 0 && w != stream.index) {
        vulkan::commit_stream(w);
      }
    }
  }
  auto outputs = arr.outputs();
  auto op_lock = enc.lock_for_op();
  try {
    // Pipelines this op needs for the first time are created on worker threads while the
    // loop goes on (kernel_library.h): a cold graph's kernels build together.
    vulkan::DeferredPipelines deferred;
    arr.primitive().eval_gpu(arr.inputs(), outputs);
  } catch (...) {
    // A kernel may have been recorded before the failure (a copy before a kernel that
    // failed to compile): its inputs and outputs must outlive the batch that reads them.
    if (enc.has_open_work()) {
      for (auto& a : arr.inputs()) {
        if (a.has_data()) {
          enc.retain(a.data_shared_ptr());
        }
      }
      for (auto& o : outputs) {
        if (o.has_data()) {
          enc.retain(o.data_shared_ptr());
        }
      }
      // Finish what was recorded now. A failing op usually ends a program, and lavapipe
      // compiles a pipeline's code on its queue thread at first execution: work still
      // queued at exit then runs after LLVM's exit-time destructors (registered lazily, so
      // they run before our device teardown) and crashed or hung the process.
      try {
        enc.synchronize();
      } catch (...) {
        // The original error is the one to report.
      }
    }
    throw;
  }

  // Inputs stay alive until the batch that reads them completes (not a buffer donated to
  // an output); the op counts toward the batch limits.
  enc.end_op(arr.inputs(), outputs);
}

}  // namespace

void eval(array& arr) {
  vulkan::HostTimer timer(arr.primitive().name());
  eval_op(arr);
}

void finalize(Stream s) {
  vulkan::encoder(s.index).commit();
}

namespace {

// After a wait: other streams' finished batches may still hold arrays (nobody has polled
// them), and under MLX_VK_VALIDATION=1 a validation error is a failure of the work that
// caused it.
void after_wait(const char* where) {
  vulkan::poll_all_streams();
  auto& dev = vulkan::device(where);
  static std::atomic<size_t> reported{0};
  size_t errors = dev.validation_errors();
  size_t seen = reported.exchange(errors);
  if (errors > seen) {
    throw std::runtime_error("[vulkan] the validation layer reported " +
                             std::to_string(errors - seen) +
                             " error(s) (printed above) since the last wait.");
  }
}

}  // namespace

void synchronize(Stream s) {
  vulkan::encoder(s.index).synchronize();
  after_wait("synchronize");
}

bool is_ready(const array& a) {
  if (!a.has_data() || !a.buffer().ptr()) {
    return true;
  }
  uint64_t serial = vulkan::allocation(a.buffer())->write_serial.load();
  return serial == 0 || vulkan::serial_completed(serial);
}

void prefetch_for_host(const array& a) {
  // MLX_VK_PREFETCH=0 (read once) turns it off, to measure what it saves.
  static const bool enabled = [] {
    const char* v = std::getenv("MLX_VK_PREFETCH");
    return v == nullptr || std::string(v) != "0";
  }();
  if (!enabled || !a.has_data() || !a.buffer().ptr() ||
      a.nbytes() > vulkan::VulkanAllocator::kPrefetchBytes) {
    return;
  }
  auto* alloc = vulkan::allocation(a.buffer());
  int w = alloc->writer_stream.load();
  if (w >= 0) {
    vulkan::encoder(w).download_to_host(alloc);
  }
}

void wait_ready(const array& a) {
  if (is_ready(a)) {
    return;
  }
  // The batches of the writing stream up to the one that wrote the data, not the work
  // recorded after it (a decode loop reads token t while step t + 1 runs); everything if
  // that was not enough.
  auto* alloc = vulkan::allocation(a.buffer());
  int w = alloc->writer_stream.load();
  uint64_t serial = alloc->write_serial.load();
  // A submitted batch is waited for without the stream's lock, which the eval thread holds
  // while it records an op (a decode loop reads token t while step t + 1 is recorded).
  if (w >= 0 && !vulkan::wait_serial_unlocked(vulkan::device("wait"), serial)) {
    vulkan::encoder(w).wait_for(serial);
  }
  if (!is_ready(a)) {
    // Every stream's open batch is submitted: none may be half-recorded by the eval thread.
    detail::drain_eval_jobs();
    vulkan::synchronize_all_streams();
  }
  after_wait("wait");
}

}  // namespace mlx::core::gpu
