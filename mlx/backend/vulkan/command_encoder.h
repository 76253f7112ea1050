// Per-stream command recording and submission.
//
// Each GPU stream records into one open command buffer. It is submitted ("committed") when
// the batch reaches MLX_VK_MAX_OPS_PER_BUFFER ops or MLX_VK_MAX_MB_PER_BUFFER megabytes
// written while no earlier batch of the stream runs (else larger bounds, batch_action), at
// gpu::finalize, or when the host needs results. A pipeline barrier goes between two
// commands only when the later one reads a buffer the batch wrote, or writes a buffer the
// batch used; every command buffer starts with one full barrier, which orders it after all
// earlier submissions on the (single, shared) queue, and ends with one that makes its
// writes visible to the host. On the staged path, uploads and meta writes into buffers the
// batch has not used yet go into a prologue command buffer submitted just before the
// batch's (Batch::pre), so they put no barrier between its dispatches. Completion (a
// fence) releases the arrays the command buffer retained and the temporaries it owned,
// and, when profiling (profile.h), reads the timestamps around its dispatches.
//
// A dispatch whose kernel's pipeline is still being created on a worker thread (first use
// inside the eval loop, kernel_library.h) is not recorded at once: from it on, the batch's
// commands wait in a list, recorded in order when the batch is submitted, after the
// pending pipelines exist. A pipeline that failed is left out of the batch, which still
// runs, and the submission then throws, naming it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

struct Kernel;

// When an open batch is submitted (CommandEncoder::end_op). At `ops` or `bytes` early, if
// no earlier batch of the stream still runs, so that an idle device starts on it; at
// `busy_ops` or `busy_bytes` whatever the device does. Each submission costs the GPU ~15 us
// between command buffers (NVIDIA H100) and a busy device gains nothing from an early one;
// the busy bounds remain because a batch holds its ops' inputs until it completes.
struct BatchLimits {
  size_t ops = 50;                      // MLX_VK_MAX_OPS_PER_BUFFER
  size_t bytes = size_t{64} << 20;      // MLX_VK_MAX_MB_PER_BUFFER
  size_t busy_bytes = size_t{1} << 30;  // MLX_VK_BUSY_MB_PER_BUFFER, or by device memory
  size_t busy_ops = 256;                // MLX_VK_BUSY_OPS_PER_BUFFER
};
enum class BatchAction { keep, commit, commit_if_idle };
// What a batch of `ops` recorded ops writing `bytes` of outputs does next.
BatchAction batch_action(size_t ops, size_t bytes, const BatchLimits& limits);

// A range of an allocation bound to one storage-buffer slot. `offset` is in bytes from the
// allocation's start and must be a multiple of minStorageBufferOffsetAlignment.
struct Binding {
  Allocation* alloc = nullptr;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;
  bool write = false;
};

class CommandEncoder {
 public:
  CommandEncoder(Device& d, int stream_index);
  ~CommandEncoder();
  CommandEncoder(const CommandEncoder&) = delete;
  CommandEncoder& operator=(const CommandEncoder&) = delete;

  int index() const {
    return index_;
  }

  // Kernels bind at most this many buffers (descriptor writes live on the stack).
  static constexpr size_t kMaxBindings = 16;
  // Push constants per dispatch (the largest any kernel of ours takes; 128 on lavapipe).
  static constexpr size_t kMaxPushBytes = 256;

  // Records a dispatch: bindings go to slots 0..n-1 of set 0 (n == kernel.num_buffers).
  void dispatch(const Kernel& kernel, std::span<const Binding> bindings,
                std::span<const uint8_t> push_constants, std::array<uint32_t, 3> groups);
  // Fills `dst` with a repeated 32-bit value (offset and range multiples of 4).
  void fill(const Binding& dst, uint32_t value);
  // Copies src.range bytes from src to dst.
  void copy(const Binding& src, const Binding& dst);
  // Writes host bytes into dst (mapped: memcpy now; else recorded vkCmdUpdateBuffer).
  void write(const Binding& dst, const void* data, size_t bytes);

  // Staged path: records, at the end of the open batch, a download of `a` into its host
  // shadow when that batch wrote it and it is small (VulkanAllocator::download_target_locked),
  // so a host read once the batch completes needs no submission behind later work.
  void download_to_host(Allocation* a);

  // Keeps an array's data alive until this batch completes.
  void retain(std::shared_ptr<array::Data> data);
  // Frees a buffer when this batch completes.
  void add_temporary(allocator::Buffer buffer);
  // Ends one op, under one lock: if the batch is open, the op's inputs' data stay alive until
  // it completes (except a buffer donated to an output: the output owns it, and retaining it
  // would make it undonatable for the next op; the allocator defers its reuse anyway); an op
  // that recorded commands counts toward the batch limits. Commits when a limit is reached.
  void end_op(const std::vector<array>& inputs, const std::vector<array>& outputs);

  // Held by the eval loop around one op (its eval_gpu and end_op), so that another thread's
  // commit or wait (a host read while the eval thread records, eval_worker.h) never submits
  // a batch between an op's commands and the retains that keep its inputs alive.
  std::unique_lock<std::recursive_mutex> lock_for_op() {
    return std::unique_lock<std::recursive_mutex>(mtx_);
  }

  // Submits the open batch (no wait).
  void commit();
  // Submits and waits for everything this stream has submitted.
  void synchronize();
  // Submits the open batch if it is batch `serial` or older, and waits for the batches up to
  // `serial` only: a reader of one result does not wait for work recorded after it.
  void wait_for(uint64_t serial);
  // Releases what completed batches held; never blocks.
  void poll();
  bool has_open_work();

 private:
  // Batches are recycled (spare_), so their lists keep their capacity and a warm batch
  // allocates nothing per op.
  struct Batch {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    // Staged path: uploads into buffers the batch has not used yet, submitted before `cb`
    // (prologue_locked), so that they need no barrier between the batch's dispatches.
    VkCommandBuffer pre = VK_NULL_HANDLE;
    bool pre_open = false;
    VkFence fence = VK_NULL_HANDLE;
    uint64_t serial = 0;
    const Kernel* bound = nullptr;  // the kernel bound last (rebinding it is skipped)
    // Kernels whose pipelines were in creation when dispatched, and the commands recorded
    // since the first of them, in order (see the top of this file).
    std::vector<const Kernel*> pending;
    std::vector<std::function<void(VkCommandBuffer)>> deferred;
    std::vector<std::shared_ptr<array::Data>> retained;
    std::vector<allocator::Buffer> temporaries;
    std::vector<VkDescriptorPool> pools;
    // Profiling (profile.h): timestamp pools, two queries per timed dispatch, and the key
    // of each timed dispatch in recording order.
    bool profiled = false;
    // Batch timing (profile.h): query 0 at the command buffer's start, 1 at its end.
    bool batch_timed = false;
    std::vector<VkQueryPool> query_pools;
    std::vector<std::string> timed;
  };

  Batch& open_locked();
  // Stamps the buffers, records uploads of newer host copies, and adds a barrier when a
  // hazard with earlier commands of the batch exists.
  void prepare_locked(Batch& b, const Binding* bindings, size_t n);
  void barrier_locked(Batch& b);
  // Records `f` into the batch's command buffer now, or queues it while pipelines are
  // pending.
  template <class F>
  void record_locked(Batch& b, F&& f) {
    if (b.pending.empty()) {
      f(b.cb);
    } else {
      b.deferred.emplace_back(std::forward<F>(f));
    }
  }
  // Waits for the batch's pending pipelines and records its queued commands, without the
  // dispatches of kernels whose creation failed; returns the first such failure.
  std::exception_ptr replay_locked(Batch& b);
  VkDescriptorSet allocate_set_locked(Batch& b, VkDescriptorSetLayout layout);
  void commit_locked();
  void poll_locked(bool wait_all);
  // Releases what the batch held and keeps it (command buffer, fence, list capacity) for
  // reuse.
  void finish_batch(std::unique_ptr<Batch> b);
  void add_query_pool_locked(Batch& b);
  // Writes the start timestamp of a dispatch; returns the query its end goes to.
  uint32_t start_timing_locked(Batch& b, const Kernel& k);
  // The open batch's prologue command buffer, begun on first use.
  VkCommandBuffer prologue_locked(Batch& b);
  // Accumulates the times of a completed batch's dispatches.
  void read_times(Batch& b);

  Device& dev_;
  int index_;
  std::recursive_mutex mtx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::unique_ptr<Batch> open_;
  size_t ops_ = 0;
  size_t bytes_ = 0;
  // Whether the op being evaluated recorded a command: only those count toward the batch
  // limits (a view records none), as MLX counts the ops that encode a kernel.
  bool op_recorded_ = false;
  // Buffers read / written since the last barrier. A flat vector: a batch touches a few
  // dozen buffers at most and clear() keeps the capacity, where a hash set allocated a node
  // per insert on every dispatch.
  class BufferSet {
   public:
    bool contains(const Allocation* a) const {
      return std::find(items_.begin(), items_.end(), a) != items_.end();
    }
    void insert(Allocation* a) {
      if (!contains(a)) {
        items_.push_back(a);
      }
    }
    void clear() {
      items_.clear();
    }

   private:
    std::vector<Allocation*> items_;
  };
  BufferSet read_, written_;
  std::deque<std::unique_ptr<Batch>> in_flight_;
  std::vector<std::unique_ptr<Batch>> spare_;
  std::vector<VkDescriptorPool> spare_pools_;
  std::vector<VkQueryPool> spare_query_pools_;
  BatchLimits limits_;
  size_t max_in_flight_;
};

// The encoder of a GPU stream (created by gpu::new_stream). Throws for an unknown stream.
// Kernel dispatches recorded by this process on every stream (tests count fused launches).
uint64_t dispatch_count();

CommandEncoder& encoder(int stream_index);
void create_encoder(int stream_index);
// Submits the open batch of every stream (before a host download or a cross-stream read).
void commit_all_streams();
// Releases what every stream's completed batches hold (never blocks). Call with no
// stream lock held.
void poll_all_streams();
// Submits every stream's open batch and waits for all of them.
void synchronize_all_streams();
// Submits the open batch of a stream if it has one (unknown streams are ignored).
void commit_stream(int stream_index);

// Records commands into a one-off command buffer, submits it after everything already
// submitted, and waits for it. Used for host downloads on the staged path.
void run_one_off(const std::function<void(VkCommandBuffer)>& record);

// Statistics for tests: command buffers submitted and barriers recorded, process-wide.
struct EncoderStats {
  size_t submissions = 0;
  size_t barriers = 0;
  size_t dispatches = 0;
  size_t deferred = 0;  // dispatches recorded at submission: their pipelines were in creation
};
EncoderStats encoder_stats();

}  // namespace mlx::core::vulkan
