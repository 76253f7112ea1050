// Device memory for arrays: large VkDeviceMemory blocks, each with one VkBuffer, carved
// into sub-allocations; freed buffers wait in a size-class cache for reuse, so steady-state
// evaluation makes no Vulkan allocation calls at all.
//
// Host access (Buffer::raw_ptr): a mapped pointer when the device's array memory is
// host-visible (see Device::arrays_mapped); otherwise a host-visible "shadow" copy that is
// downloaded when the device copy is newer and uploaded (recorded into the command buffer)
// before the GPU next uses the buffer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

struct Block;

// What an allocator::Buffer's handle points to on the Vulkan backend.
struct Allocation {
  Block* block = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;  // the block's buffer
  VkDeviceSize offset = 0;           // byte offset inside `buffer`
  size_t size = 0;                   // bytes asked for
  size_t capacity = 0;               // bytes reserved (the size class)
  bool guarded = false;              // poisoned: bytes past `size` are guard bytes
  char* mapped = nullptr;            // host pointer when the block is mapped
  bool small_mapped = false;         // from VulkanAllocator's small BAR pool (staged path)

  // Staged path only: the host copy and which side is newer.
  Allocation* shadow = nullptr;
  bool host_dirty = false;    // the host may have written the shadow since the last upload
  bool device_newer = false;  // the GPU wrote the buffer after the last download
  // The batch that records the latest upload. Until it is submitted, a batch of another
  // stream may be submitted first, so such a batch records its own (identical) upload.
  uint64_t upload_serial = 0;
  // The batch that records a download of the buffer into the shadow after its last write
  // (download_to_host), 0 for none: a host read once that batch completes needs no copy.
  uint64_t download_serial = 0;

  uint64_t last_use = 0;  // serial of the last command buffer that referenced this buffer
  // Serial of the last command buffer that wrote it (0: none since it was handed out), so
  // gpu::is_ready can tell whether an array's data is final without waiting.
  std::atomic<uint64_t> write_serial{0};
  // The stream whose command buffer last wrote the buffer (-1: none), so a reader on
  // another stream can submit that stream's open batch first.
  std::atomic<int> writer_stream{-1};

  // Cache bookkeeping (valid only while cached): the links of its size class's list and
  // of the least-recently-freed list.
  Allocation* class_prev = nullptr;
  Allocation* class_next = nullptr;
  Allocation* lru_prev = nullptr;
  Allocation* lru_next = nullptr;
};

// A list threaded through two link members of Allocation: a cached buffer sits on its size
// class's list and on the LRU list at once, and caching or reusing it allocates nothing
// (per-node containers allocated twice per free and freed twice per malloc).
template <Allocation* Allocation::*Prev, Allocation* Allocation::*Next>
class AllocationList {
 public:
  bool empty() const {
    return head_ == nullptr;
  }
  Allocation* front() const {
    return head_;
  }
  void push_back(Allocation* a) {
    a->*Prev = tail_;
    a->*Next = nullptr;
    (tail_ ? tail_->*Next : head_) = a;
    tail_ = a;
  }
  void erase(Allocation* a) {
    Allocation* prev = a->*Prev;
    Allocation* next = a->*Next;
    (prev ? prev->*Next : head_) = next;
    (next ? next->*Prev : tail_) = prev;
    a->*Prev = nullptr;
    a->*Next = nullptr;
  }

 private:
  Allocation* head_ = nullptr;
  Allocation* tail_ = nullptr;
};

// A copy the encoder records before a dispatch: the host shadow into the device buffer.
struct Upload {
  VkBuffer src = VK_NULL_HANDLE;
  VkBuffer dst = VK_NULL_HANDLE;
  VkBufferCopy region{};
};

class Pool;

class VulkanAllocator : public allocator::Allocator {
 public:
  explicit VulkanAllocator(Device& d);
  ~VulkanAllocator() override;

  allocator::Buffer malloc(size_t size) override;
  // Host-made arrays (array::init): on the staged path one of the smallest size class is
  // mapped in the BAR memory (small_), so it needs no upload. Only these: a buffer the CPU
  // reads back a lot (a CPU op's output) would run at uncached PCIe speed there.
  allocator::Buffer malloc_host_written(size_t size) override;
  void free(allocator::Buffer buffer) override;
  size_t size(allocator::Buffer buffer) const override;

  // A CPU pointer to the buffer's bytes (maps or stages; see the file comment).
  void* host_ptr(Allocation* a);

  // The encoder calls this for every buffer a command buffer touches, holding lock() across
  // the buffers of one command: stamps its serial (so it is not reused before that command
  // buffer completes) and returns the upload to record first when the host copy is newer.
  std::unique_lock<std::mutex> lock() {
    return std::unique_lock(mtx_);
  }
  bool prepare_gpu_use_locked(Allocation* a, uint64_t serial, bool write, Upload& upload);
  // The shadow a batch may download `a` into at its end, so a host read after it completes
  // needs no submission of its own (gpu::prefetch_for_host), or nullptr: only on the staged
  // path, for at most kPrefetchBytes, and when batch `serial` wrote `a`.
  Allocation* download_target_locked(Allocation* a, uint64_t serial);
  static constexpr size_t kPrefetchBytes = 64 * 1024;
  // Staged path: host-made buffers of at most this capacity (the smallest size class) live
  // mapped in the BAR memory (small_ below), where the device has it.
  static constexpr size_t kSmallMappedBytes = 256;
  // Host reads that needed a download submission of their own (staged path), for tests.
  uint64_t one_off_downloads() const {
    return one_off_downloads_.load();
  }

  // Releases deferred frees whose command buffers have completed.
  void collect();

  size_t active_memory();
  size_t peak_memory();
  void reset_peak();
  size_t cache_memory();
  size_t set_memory_limit(size_t limit);
  size_t memory_limit() const {
    return memory_limit_;
  }
  size_t set_cache_limit(size_t limit);
  void clear_cache();

  // For tests and stats: Vulkan memory objects currently held, and ever allocated.
  size_t block_count();
  size_t vk_allocation_count();
  size_t block_size() const {
    return block_size_;
  }

  // Debug hooks (mlx/backend/gpu/debug.h): while poisoning, new buffers are filled with
  // kPoison and followed by a guard region of kGuardByte that check_guards() verifies.
  static constexpr uint8_t kPoison = 0xA5;
  static constexpr uint8_t kGuardByte = 0xCD;
  static constexpr size_t kGuardBytes = 256;
  void set_poison(bool enabled);
  bool poison_enabled();
  size_t check_guards();
  bool mapped() const {
    return mapped_;
  }

 private:
  void release_locked(Allocation* a);  // back to the cache (or the pool)
  void evict_locked(size_t target);    // shrinks the cache to at most `target` bytes
  void destroy_locked(Allocation* a);  // back to the pool, shadow too
  void download(Allocation* a);
  std::atomic<uint64_t> one_off_downloads_{0};
  void ensure_shadow_locked(Allocation* a);

  Device& dev_;
  bool mapped_;
  size_t block_size_;
  std::unique_ptr<Pool> pool_;     // array memory
  std::unique_ptr<Pool> staging_;  // shadows (staged path only)
  // Staged path: host-made buffers of the smallest size class, mapped in the device's BAR
  // memory (Device::small_mapped_memory_type), or null. A host-made scalar then needs no
  // upload (a Qwen3 decode step's position cost the GPU a prologue command buffer a step).
  std::unique_ptr<Pool> small_;
  allocator::Buffer allocate(size_t size, bool host_written);
  Pool& pool_of(const Allocation* a) {
    return a->small_mapped ? *small_ : *pool_;
  }
  // The size-class cache keeps the two kinds apart (capacities are multiples of 256).
  static size_t cache_key(size_t capacity, bool small_mapped) {
    return capacity + (small_mapped ? 1 : 0);
  }

  std::mutex mtx_;
  // Cached buffers by size class (each list oldest first), and all of them by age.
  std::unordered_map<size_t, AllocationList<&Allocation::class_prev, &Allocation::class_next>>
      cache_;
  AllocationList<&Allocation::lru_prev, &Allocation::lru_next> lru_;  // front: least recently freed
  std::vector<Allocation*> deferred_;
  bool poison_ = false;
  std::unordered_set<Allocation*> poisoned_;
  size_t active_ = 0;
  size_t peak_ = 0;
  size_t cached_ = 0;
  size_t memory_limit_;
  size_t cache_limit_;
};

// The backend's allocator; nullptr when there is no device or after teardown at exit.
VulkanAllocator* vulkan_allocator();

inline Allocation* allocation(const allocator::Buffer& b) {
  return static_cast<Allocation*>(b.ptr());
}

}  // namespace mlx::core::vulkan
