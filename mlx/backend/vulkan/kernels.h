// The launch layer every kernel family shares. An eval_gpu reads the same way for each:
//   plan    the family's codegen picks the variant and builds the key and Launch numbers;
//   bind    each operand is bound at an aligned offset within maxStorageBufferRange
//           (bind_operand), and the kernel learns where element 0 sits (elem_offset);
//   record  the meta buffer is uploaded and the dispatch recorded (record_launch).
// Repeated launches skip planning through the launch memo (launch_memo.h), keyed by a
// signature the family builds from exactly what its key and numbers depend on.
// docs/architecture.md walks one kernel through these steps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "codegen/codegen.h"
#include "mlx/array.h"
#include "mlx/backend/vulkan/command_encoder.h"

namespace mlx::core::vulkan {

struct Allocation;
struct Kernel;

// The dtype's name in kernel keys ("f32", "bf16", "b", ...), or nullptr when kernels on
// this device cannot hold it (float64 and complex64 always; 8/16/64-bit types when the
// device lacks the storage or int64 feature).
const char* gpu_dtype_name(Dtype dt);
bool gpu_supports(Dtype dt);
bool gpu_supports(const std::vector<array>& arrays);

// Whether a GPU op of `stream` may write its output into a's buffer: nothing but the graph
// and command batches of that same stream hold a or its data. Those batches read it
// before the op writes: the stream's commands run in submission order behind barriers
// (a hazard barrier within a batch, a full one at the start of each). Freed buffers are
// not reused before their batches complete either way (the allocator defers them). A CPU
// op must still see a batch's hold as a use (array::is_donatable): it runs now, not in
// the stream's order. This lets a decode step update its KV cache in place while the
// previous step's attention, still queued, reads it.
bool gpu_donatable(const array& a, int stream);

// Builds `key` (kernel_library().get). When `coop` (the key is a cooperative-matrix kernel)
// and the build fails (the driver refuses the module, or the KHR rewrite refuses it),
// cooperative matrices are turned off for the device, one warning names the kernel and the
// error, and nullptr is returned so that the caller plans again without them. Only the
// process's first cooperative-matrix pipeline is waited for here; a later one that fails
// in its parallel creation turns them off too, but its batch's eval throws (docs/vulkan.md).
// Other failures propagate.
const Kernel* get_kernel_or_drop_coop(const codegen::KernelKey& key, bool coop);

// Gives `out` a row-contiguous buffer: an input's buffer when donation is safe (the input
// is row-contiguous, dense, the same item size, and gpu_donatable for out's stream), else
// new memory.
void allocate_or_donate(const std::vector<array>& inputs, array& out, bool allow_donation);

// Gives `out` (src's shape and dtype) src's values: src's buffer itself when it is
// row-contiguous, dense and gpu_donatable for `stream` (an update in place), else a copy
// recorded on the stream. The scatter family and a rope written into a slice use it.
void copy_or_donate(int stream, const array& src, array& out);

// A strided view of a buffer: one operand of a launch.
struct View {
  allocator::Buffer buffer{nullptr};
  int64_t offset = 0;  // bytes from the buffer's start to element 0
  Dtype dtype = float32;
  Strides strides;  // elements, one per dim of the launch shape
};
View view_of(const array& a);

// Bindings start at multiples of 32 bytes (or the device's minimum offset alignment, or
// the item size, whichever is larger), so codegen may read aligned operands as vectors.
constexpr int64_t kBindAlignment = 32;

// Where an operand's elements lie in its allocation: element 0 at byte `origin`, and the
// lowest and highest elements the launch touches at element offsets lo <= 0 <= hi.
struct OperandSpan {
  Allocation* alloc = nullptr;
  int64_t origin = 0;
  int64_t itemsize = 1;
  int64_t lo = 0;
  int64_t hi = 0;
};

// The byte alignment of an operand's binding on `dev`.
int64_t binding_alignment(const Device& dev, int64_t itemsize);

// Whether the span fits one binding of maxStorageBufferRange once aligned.
bool fits_one_binding(const Device& dev, const OperandSpan& span);

struct BoundOperand {
  Binding binding;
  uint64_t elem_offset = 0;  // element 0's index within the binding
};

// Binds a span at an aligned offset. The range reaches the end of the allocation where
// maxStorageBufferRange allows, so a stray write lands in the (debug) guard region instead
// of going unnoticed. The caller checks fits_one_binding first (or splits the launch).
BoundOperand bind_operand(const Device& dev, const OperandSpan& span, bool is_output);

// Uploads launch.meta (if any) as the last binding and records the dispatch on `enc`.
// `bindings` holds the operands in binding order (a stack array will do); the meta binding
// goes after them.
void record_launch(CommandEncoder& enc, const Kernel& kernel, const codegen::Launch& launch,
                   std::span<const Binding> bindings);

}  // namespace mlx::core::vulkan
