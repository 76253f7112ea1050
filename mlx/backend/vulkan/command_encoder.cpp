#include "mlx/backend/vulkan/command_encoder.h"

#include <array>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "mlx/backend/vulkan/fence_wait.h"
#include "mlx/backend/vulkan/host_profile.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/profile.h"
#include "mlx/backend/vulkan/serials.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

std::atomic<size_t> g_submissions{0};
std::atomic<size_t> g_barriers{0};
std::atomic<size_t> g_dispatches{0};
std::atomic<size_t> g_deferred{0};

// Timed dispatches per timestamp pool (two queries each); a batch takes more pools when
// it has more dispatches.
constexpr uint32_t kTimedPerPool = 128;

constexpr VkPipelineStageFlags kWorkStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWorkWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kWorkAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                      VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

// Orders everything before it on the queue (earlier submissions included) before
// everything after it.
void full_barrier(VkCommandBuffer cb) {
  auto mb = make_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
}

// Makes device writes visible to host reads after the fence.
void host_barrier(VkCommandBuffer cb) {
  auto mb = make_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = kWorkWrites;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, kWorkStages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                       nullptr);
}

}  // namespace

namespace {

// Keeps `data` alive in `list` until the batch finishes, counted in the Data's holds
// (array::is_donatable_in_stream): the reference first, then the hold.
void hold(std::vector<std::shared_ptr<array::Data>>& list, std::shared_ptr<array::Data> data,
          int stream) {
  array::Data& d = *data;
  list.push_back(std::move(data));
  int32_t none = -1;
  if (!d.hold_stream.compare_exchange_strong(none, stream) && none != stream) {
    d.hold_stream.store(-2);  // held by several streams: never donated while held
  }
  d.batch_holds.fetch_add(1);
}

// Drops what `list` holds: each hold first, then the reference.
void release(std::vector<std::shared_ptr<array::Data>>& list) {
  for (auto& d : list) {
    d->batch_holds.fetch_sub(1);
  }
  list.clear();
}

// Allocates `cb` from `pool` if it has none, then begins it for one submission (which
// resets it: every pool here has the reset flag) with a full barrier, so it runs after
// everything submitted before it on the queue. For a batch's prologue that includes a
// reused buffer's last readers; the batch's own barrier then orders it after the prologue.
void begin_after_queue(VkDevice d, VkCommandPool pool, VkCommandBuffer& cb) {
  if (cb == VK_NULL_HANDLE) {
    auto ai =
        make_info<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(d, &ai, &cb), "vkAllocateCommandBuffers");
  }
  auto bi = make_info<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  full_barrier(cb);
}

// MLX_VK_PROLOGUE=0 records every upload inline, for measuring (CommandEncoder::Batch).
bool prologue_enabled() {
  static const bool on = env_flag("MLX_VK_PROLOGUE", true);
  return on;
}

// BatchLimits::busy_bytes: MLX_VK_BUSY_MB_PER_BUFFER MiB, else a sixteenth of the arrays'
// heap within [64 MiB, 4 GiB] (a batch holds its ops' inputs until it completes, so the
// bound follows the device's memory).
size_t busy_bytes_limit(Device& d) {
  if (size_t mb = env_size("MLX_VK_BUSY_MB_PER_BUFFER", 0); mb != 0) {
    return mb << 20;
  }
  const auto& mem = d.memory_properties();
  size_t heap = mem.memoryHeaps[mem.memoryTypes[d.array_memory_type()].heapIndex].size;
  return std::clamp<size_t>(heap / 16, size_t{64} << 20, size_t{4} << 30);
}

}  // namespace

CommandEncoder::CommandEncoder(Device& d, int stream_index)
    : dev_(d),
      index_(stream_index),
      limits_{std::max<size_t>(1, env_size("MLX_VK_MAX_OPS_PER_BUFFER", 50)),
              std::max<size_t>(1, env_size("MLX_VK_MAX_MB_PER_BUFFER", 64)) << 20, 0, 0},
      max_in_flight_(std::max<size_t>(1, env_size("MLX_VK_MAX_INFLIGHT", 16))) {
  limits_.busy_bytes = std::max(limits_.bytes, busy_bytes_limit(d));
  limits_.busy_ops = std::max(limits_.ops, env_size("MLX_VK_BUSY_OPS_PER_BUFFER", 256));
  auto ci = make_info<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = d.queue_family();
  check(vkCreateCommandPool(d.handle(), &ci, nullptr, &pool_), "vkCreateCommandPool");
}

CommandEncoder::~CommandEncoder() {
  try {
    synchronize();
  } catch (...) {
    // At teardown a failed submission has nobody left to report to.
  }
  VkDevice d = dev_.handle();
  if (open_) {
    // Recorded but never submitted (synchronize failed): drop it.
    end_serial(open_->serial);
    release(open_->retained);
    for (auto p : open_->pools) {
      spare_pools_.push_back(p);
    }
    open_->pools.clear();
    for (auto q : open_->query_pools) {
      spare_query_pools_.push_back(q);
    }
    open_->query_pools.clear();
    open_->deferred.clear();
    open_->pending.clear();
    spare_.push_back(std::move(open_));
  }
  for (auto& b : spare_) {
    vkDestroyFence(d, b->fence, nullptr);
  }
  for (auto p : spare_pools_) {
    vkDestroyDescriptorPool(d, p, nullptr);
  }
  for (auto q : spare_query_pools_) {
    vkDestroyQueryPool(d, q, nullptr);
  }
  vkDestroyCommandPool(d, pool_, nullptr);  // frees its command buffers
}

CommandEncoder::Batch& CommandEncoder::open_locked() {
  if (open_) {
    return *open_;
  }
  std::unique_ptr<Batch> b;
  if (!spare_.empty()) {
    b = std::move(spare_.back());
    spare_.pop_back();
  } else {
    b = std::make_unique<Batch>();
    auto fi = make_info<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check(vkCreateFence(dev_.handle(), &fi, nullptr, &b->fence), "vkCreateFence");
  }
  {
    HostTimer open_timer("(batch open: begin command buffer)");
    begin_after_queue(dev_.handle(), pool_, b->cb);
  }
  b->bound = nullptr;
  b->profiled = profiling_active(dev_);
  b->batch_timed = !b->profiled && batch_profiling_active(dev_);
  if (b->profiled || b->batch_timed) {
    add_query_pool_locked(*b);
  }
  if (b->batch_timed) {
    b->timed.push_back("(batch)");
    record_locked(*b, [q = b->query_pools.back()](VkCommandBuffer cb) {
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, q, 0);
    });
  }
  b->serial = begin_serial();
  read_.clear();
  written_.clear();
  ops_ = 0;
  bytes_ = 0;
  open_ = std::move(b);
  return *open_;
}

void CommandEncoder::add_query_pool_locked(Batch& b) {
  VkQueryPool q;
  if (!spare_query_pools_.empty()) {
    q = spare_query_pools_.back();
    spare_query_pools_.pop_back();
  } else {
    auto ci = make_info<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = 2 * kTimedPerPool;
    check(vkCreateQueryPool(dev_.handle(), &ci, nullptr, &q), "vkCreateQueryPool");
  }
  b.query_pools.push_back(q);
  // Queries must be reset before they are written; a pool is reset where the batch takes
  // it (the first at the start of the command buffer), before its first timestamp.
  record_locked(b, [q](VkCommandBuffer cb) { vkCmdResetQueryPool(cb, q, 0, 2 * kTimedPerPool); });
}

uint32_t CommandEncoder::start_timing_locked(Batch& b, const Kernel& k) {
  auto slot = static_cast<uint32_t>(b.timed.size() % kTimedPerPool);
  if (slot == 0 && !b.timed.empty()) {
    add_query_pool_locked(b);
  }
  b.timed.push_back(k.key.canonical());
  record_locked(b, [q = b.query_pools.back(), slot](VkCommandBuffer cb) {
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, q, 2 * slot);
  });
  return 2 * slot + 1;
}

void CommandEncoder::read_times(Batch& b) {
  std::array<uint64_t, 2 * kTimedPerPool> ticks;
  for (size_t p = 0; p < b.query_pools.size(); ++p) {
    size_t first = p * kTimedPerPool;
    if (first >= b.timed.size()) {
      break;
    }
    auto n = static_cast<uint32_t>(std::min<size_t>(kTimedPerPool, b.timed.size() - first));
    // The fence has signalled, so every query is available: no wait flag. A failure loses
    // these times only; profiling must not fail the batch's release.
    if (vkGetQueryPoolResults(dev_.handle(), b.query_pools[p], 0, 2 * n, 2 * n * sizeof(uint64_t),
                              ticks.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
      continue;
    }
    for (uint32_t i = 0; i < n; ++i) {
      add_kernel_ticks(b.timed[first + i], ticks[2 * i], ticks[2 * i + 1]);
    }
  }
}

void CommandEncoder::barrier_locked(Batch& b) {
  record_locked(b, [](VkCommandBuffer cb) {
    auto mb = make_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = kWorkWrites;
    mb.dstAccessMask = kWorkAccess;
    vkCmdPipelineBarrier(cb, kWorkStages, kWorkStages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  });
  read_.clear();
  written_.clear();
  g_barriers++;
}

void CommandEncoder::prepare_locked(Batch& b, const Binding* bindings, size_t n) {
  auto* alloc = vulkan_allocator();
  if (!alloc) {
    throw std::runtime_error("[vulkan] the device has been destroyed (process exit).");
  }
  // Staged path: newer host copies go up first (transfer writes the device buffers). One
  // into a buffer this batch has not used goes into the prologue: inline, its barrier would
  // also wait for the dispatches before it (a scalar operand per op: 256 MiB multiplies on
  // an H100 took ~14 us more each than without one).
  bool uploaded = false;
  auto alloc_lock = alloc->lock();  // once for all the command's buffers
  for (size_t i = 0; i < n; ++i) {
    Upload up;
    bool fresh = bindings[i].alloc->last_use < b.serial && prologue_enabled();
    if (alloc->prepare_gpu_use_locked(bindings[i].alloc, b.serial, bindings[i].write, up)) {
      if (fresh) {
        vkCmdCopyBuffer(prologue_locked(b), up.src, up.dst, 1, &up.region);
        continue;
      }
      if (!uploaded &&
          (written_.contains(bindings[i].alloc) || read_.contains(bindings[i].alloc))) {
        barrier_locked(b);
      }
      record_locked(
          b, [up](VkCommandBuffer cb) { vkCmdCopyBuffer(cb, up.src, up.dst, 1, &up.region); });
      written_.insert(bindings[i].alloc);
      uploaded = true;
    }
  }
  alloc_lock.unlock();
  bool hazard = false;
  for (size_t i = 0; i < n && !hazard; ++i) {
    auto* a = bindings[i].alloc;
    hazard = written_.contains(a) || (bindings[i].write && read_.contains(a));
  }
  if (hazard) {
    barrier_locked(b);
  }
  for (size_t i = 0; i < n; ++i) {
    auto* a = bindings[i].alloc;
    if (bindings[i].write) {
      written_.insert(a);
      a->writer_stream = index_;
    } else {
      read_.insert(a);
    }
  }
}

VkCommandBuffer CommandEncoder::prologue_locked(Batch& b) {
  if (!b.pre_open) {
    begin_after_queue(dev_.handle(), pool_, b.pre);
    b.pre_open = true;
  }
  return b.pre;
}

VkDescriptorSet CommandEncoder::allocate_set_locked(Batch& b, VkDescriptorSetLayout layout) {
  VkDevice d = dev_.handle();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!b.pools.empty()) {
      auto ai =
          make_info<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
      ai.descriptorPool = b.pools.back();
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &layout;
      VkDescriptorSet set;
      VkResult r = vkAllocateDescriptorSets(d, &ai, &set);
      if (r == VK_SUCCESS) {
        return set;
      }
      if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) {
        check(r, "vkAllocateDescriptorSets");
      }
    }
    // The current pool is full (or there is none): take a spare or make one.
    if (!spare_pools_.empty()) {
      b.pools.push_back(spare_pools_.back());
      spare_pools_.pop_back();
    } else {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1024};
      auto ci =
          make_info<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      ci.maxSets = 128;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkDescriptorPool p;
      check(vkCreateDescriptorPool(d, &ci, nullptr, &p), "vkCreateDescriptorPool");
      b.pools.push_back(p);
    }
  }
  throw std::runtime_error("[vulkan] could not allocate a descriptor set.");
}

namespace {
std::atomic<uint64_t> dispatches{0};
}  // namespace

uint64_t dispatch_count() {
  return dispatches.load(std::memory_order_relaxed);
}

void CommandEncoder::dispatch(const Kernel& k, std::span<const Binding> bindings,
                              std::span<const uint8_t> push, std::array<uint32_t, 3> groups) {
  HostTimer timer("(encoder dispatch)");
  dispatches.fetch_add(1, std::memory_order_relaxed);
  if (bindings.size() != k.num_buffers) {
    throw std::runtime_error("[vulkan] kernel " + k.key.canonical() + " takes " +
                             std::to_string(k.num_buffers) + " buffers, " +
                             std::to_string(bindings.size()) + " were bound.");
  }
  if (push.size() != k.push_constant_bytes) {
    throw std::runtime_error("[vulkan] kernel " + k.key.canonical() + " takes " +
                             std::to_string(k.push_constant_bytes) +
                             " bytes of push constants, got " + std::to_string(push.size()) + ".");
  }
  const auto& lim = dev_.limits().maxComputeWorkGroupCount;
  for (int i = 0; i < 3; ++i) {
    if (groups[i] > lim[i]) {
      throw std::runtime_error("[vulkan] kernel " + k.key.canonical() + " asks for " +
                               std::to_string(groups[i]) + " workgroups in dimension " +
                               std::to_string(i) + "; the device allows " + std::to_string(lim[i]) +
                               ".");
    }
  }
  if (push.size() > kMaxPushBytes) {
    throw std::runtime_error("[vulkan] kernel " + k.key.canonical() + " pushes more than " +
                             std::to_string(kMaxPushBytes) + " bytes of constants.");
  }
  // Kernels bind at most a handful of buffers: stack arrays keep the hot path allocation-free.
  if (bindings.size() > kMaxBindings) {
    throw std::runtime_error("[vulkan] a dispatch binds more than 16 buffers.");
  }
  // A creation that already failed throws here, at the op; one still running is waited
  // for at submission.
  const bool ready = k.pipeline_ready();
  if (ready) {
    k.wait_pipeline();
  }
  std::lock_guard lk(mtx_);
  auto& b = open_locked();
  op_recorded_ = true;
  if (!ready) {
    b.pending.push_back(&k);  // from here on the batch's commands wait (record_locked)
    g_deferred++;
  }
  prepare_locked(b, bindings.data(), bindings.size());
  // Everything the dispatch records, by value, so that it can also run at submission.
  struct Recording {
    const Kernel* k;
    bool bind, push_descriptors, timed;
    uint32_t nb, push_bytes, end_query;
    VkDescriptorSet set;
    VkQueryPool pool;
    std::array<uint32_t, 3> groups;
    std::array<VkDescriptorBufferInfo, kMaxBindings> infos;
    std::array<uint8_t, kMaxPushBytes> push;
  } r;
  r.k = &k;
  r.nb = static_cast<uint32_t>(bindings.size());
  for (size_t i = 0; i < r.nb; ++i) {
    r.infos[i] = {bindings[i].alloc->buffer, bindings[i].alloc->offset + bindings[i].offset,
                  bindings[i].range};
  }
  // A chain of one op (a decode step's layers) binds the same pipeline again and again.
  r.bind = b.bound != &k;
  b.bound = &k;
  r.push_descriptors = dev_.has_push_descriptors();
  r.set = VK_NULL_HANDLE;
  if (!r.push_descriptors) {
    r.set = allocate_set_locked(b, k.set_layout);
    std::array<VkWriteDescriptorSet, kMaxBindings> writes;
    for (uint32_t i = 0; i < r.nb; ++i) {
      writes[i] = make_info<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      writes[i].dstSet = r.set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &r.infos[i];
    }
    vkUpdateDescriptorSets(dev_.handle(), r.nb, writes.data(), 0, nullptr);
  }
  r.push_bytes = static_cast<uint32_t>(push.size());
  if (!push.empty()) {
    std::memcpy(r.push.data(), push.data(), push.size());
  }
  r.groups = groups;
  r.timed = b.profiled;
  r.end_query = r.timed ? start_timing_locked(b, k) : 0;
  r.pool = r.timed ? b.query_pools.back() : VK_NULL_HANDLE;
  auto push_fn = r.push_descriptors ? dev_.push_descriptor_fn() : nullptr;
  auto emit = [push_fn](VkCommandBuffer cb, const Recording& r) {
    const Kernel& k = *r.k;
    if (k.pipeline == VK_NULL_HANDLE) {  // its creation failed (replay_locked)
      if (r.timed) {
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r.pool, r.end_query);
      }
      return;
    }
    if (r.bind) {
      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    }
    if (r.push_descriptors) {
      std::array<VkWriteDescriptorSet, kMaxBindings> writes;
      for (uint32_t i = 0; i < r.nb; ++i) {
        writes[i] = make_info<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &r.infos[i];
      }
      push_fn(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, r.nb, writes.data());
    } else {
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, 1, &r.set, 0,
                              nullptr);
    }
    if (r.push_bytes > 0) {
      vkCmdPushConstants(cb, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r.push_bytes, r.push.data());
    }
    vkCmdDispatch(cb, r.groups[0], r.groups[1], r.groups[2]);
    if (r.timed) {
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r.pool, r.end_query);
    }
  };
  // record_locked, without copying the recording on the usual (direct) path.
  if (b.pending.empty()) {
    emit(b.cb, r);
  } else {
    b.deferred.emplace_back([emit, r](VkCommandBuffer cb) { emit(cb, r); });
  }
  g_dispatches++;
}

void CommandEncoder::fill(const Binding& dst, uint32_t value) {
  std::lock_guard lk(mtx_);
  auto& b = open_locked();
  op_recorded_ = true;
  Binding w = dst;
  w.write = true;
  prepare_locked(b, &w, 1);
  record_locked(b, [buf = dst.alloc->buffer, at = dst.alloc->offset + dst.offset, range = dst.range,
                    value](VkCommandBuffer cb) { vkCmdFillBuffer(cb, buf, at, range, value); });
}

void CommandEncoder::copy(const Binding& src, const Binding& dst) {
  std::lock_guard lk(mtx_);
  auto& b = open_locked();
  op_recorded_ = true;
  Binding bs[2] = {src, dst};
  bs[0].write = false;
  bs[1].write = true;
  prepare_locked(b, bs, 2);
  VkBufferCopy region{src.alloc->offset + src.offset, dst.alloc->offset + dst.offset, src.range};
  record_locked(b, [from = src.alloc->buffer, to = dst.alloc->buffer, region](VkCommandBuffer cb) {
    vkCmdCopyBuffer(cb, from, to, 1, &region);
  });
}

void CommandEncoder::download_to_host(Allocation* a) {
  std::lock_guard lk(mtx_);
  auto* alloc = vulkan_allocator();
  if (!open_ || !alloc) {
    return;  // the writing batch was submitted already
  }
  auto& b = *open_;
  Allocation* shadow;
  {
    auto alloc_lock = alloc->lock();
    shadow = alloc->download_target_locked(a, b.serial);
  }
  if (!shadow) {
    return;
  }
  Binding src{a, 0, a->capacity, false};
  prepare_locked(b, &src, 1);  // a barrier after the write (this batch wrote `a`)
  VkBufferCopy region{a->offset, shadow->offset, a->capacity};  // the guard bytes too
  record_locked(b, [from = a->buffer, to = shadow->buffer, region](VkCommandBuffer cb) {
    vkCmdCopyBuffer(cb, from, to, 1, &region);
    // The fence makes the batch's writes available, but host reads need them visible.
    auto mb = make_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                         0, nullptr, 0, nullptr);
  });
}

void CommandEncoder::write(const Binding& dst, const void* data, size_t bytes) {
  std::lock_guard lk(mtx_);
  if (dst.alloc->mapped) {
    // Host writes before the submission are visible to it; the buffer must be one the
    // GPU is not using (a fresh temporary).
    std::memcpy(dst.alloc->mapped + dst.offset, data, bytes);
    auto& b = open_locked();
    Binding w = dst;
    w.write = false;
    prepare_locked(b, &w, 1);  // stamp its serial; it is only read from here on
    return;
  }
  auto& b = open_locked();
  op_recorded_ = true;
  Binding w = dst;
  w.write = true;
  // A buffer the batch has not used (a launch's fresh meta buffer) is written in the
  // prologue, so the dispatch that reads it needs no barrier of its own (prepare_locked).
  VkCommandBuffer pre = VK_NULL_HANDLE;
  if (dst.alloc->last_use < b.serial && prologue_enabled()) {
    Upload up;  // a reused buffer's newer host copy goes up first, as prepare_locked does
    auto* alloc = vulkan_allocator();
    auto alloc_lock = alloc->lock();
    bool upload = alloc->prepare_gpu_use_locked(dst.alloc, b.serial, true, up);
    pre = prologue_locked(b);
    if (upload) {
      vkCmdCopyBuffer(pre, up.src, up.dst, 1, &up.region);
      full_barrier(pre);
    }
  } else {
    prepare_locked(b, &w, 1);
  }
  // vkCmdUpdateBuffer takes at most 65536 bytes, in multiples of 4.
  const auto* p = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < bytes) {
    size_t n = std::min<size_t>(bytes - done, 65536);
    size_t padded = (n + 3) / 4 * 4;
    VkDeviceSize at = dst.alloc->offset + dst.offset + done;
    std::vector<uint8_t> chunk(padded, 0);
    std::memcpy(chunk.data(), p + done, n);
    if (pre != VK_NULL_HANDLE) {
      vkCmdUpdateBuffer(pre, dst.alloc->buffer, at, padded, chunk.data());  // copies the bytes
    } else {
      record_locked(b, [buf = dst.alloc->buffer, at, chunk = std::move(chunk)](VkCommandBuffer cb) {
        vkCmdUpdateBuffer(cb, buf, at, chunk.size(), chunk.data());
      });
    }
    done += n;
  }
}

void CommandEncoder::retain(std::shared_ptr<array::Data> data) {
  std::lock_guard lk(mtx_);
  hold(open_locked().retained, std::move(data), index_);
}

void CommandEncoder::add_temporary(allocator::Buffer buffer) {
  std::lock_guard lk(mtx_);
  open_locked().temporaries.push_back(buffer);
}

void CommandEncoder::end_op(const std::vector<array>& inputs, const std::vector<array>& outputs) {
  std::lock_guard lk(mtx_);
  if (!open_) {
    return;  // a batch that recorded nothing has nothing to protect
  }
  for (const auto& in : inputs) {
    if (!in.has_data()) {
      continue;
    }
    // Same Data object: the output took over the input's buffer.
    bool donated = std::any_of(outputs.begin(), outputs.end(), [&](const array& o) {
      return o.has_data() && &o.buffer() == &in.buffer();
    });
    if (!donated) {
      hold(open_->retained, in.data_shared_ptr(), index_);
    }
  }
  if (!op_recorded_) {
    return;
  }
  op_recorded_ = false;
  for (const auto& o : outputs) {
    bytes_ += o.nbytes();
  }
  ops_++;
  switch (batch_action(ops_, bytes_, limits_)) {
    case BatchAction::keep:
      break;
    case BatchAction::commit:
      commit_locked();
      break;
    case BatchAction::commit_if_idle:
      poll_locked(false);
      if (in_flight_.empty()) {
        commit_locked();
      }
      break;
  }
}

BatchAction batch_action(size_t ops, size_t bytes, const BatchLimits& limits) {
  if (ops >= limits.busy_ops || bytes >= limits.busy_bytes) {
    return BatchAction::commit;
  }
  return ops >= limits.ops || bytes >= limits.bytes ? BatchAction::commit_if_idle
                                                    : BatchAction::keep;
}

bool CommandEncoder::has_open_work() {
  std::lock_guard lk(mtx_);
  return open_ != nullptr;
}

void CommandEncoder::commit() {
  std::lock_guard lk(mtx_);
  commit_locked();
}

void CommandEncoder::commit_locked() {
  HostTimer timer("(commit)");
  if (!open_) {
    poll_locked(false);
    return;
  }
  auto b = std::move(open_);
  // A pipeline that failed in creation: the batch still runs without its dispatches (its
  // uploads and the other ops' work keep the buffers' state true), then this throws.
  std::exception_ptr failed = replay_locked(*b);
  try {
    HostTimer submit_timer("(commit: end and submit)");
    if (b->batch_timed) {
      vkCmdWriteTimestamp(b->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->query_pools.back(), 1);
    }
    host_barrier(b->cb);
    check(vkEndCommandBuffer(b->cb), "vkEndCommandBuffer");
    bool pre = std::exchange(b->pre_open, false);
    if (pre) {
      check(vkEndCommandBuffer(b->pre), "vkEndCommandBuffer");
    }
    check(vkResetFences(dev_.handle(), 1, &b->fence), "vkResetFences");
    // The prologue first: submission order, which the batch's first barrier waits on.
    std::array<VkCommandBuffer, 2> cbs{b->pre, b->cb};
    auto si = make_info<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = pre ? 2 : 1;
    si.pCommandBuffers = pre ? cbs.data() : &b->cb;
    std::lock_guard qlk(dev_.queue_mutex());
    check(vkQueueSubmit(dev_.queue(), 1, &si, b->fence), "vkQueueSubmit");
  } catch (...) {
    // Never submitted: release what it held so memory is not pinned forever.
    finish_batch(std::move(b));
    throw;
  }
  g_submissions++;
  submitted_serial(b->serial, dev_.handle(), b->fence);
  in_flight_.push_back(std::move(b));
  // Bounded run-ahead: a host that records faster than the device runs would otherwise
  // pile up batches and the memory they retain.
  if (in_flight_.size() > max_in_flight_) {
    wait_fence(dev_, in_flight_.front()->fence);
  }
  {
    HostTimer poll_timer("(commit: retire finished batches)");
    poll_locked(false);
  }
  if (failed) {
    std::rethrow_exception(failed);
  }
}

std::exception_ptr CommandEncoder::replay_locked(Batch& b) {
  std::exception_ptr failed;
  if (b.pending.empty()) {
    return failed;
  }
  for (const Kernel* k : b.pending) {
    try {
      k->wait_pipeline();
    } catch (...) {
      if (!failed) {
        failed = std::current_exception();
      }
    }
  }
  for (auto& f : b.deferred) {
    f(b.cb);
  }
  b.deferred.clear();
  b.pending.clear();
  return failed;
}

void CommandEncoder::finish_batch(std::unique_ptr<Batch> batch) {
  Batch& b = *batch;
  b.deferred.clear();
  b.pending.clear();
  b.pre_open = false;
  // The serial ends first so that frees triggered below go straight back to the cache.
  end_serial(b.serial);
  {
    HostTimer release_timer("(retire: release held arrays and temporaries)");
    release(b.retained);
    for (auto& t : b.temporaries) {
      allocator::free(t);
    }
    b.temporaries.clear();
  }
  for (auto p : b.pools) {
    vkResetDescriptorPool(dev_.handle(), p, 0);
    spare_pools_.push_back(p);
  }
  b.pools.clear();
  for (auto q : b.query_pools) {
    spare_query_pools_.push_back(q);
  }
  b.query_pools.clear();
  b.timed.clear();
  spare_.push_back(std::move(batch));
}

void CommandEncoder::poll_locked(bool wait_all) {
  VkDevice d = dev_.handle();
  bool any = false;
  while (!in_flight_.empty()) {
    VkFence fence = in_flight_.front()->fence;
    if (wait_all) {
      wait_fence(dev_, fence);
    } else {
      VkResult r = vkGetFenceStatus(d, fence);
      if (r == VK_NOT_READY) {
        break;
      }
      check(r, "vkGetFenceStatus");
    }
    auto done = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (done->profiled || done->batch_timed) {
      read_times(*done);
    }
    finish_batch(std::move(done));
    any = true;
  }
  if (any) {
    if (auto* a = vulkan_allocator()) {
      HostTimer collect_timer("(retire: allocator collect)");
      a->collect();
    }
  }
}

void CommandEncoder::poll() {
  // Nor for the lock: its holder (the eval thread, recording) retires them at its commit.
  std::unique_lock lk(mtx_, std::try_to_lock);
  if (lk.owns_lock()) {
    poll_locked(false);
  }
}

void CommandEncoder::synchronize() {
  std::lock_guard lk(mtx_);
  commit_locked();
  poll_locked(true);
}

void CommandEncoder::wait_for(uint64_t serial) {
  std::lock_guard lk(mtx_);
  if (open_ && open_->serial <= serial) {
    commit_locked();
  }
  while (!in_flight_.empty() && in_flight_.front()->serial <= serial) {
    wait_fence(dev_, in_flight_.front()->fence);
    poll_locked(false);  // retires the batch just waited for (and any other finished one)
  }
}

namespace {

// One command buffer and fence, reused by every one-off submission (host downloads).
struct OneOff {
  std::mutex mtx;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

OneOff& one_off_state(Device& d) {
  static OneOff* o = nullptr;
  static std::once_flag once;
  std::call_once(once, [&] {
    auto* s = new OneOff();
    VkDevice dev = d.handle();
    auto pci = make_info<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = d.queue_family();
    check(vkCreateCommandPool(dev, &pci, nullptr, &s->pool), "vkCreateCommandPool");
    auto ai =
        make_info<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = s->pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(dev, &ai, &s->cb), "vkAllocateCommandBuffers");
    auto fi = make_info<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check(vkCreateFence(dev, &fi, nullptr, &s->fence), "vkCreateFence");
    d.on_teardown([s, dev] {
      std::lock_guard lk(s->mtx);
      vkDestroyFence(dev, s->fence, nullptr);
      vkDestroyCommandPool(dev, s->pool, nullptr);
      s->fence = VK_NULL_HANDLE;
      s->pool = VK_NULL_HANDLE;
    });
    o = s;
  });
  return *o;
}

}  // namespace

void run_one_off(const std::function<void(VkCommandBuffer)>& record) {
  auto& d = device("vulkan");
  auto& o = one_off_state(d);
  std::lock_guard lk(o.mtx);
  if (!o.pool) {
    throw std::runtime_error("[vulkan] the device has been destroyed (process exit).");
  }
  VkDevice dev = d.handle();
  begin_after_queue(dev, o.pool, o.cb);
  record(o.cb);
  host_barrier(o.cb);
  check(vkEndCommandBuffer(o.cb), "vkEndCommandBuffer");
  check(vkResetFences(dev, 1, &o.fence), "vkResetFences");
  auto si = make_info<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &o.cb;
  {
    std::lock_guard qlk(d.queue_mutex());
    check(vkQueueSubmit(d.queue(), 1, &si, o.fence), "vkQueueSubmit");
  }
  g_submissions++;
  wait_fence(d, o.fence);
}

EncoderStats encoder_stats() {
  return {g_submissions.load(), g_barriers.load(), g_dispatches.load(), g_deferred.load()};
}

}  // namespace mlx::core::vulkan
