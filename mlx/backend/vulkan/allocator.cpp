#include "mlx/backend/vulkan/allocator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "mlx/backend/common/cpu_allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/serials.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

// One VkDeviceMemory with one VkBuffer over all of it, and its free ranges.
struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  char* mapped = nullptr;
  bool dedicated = false;
  std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, coalesced
  VkDeviceSize used = 0;
};

// Blocks of one memory type. First-fit inside blocks; arrays larger than half a block get
// a dedicated block of their own.
class Pool {
 public:
  Pool(Device& d, uint32_t type, bool map, VkDeviceSize block_size, VkDeviceSize alignment)
      : dev_(d), type_(type), map_(map), block_size_(block_size), alignment_(alignment) {}

  ~Pool() {
    for (auto* b : blocks_) {
      destroy(b);
    }
  }

  // `bytes` is a multiple of the alignment.
  std::pair<Block*, VkDeviceSize> alloc(VkDeviceSize bytes) {
    if (bytes <= block_size_ / 2) {
      for (auto* b : blocks_) {
        if (b->dedicated) {
          continue;
        }
        for (auto it = b->free.begin(); it != b->free.end(); ++it) {
          if (it->second >= bytes) {
            VkDeviceSize off = it->first, left = it->second - bytes;
            b->free.erase(it);
            if (left) {
              b->free.emplace(off + bytes, left);
            }
            b->used += bytes;
            return {b, off};
          }
        }
      }
      auto* b = create(block_size_, false);
      b->free.clear();
      if (block_size_ > bytes) {
        b->free.emplace(bytes, block_size_ - bytes);
      }
      b->used = bytes;
      return {b, 0};
    }
    auto* b = create(bytes, true);
    b->free.clear();
    b->used = bytes;
    return {b, 0};
  }

  void free(Block* b, VkDeviceSize off, VkDeviceSize bytes) {
    b->used -= bytes;
    if (b->used == 0) {
      // An empty block: dedicated ones go at once; keep one empty shared block warm.
      bool keep = !b->dedicated && std::none_of(blocks_.begin(), blocks_.end(), [&](Block* o) {
        return o != b && !o->dedicated && o->used == 0;
      });
      if (!keep) {
        blocks_.erase(std::find(blocks_.begin(), blocks_.end(), b));
        destroy(b);
        return;
      }
      b->free.clear();
      b->free.emplace(0, b->size);
      return;
    }
    auto [it, ok] = b->free.emplace(off, bytes);
    (void)ok;
    auto next = std::next(it);
    if (next != b->free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      b->free.erase(next);
    }
    if (it != b->free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        b->free.erase(it);
      }
    }
  }

  // Frees every empty block (clear_cache).
  void trim() {
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      if ((*it)->used == 0) {
        destroy(*it);
        it = blocks_.erase(it);
      } else {
        ++it;
      }
    }
  }

  size_t block_count() const {
    return blocks_.size();
  }
  size_t vk_allocations() const {
    return vk_allocations_;
  }
  VkDeviceSize alignment() const {
    return alignment_;
  }

 private:
  Block* create(VkDeviceSize size, bool dedicated) {
    if (size > dev_.max_allocation_size()) {
      throw std::runtime_error("[vulkan] cannot allocate " + std::to_string(size) +
                               " bytes: the device's maxMemoryAllocationSize is " +
                               std::to_string(dev_.max_allocation_size()) + " bytes.");
    }
    auto b = std::make_unique<Block>();
    b->size = size;
    b->dedicated = dedicated;
    VkDevice d = dev_.handle();
    auto bci = make_info<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(d, &bci, nullptr, &b->buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d, b->buffer, &req);
    if (!(req.memoryTypeBits & (1u << type_))) {
      vkDestroyBuffer(d, b->buffer, nullptr);
      throw std::runtime_error("[vulkan] storage buffers cannot use memory type " +
                               std::to_string(type_) + " on this device.");
    }
    auto mai = make_info<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type_;
    VkResult r = vkAllocateMemory(d, &mai, nullptr, &b->memory);
    if (r != VK_SUCCESS) {
      vkDestroyBuffer(d, b->buffer, nullptr);
      throw std::runtime_error("[malloc] the device could not allocate " + std::to_string(size) +
                               " bytes (" + result_name(r) + ").");
    }
    ++vk_allocations_;
    check(vkBindBufferMemory(d, b->buffer, b->memory, 0), "vkBindBufferMemory");
    if (map_) {
      void* p = nullptr;
      check(vkMapMemory(d, b->memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
      b->mapped = static_cast<char*>(p);
    }
    b->free.emplace(0, size);
    blocks_.push_back(b.get());
    return b.release();
  }

  void destroy(Block* b) {
    VkDevice d = dev_.handle();
    vkDestroyBuffer(d, b->buffer, nullptr);
    vkFreeMemory(d, b->memory, nullptr);  // unmaps implicitly
    delete b;
  }

  Device& dev_;
  uint32_t type_;
  bool map_;
  VkDeviceSize block_size_;
  VkDeviceSize alignment_;
  std::vector<Block*> blocks_;
  size_t vk_allocations_ = 0;
};

namespace {

// Size classes a quarter of a power of two apart (at most 25% waste), 256 bytes minimum,
// so a freed buffer can serve later requests of similar size.
size_t size_class(size_t n) {
  if (n <= 256) {
    return 256;
  }
  size_t p = size_t(1) << (63 - __builtin_clzll(static_cast<unsigned long long>(n - 1)));
  size_t step = std::max<size_t>(p / 4, 256);
  return (n + step - 1) / step * step;
}

}  // namespace

VulkanAllocator::VulkanAllocator(Device& d) : dev_(d), mapped_(d.arrays_mapped()) {
  size_t mb = env_size("MLX_VK_BLOCK_MB", 64);
  block_size_ = std::max<size_t>(mb, 1) << 20;
  block_size_ = std::min<size_t>(block_size_, d.max_allocation_size());
  VkDeviceSize align = std::max<VkDeviceSize>(256, d.limits().minStorageBufferOffsetAlignment);
  block_size_ = block_size_ / align * align;
  pool_ = std::make_unique<Pool>(d, d.array_memory_type(), mapped_, block_size_, align);
  if (!mapped_) {
    staging_ = std::make_unique<Pool>(d, d.staging_memory_type(), true, block_size_, align);
    if (d.small_mapped_memory_type() >= 0) {
      // 1 MiB blocks: 4096 small buffers each.
      VkDeviceSize small_block =
          std::max<VkDeviceSize>(align, (VkDeviceSize{1} << 20) / align * align);
      small_ = std::make_unique<Pool>(d, static_cast<uint32_t>(d.small_mapped_memory_type()), true,
                                      small_block, align);
    }
  }
  const auto& mem = d.memory_properties();
  memory_limit_ = mem.memoryHeaps[mem.memoryTypes[d.array_memory_type()].heapIndex].size;
  cache_limit_ = memory_limit_;
}

VulkanAllocator::~VulkanAllocator() {
  // Teardown at exit: the device is going away, so every block goes, live arrays' too
  // (their later frees find no allocator and do nothing).
  std::lock_guard lk(mtx_);
  while (!lru_.empty()) {
    Allocation* a = lru_.front();
    lru_.erase(a);
    delete a->shadow;
    delete a;
  }
  for (auto* a : deferred_) {
    delete a->shadow;
    delete a;
  }
  cache_.clear();
  deferred_.clear();
  staging_.reset();
  small_.reset();
  pool_.reset();
}

allocator::Buffer VulkanAllocator::malloc(size_t size) {
  return allocate(size, false);
}

allocator::Buffer VulkanAllocator::malloc_host_written(size_t size) {
  return allocate(size, true);
}

allocator::Buffer VulkanAllocator::allocate(size_t size, bool host_written) {
  std::unique_lock lk(mtx_);
  const bool poison = poison_;
  // Checked before size_class, whose rounding would wrap a size near SIZE_MAX to a small one.
  // (Also past SIZE_MAX / 4, whatever the limit: size_class and the guard bytes would wrap.)
  if (size > memory_limit_ || size > std::numeric_limits<size_t>::max() / 4) {
    throw std::runtime_error("[malloc] allocating " + std::to_string(size) +
                             " bytes would exceed the memory limit of " +
                             std::to_string(memory_limit_) + " bytes.");
  }
  size_t cap = size_class(poison ? size + kGuardBytes : size);
  if (active_ + cap > memory_limit_) {
    lk.unlock();
    collect();
    lk.lock();
    evict_locked(0);
    if (active_ + cap > memory_limit_) {
      throw std::runtime_error("[malloc] allocating " + std::to_string(size) +
                               " bytes would exceed the memory limit of " +
                               std::to_string(memory_limit_) + " bytes (" +
                               std::to_string(active_) + " in use).");
    }
  }
  const bool small_mapped = host_written && small_ && cap <= kSmallMappedBytes;
  Allocation* a = nullptr;
  auto it = cache_.find(cache_key(cap, small_mapped));
  if (it != cache_.end() && !it->second.empty()) {
    a = it->second.front();
    it->second.erase(a);
    lru_.erase(a);
    cached_ -= cap;
    a->host_dirty = false;
    a->device_newer = false;
    a->upload_serial = 0;
    a->download_serial = 0;
  } else {
    std::pair<Block*, VkDeviceSize> got;
    Pool& pool = small_mapped ? *small_ : *pool_;
    try {
      got = pool.alloc(cap);
    } catch (const std::runtime_error&) {
      // Out of device memory: give the cache back to the driver and try once more.
      evict_locked(0);
      pool.trim();
      got = pool.alloc(cap);
    }
    a = new Allocation();
    a->block = got.first;
    a->buffer = got.first->buffer;
    a->offset = got.second;
    a->capacity = cap;
    a->mapped = got.first->mapped ? got.first->mapped + got.second : nullptr;
    a->small_mapped = small_mapped;
  }
  a->size = size;
  a->guarded = poison;
  a->last_use = 0;
  a->write_serial = 0;
  a->writer_stream = -1;
  active_ += cap;
  peak_ = std::max(peak_, active_);
  if (poison) {
    poisoned_.insert(a);
    lk.unlock();
    auto* p = static_cast<uint8_t*>(host_ptr(a));
    std::memset(p, kPoison, size);
    std::memset(p + size, kGuardByte, cap - size);
  }
  return allocator::Buffer(a);
}

void VulkanAllocator::free(allocator::Buffer buffer) {
  auto* a = allocation(buffer);
  if (!a) {
    return;
  }
  std::lock_guard lk(mtx_);
  if (!poisoned_.empty()) {
    poisoned_.erase(a);
  }
  if (a->last_use > completed_watermark()) {
    // A command buffer that uses it may still run: reuse only after it completes.
    deferred_.push_back(a);
    return;
  }
  release_locked(a);
}

size_t VulkanAllocator::size(allocator::Buffer buffer) const {
  auto* a = allocation(buffer);
  // MLX reports the block's capacity; with poisoning on, bytes past the request are guards.
  return a ? (a->guarded ? a->size : a->capacity) : 0;
}

void VulkanAllocator::release_locked(Allocation* a) {
  active_ -= a->capacity;
  if (cache_limit_ == 0) {
    destroy_locked(a);
    return;
  }
  cache_[cache_key(a->capacity, a->small_mapped)].push_back(a);
  lru_.push_back(a);
  cached_ += a->capacity;
  if (cached_ > cache_limit_) {
    evict_locked(cache_limit_);
  }
}

void VulkanAllocator::evict_locked(size_t target) {
  while (cached_ > target && !lru_.empty()) {
    Allocation* a = lru_.front();
    lru_.erase(a);
    cache_[cache_key(a->capacity, a->small_mapped)].erase(a);
    cached_ -= a->capacity;
    destroy_locked(a);
  }
}

void VulkanAllocator::destroy_locked(Allocation* a) {
  if (a->shadow) {
    staging_->free(a->shadow->block, a->shadow->offset, a->shadow->capacity);
    delete a->shadow;
  }
  pool_of(a).free(a->block, a->offset, a->capacity);
  delete a;
}

void VulkanAllocator::collect() {
  std::lock_guard lk(mtx_);
  if (deferred_.empty()) {
    return;
  }
  uint64_t done = completed_watermark();
  auto keep = deferred_.begin();
  for (auto* a : deferred_) {
    if (a->last_use <= done) {
      release_locked(a);
    } else {
      *keep++ = a;
    }
  }
  deferred_.erase(keep, deferred_.end());
}

void VulkanAllocator::ensure_shadow_locked(Allocation* a) {
  if (!a->shadow) {
    auto [b, off] = staging_->alloc(a->capacity);
    auto* s = new Allocation();
    s->block = b;
    s->buffer = b->buffer;
    s->offset = off;
    s->size = a->size;
    s->capacity = a->capacity;
    s->mapped = b->mapped + off;
    a->shadow = s;
  }
}

Allocation* VulkanAllocator::download_target_locked(Allocation* a, uint64_t serial) {
  if (mapped_ || (a->mapped && !a->small_mapped) || a->size == 0 || a->size > kPrefetchBytes ||
      a->write_serial.load() != serial) {
    return nullptr;
  }
  ensure_shadow_locked(a);
  a->download_serial = serial;
  return a->shadow;
}

void* VulkanAllocator::host_ptr(Allocation* a) {
  // A small mapped buffer is read by the host through its shadow too: CPU reads of BAR
  // memory are uncached, and CPU kernels read a broadcast scalar once per element.
  if (a->mapped && !a->small_mapped) {
    return a->mapped;
  }
  bool need_download = false;
  {
    std::lock_guard lk(mtx_);
    ensure_shadow_locked(a);
    // A download recorded after the last write, in a batch that has completed, already
    // brought the bytes (gpu::prefetch_for_host).
    bool prefetched = a->download_serial != 0 && a->download_serial >= a->write_serial.load() &&
                      serial_completed(a->download_serial);
    need_download = a->device_newer && !prefetched;
  }
  if (need_download) {
    download(a);
  }
  std::lock_guard lk(mtx_);
  a->device_newer = false;
  // The caller may write through the pointer; the next GPU use uploads first.
  a->host_dirty = true;
  return a->shadow->mapped;
}

void VulkanAllocator::download(Allocation* a) {
  // Work that writes `a` may still be recorded and unsubmitted: submit it first, so the
  // copy (which starts with a full barrier) lands after it on the queue.
  commit_all_streams();
  // Whole capacity: the debug guard region lives past `size`.
  VkBufferCopy region{a->offset, a->shadow->offset, a->capacity};
  if (region.size == 0) {
    return;
  }
  one_off_downloads_++;
  run_one_off(
      [&](VkCommandBuffer cb) { vkCmdCopyBuffer(cb, a->buffer, a->shadow->buffer, 1, &region); });
}

bool VulkanAllocator::prepare_gpu_use_locked(Allocation* a, uint64_t serial, bool write,
                                             Upload& upload) {
  const uint64_t previous_use = a->last_use;
  a->last_use = std::max(a->last_use, serial);
  bool need = false;
  bool pending_elsewhere =
      a->upload_serial && a->upload_serial != serial && !serial_submitted(a->upload_serial);
  // A small mapped buffer that no recorded batch still reads (every serial up to its last
  // use has completed: another stream's earlier batch may read it too) takes the host's bytes now:
  // the submission makes host writes visible, so no copy command (and no prologue command
  // buffer) is needed.
  if (a->small_mapped && a->shadow && a->host_dirty && !pending_elsewhere &&
      previous_use != serial && (previous_use == 0 || completed_watermark() >= previous_use)) {
    std::memcpy(a->mapped, a->shadow->mapped, a->capacity);
    a->host_dirty = false;
  }
  if (a->shadow && a->size > 0 && (a->host_dirty || pending_elsewhere)) {
    upload.src = a->shadow->buffer;
    upload.dst = a->buffer;
    upload.region = VkBufferCopy{a->shadow->offset, a->offset, a->capacity};
    a->host_dirty = false;
    a->upload_serial = serial;
    need = true;
  }
  if (write) {
    a->write_serial.store(std::max(a->write_serial.load(), serial));
    a->download_serial = 0;  // a write after a recorded download makes it stale
  }
  if (write && !mapped_) {
    a->device_newer = true;
  }
  return need;
}

void VulkanAllocator::set_poison(bool enabled) {
  std::lock_guard lk(mtx_);
  poison_ = enabled;
}

bool VulkanAllocator::poison_enabled() {
  std::lock_guard lk(mtx_);
  return poison_;
}

size_t VulkanAllocator::check_guards() {
  synchronize_all_streams();
  std::vector<Allocation*> live;
  {
    std::lock_guard lk(mtx_);
    live.assign(poisoned_.begin(), poisoned_.end());
  }
  size_t bad = 0;
  for (auto* a : live) {
    auto* p = static_cast<const uint8_t*>(host_ptr(a));
    for (size_t i = a->size; i < a->capacity; ++i) {
      if (p[i] != kGuardByte) {
        ++bad;
        break;
      }
    }
  }
  return bad;
}

size_t VulkanAllocator::active_memory() {
  std::lock_guard lk(mtx_);
  return active_;
}
size_t VulkanAllocator::peak_memory() {
  std::lock_guard lk(mtx_);
  return peak_;
}
void VulkanAllocator::reset_peak() {
  std::lock_guard lk(mtx_);
  peak_ = active_;
}
size_t VulkanAllocator::cache_memory() {
  std::lock_guard lk(mtx_);
  return cached_;
}
size_t VulkanAllocator::set_memory_limit(size_t limit) {
  std::lock_guard lk(mtx_);
  return std::exchange(memory_limit_, limit);
}
size_t VulkanAllocator::set_cache_limit(size_t limit) {
  std::lock_guard lk(mtx_);
  size_t old = std::exchange(cache_limit_, limit);
  evict_locked(cache_limit_);
  return old;
}
void VulkanAllocator::clear_cache() {
  collect();
  std::lock_guard lk(mtx_);
  evict_locked(0);
  pool_->trim();
  if (staging_) {
    staging_->trim();
  }
  if (small_) {
    small_->trim();
  }
}
size_t VulkanAllocator::block_count() {
  std::lock_guard lk(mtx_);
  return pool_->block_count() + (small_ ? small_->block_count() : 0);
}
size_t VulkanAllocator::vk_allocation_count() {
  std::lock_guard lk(mtx_);
  return pool_->vk_allocations() + (small_ ? small_->vk_allocations() : 0);
}

namespace {

struct AllocatorHolder {
  std::mutex mtx;
  // Read without the lock once set (every malloc, free and dispatch asks for it); written
  // under the lock at creation and teardown.
  std::atomic<VulkanAllocator*> alloc{nullptr};
  bool torn_down = false;
};

AllocatorHolder& holder() {
  static AllocatorHolder* h = new AllocatorHolder();  // outlives late frees at exit
  return *h;
}

allocator::CpuAllocator& cpu_allocator() {
  static allocator::CpuAllocator* a = new allocator::CpuAllocator();
  return *a;
}

// Decided once: with a device every buffer is an Allocation, without one a host block.
bool gpu_mode() {
  static const bool gpu = device_or_null() != nullptr;
  return gpu;
}

}  // namespace

VulkanAllocator* vulkan_allocator() {
  auto& h = holder();
  if (auto* a = h.alloc.load(std::memory_order_acquire)) {
    return a;
  }
  std::lock_guard lk(h.mtx);
  if (h.alloc || h.torn_down) {
    return h.alloc;
  }
  auto* d = device_or_null();
  if (!d) {
    return nullptr;
  }
  h.alloc = new VulkanAllocator(*d);
  d->on_teardown([] {
    auto& hh = holder();
    VulkanAllocator* a;
    {
      std::lock_guard lk(hh.mtx);
      a = hh.alloc;
      hh.alloc = nullptr;
      hh.torn_down = true;
    }
    delete a;
  });
  return h.alloc;
}

}  // namespace mlx::core::vulkan

namespace mlx::core {

namespace allocator {

namespace {
// What allocator() hands out after teardown at exit: frees are no-ops.
class GoneAllocator : public Allocator {
 public:
  Buffer malloc(size_t) override {
    throw std::runtime_error("[malloc] the Vulkan device has been destroyed (process exit).");
  }
  void free(Buffer) override {}
  size_t size(Buffer) const override {
    return 0;
  }
};
}  // namespace

void* Buffer::raw_ptr() {
  if (!handle_ || !vulkan::gpu_mode()) {
    return handle_;
  }
  auto* a = vulkan::vulkan_allocator();
  if (!a) {
    throw std::runtime_error("[raw_ptr] the Vulkan device has been destroyed (process exit).");
  }
  return a->host_ptr(static_cast<vulkan::Allocation*>(handle_));
}

Allocator& allocator() {
  if (!vulkan::gpu_mode()) {
    return vulkan::cpu_allocator();
  }
  if (auto* a = vulkan::vulkan_allocator()) {
    return *a;
  }
  static GoneAllocator* gone = new GoneAllocator();
  return *gone;
}

Buffer malloc(size_t size) {
  return allocator().malloc(size);
}

Buffer malloc_host_written(size_t size) {
  return allocator().malloc_host_written(size);
}

void free(Buffer buffer) {
  allocator().free(buffer);
}

}  // namespace allocator

namespace {
template <typename F, typename G>
auto with_allocator(F&& gpu, G&& cpu) {
  if (vulkan::gpu_mode()) {
    if (auto* a = vulkan::vulkan_allocator()) {
      return gpu(*a);
    }
    return decltype(gpu(*vulkan::vulkan_allocator()))(0);
  }
  return cpu(vulkan::cpu_allocator());
}
}  // namespace

size_t get_active_memory() {
  return with_allocator([](auto& a) { return a.active_memory(); },
                        [](auto& c) { return c.active_memory(); });
}
size_t get_peak_memory() {
  return with_allocator([](auto& a) { return a.peak_memory(); },
                        [](auto& c) { return c.peak_memory(); });
}
void reset_peak_memory() {
  with_allocator([](auto& a) { return (a.reset_peak(), 0); },
                 [](auto& c) { return (c.reset_peak(), 0); });
}
size_t get_cache_memory() {
  return with_allocator([](auto& a) { return a.cache_memory(); }, [](auto&) { return size_t(0); });
}
size_t set_memory_limit(size_t limit) {
  return with_allocator([&](auto& a) { return a.set_memory_limit(limit); },
                        [&](auto& c) { return c.set_memory_limit(limit); });
}
size_t get_memory_limit() {
  return with_allocator([](auto& a) { return a.memory_limit(); },
                        [](auto& c) { return c.memory_limit(); });
}
size_t set_wired_limit(size_t limit) {
  static std::atomic<size_t> wired{0};
  return wired.exchange(limit);
}
size_t set_cache_limit(size_t limit) {
  return with_allocator([&](auto& a) { return a.set_cache_limit(limit); },
                        [](auto&) { return size_t(0); });
}
void clear_cache() {
  with_allocator([](auto& a) { return (a.clear_cache(), 0); }, [](auto&) { return 0; });
}

}  // namespace mlx::core
