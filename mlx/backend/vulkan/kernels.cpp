#include "mlx/backend/vulkan/kernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/primitives.h"

namespace mlx::core::vulkan {

namespace {

// Cooperative matrices off for the device, with one warning naming the kernel that failed.
void drop_coop(const codegen::KernelKey& key, const std::string& error) {
  device("cooperative matrices").disable_cooperative_matrices();
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::fprintf(stderr,
                 "[vulkan] the cooperative-matrix kernel %s did not build (%s); products and "
                 "attention use the FMA kernels from now on (MLX_VK_COOPMAT=off skips "
                 "cooperative matrices).\n",
                 key.canonical().c_str(), error.c_str());
  });
}

struct CoopKernels {
  std::mutex mtx;
  std::set<std::string> names;      // cooperative-matrix keys handed out
  std::atomic<bool> proven{false};  // one of their pipelines exists
};

CoopKernels& coop_kernels() {
  static CoopKernels* c = [] {
    auto* k = new CoopKernels();  // reached from worker threads at exit: never destroyed
    kernel_library().set_failure_hook([k](const Kernel& kernel, const std::string& error) {
      std::lock_guard lk(k->mtx);
      if (k->names.count(kernel.key.canonical())) {
        drop_coop(kernel.key, error);
      }
    });
    return k;
  }();
  return *c;
}

}  // namespace

const Kernel* get_kernel_or_drop_coop(const codegen::KernelKey& key, bool coop) {
  if (!coop) {
    return &kernel_library().get(key);
  }
  auto& ck = coop_kernels();
  {
    std::lock_guard lk(ck.mtx);
    ck.names.insert(key.canonical());
  }
  try {
    // The process's first cooperative-matrix pipeline is waited for, even in the eval
    // loop: a driver that cannot build them at all is found before an op plans with one.
    // Later ones are created in parallel like any kernel; one that fails turns them off
    // (the hook above) and the eval that submits it throws (docs/vulkan.md).
    const Kernel& k = kernel_library().get(key);
    if (!ck.proven.load()) {
      k.wait_pipeline();
      ck.proven = true;
    }
    return &k;
  } catch (const std::exception& e) {
    drop_coop(key, e.what());
    return nullptr;
  }
}

const char* gpu_dtype_name(Dtype dt) {
  const auto& caps = device("eval_gpu").caps();
  switch (dt) {
    case bool_:
      return caps.storage_8bit ? "b" : nullptr;
    case uint8:
      return caps.storage_8bit ? "u8" : nullptr;
    case int8:
      return caps.storage_8bit ? "i8" : nullptr;
    case uint16:
      return caps.storage_16bit ? "u16" : nullptr;
    case int16:
      return caps.storage_16bit ? "i16" : nullptr;
    case float16:
      return caps.storage_16bit ? "f16" : nullptr;
    case bfloat16:
      return caps.storage_16bit ? "bf16" : nullptr;
    case uint32:
      return "u32";
    case int32:
      return "i32";
    case float32:
      return "f32";
    case uint64:
      return caps.shader_int64 ? "u64" : nullptr;
    case int64:
      return caps.shader_int64 ? "i64" : nullptr;
    default:
      return nullptr;  // float64, complex64: CPU only, as in MLX
  }
}

bool gpu_supports(Dtype dt) {
  return gpu_dtype_name(dt) != nullptr;
}

bool gpu_supports(const std::vector<array>& arrays) {
  return std::all_of(arrays.begin(), arrays.end(),
                     [](const array& a) { return gpu_supports(a.dtype()); });
}

bool gpu_donatable(const array& a, int stream) {
  return a.is_donatable_in_stream(stream);
}

void allocate_or_donate(const std::vector<array>& inputs, array& out, bool allow_donation) {
  if (allow_donation) {
    int stream = out.primitive().stream().index;
    for (auto& in : inputs) {
      if (in.has_data() && gpu_donatable(in, stream) && in.flags().row_contiguous &&
          in.data_size() == in.size() && in.size() == out.size() &&
          in.itemsize() == out.itemsize()) {
        out.copy_shared_buffer(in);
        return;
      }
    }
  }
  out.set_data(allocator::malloc(out.nbytes()));
}

void copy_or_donate(int stream, const array& src, array& out) {
  if (gpu_donatable(src, stream) && src.flags().row_contiguous && src.data_size() == src.size()) {
    out.copy_shared_buffer(src);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
    if (out.size() > 0) {
      copy_gpu(stream, src, out);
    }
  }
}

View view_of(const array& a) {
  return {a.buffer(), static_cast<int64_t>(a.offset()), a.dtype(), a.strides()};
}

int64_t binding_alignment(const Device& dev, int64_t itemsize) {
  int64_t min_align = static_cast<int64_t>(dev.limits().minStorageBufferOffsetAlignment);
  return std::max({min_align, itemsize, kBindAlignment});
}

bool fits_one_binding(const Device& dev, const OperandSpan& span) {
  int64_t max_range = dev.limits().maxStorageBufferRange;
  return (span.hi - span.lo + 1) * span.itemsize + binding_alignment(dev, span.itemsize) <=
         max_range;
}

BoundOperand bind_operand(const Device& dev, const OperandSpan& span, bool is_output) {
  int64_t max_range = dev.limits().maxStorageBufferRange;
  int64_t align = binding_alignment(dev, span.itemsize);
  int64_t bind = (span.origin + span.lo * span.itemsize) / align * align;
  int64_t need = span.origin + (span.hi + 1) * span.itemsize - bind;
  int64_t range = std::max(
      need, std::min<int64_t>(static_cast<int64_t>(span.alloc->capacity) - bind, max_range));
  BoundOperand b;
  b.binding = {span.alloc, static_cast<VkDeviceSize>(bind), static_cast<VkDeviceSize>(range),
               is_output};
  b.elem_offset = static_cast<uint64_t>((span.origin - bind) / span.itemsize);
  return b;
}

void record_launch(CommandEncoder& enc, const Kernel& kernel, const codegen::Launch& launch,
                   std::span<const Binding> bindings) {
  if (launch.meta.empty()) {
    enc.dispatch(kernel, bindings, launch.push_constants, launch.groups);
    return;
  }
  std::array<Binding, CommandEncoder::kMaxBindings> all;
  if (bindings.size() >= all.size()) {
    throw std::runtime_error("[vulkan] a dispatch binds more than 16 buffers.");
  }
  std::copy(bindings.begin(), bindings.end(), all.begin());
  auto meta = allocator::malloc(launch.meta.size());
  Binding mb{allocation(meta), 0, (launch.meta.size() + 3) / 4 * 4, false};
  enc.write(mb, launch.meta.data(), launch.meta.size());
  enc.add_temporary(meta);
  all[bindings.size()] = mb;
  enc.dispatch(kernel, std::span(all.data(), bindings.size() + 1), launch.push_constants,
               launch.groups);
}

}  // namespace mlx::core::vulkan
