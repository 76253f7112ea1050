// The sub-allocating device-memory allocator: blocks, size-class cache, limits, statistics,
// and host access (mapped or staged).
#include "vk_test.h"

#include <cstring>
#include <vector>

#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/serials.h"
#include "mlx/backend/vulkan/utils.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
using namespace vk_test;

namespace {
// Returns the cache to the driver and the peak to the current level, so each test
// measures only what it does.
void settle() {
  mx::synchronize();
  mx::clear_cache();
  mx::reset_peak_memory();
}
}  // namespace

TEST_CASE("a thousand small arrays share a few device-memory blocks") {
  VK_REQUIRE_DEVICE();
  settle();
  auto* alloc = vk::vulkan_allocator();
  size_t vk_before = alloc->vk_allocation_count();
  std::vector<mx::allocator::Buffer> bufs;
  for (int i = 0; i < 1000; ++i) {
    bufs.push_back(mx::allocator::malloc(1000 + i));
  }
  // 1000 buffers of ~1-2 KiB fit in one 64 MiB block: at most one new vkAllocateMemory.
  CHECK(alloc->vk_allocation_count() - vk_before <= 1);
  // Every buffer is distinct and non-overlapping inside its block.
  std::vector<std::pair<VkDeviceSize, VkDeviceSize>> ranges;
  for (auto& b : bufs) {
    auto* a = vk::allocation(b);
    CHECK(a->offset % 256 == 0);
    CHECK(a->capacity >= a->size);
    if (a->block == vk::allocation(bufs[0])->block) {
      ranges.emplace_back(a->offset, a->offset + a->capacity);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    CHECK(ranges[i - 1].second <= ranges[i].first);
  }
  for (auto& b : bufs) {
    mx::allocator::free(b);
  }
}

TEST_CASE("freed buffers go to the size-class cache and are reused") {
  VK_REQUIRE_DEVICE();
  settle();
  auto* alloc = vk::vulkan_allocator();
  size_t active0 = mx::get_active_memory();
  auto b = mx::allocator::malloc(3000);
  size_t cap = vk::allocation(b)->capacity;
  CHECK(cap >= 3000);
  CHECK(cap <= 3000 * 5 / 4 + 256);  // size classes waste at most a quarter
  CHECK(mx::get_active_memory() == active0 + cap);
  CHECK(mx::get_peak_memory() >= active0 + cap);
  void* handle = b.ptr();
  mx::allocator::free(b);
  CHECK(mx::get_active_memory() == active0);
  CHECK(mx::get_cache_memory() >= cap);
  size_t vk_before = alloc->vk_allocation_count();
  // A request of the same size class takes the cached buffer back.
  auto c = mx::allocator::malloc(2900);
  CHECK(c.ptr() == handle);
  // As in MLX, the reported size is the block's capacity, not the request.
  CHECK(mx::allocator::allocator().size(c) == (vk::allocation(c)->guarded ? 2900 : cap));
  CHECK(alloc->vk_allocation_count() == vk_before);
  mx::allocator::free(c);
  mx::clear_cache();
  CHECK(mx::get_cache_memory() == 0);
}

TEST_CASE("cache limit 0 releases freed buffers at once") {
  VK_REQUIRE_DEVICE();
  settle();
  size_t old = mx::set_cache_limit(0);
  auto b = mx::allocator::malloc(10000);
  mx::allocator::free(b);
  CHECK(mx::get_cache_memory() == 0);
  CHECK(mx::set_cache_limit(old) == 0);
}

TEST_CASE("the memory limit makes an oversized allocation fail with a clear error") {
  VK_REQUIRE_DEVICE();
  settle();
  size_t old = mx::set_memory_limit(mx::get_active_memory() + (1 << 20));
  CHECK_THROWS_WITH_AS(mx::allocator::malloc(8 << 20), doctest::Contains("memory limit"),
                       std::runtime_error);
  auto ok = mx::allocator::malloc(1 << 16);  // still fine under the limit
  mx::allocator::free(ok);
  mx::set_memory_limit(old);
}

TEST_CASE("arrays larger than half a block get a dedicated allocation") {
  VK_REQUIRE_DEVICE();
  settle();
  auto* alloc = vk::vulkan_allocator();
  size_t blocks = alloc->block_count();
  auto big = mx::allocator::malloc(alloc->block_size() / 2 + 4096);
  CHECK(alloc->block_count() == blocks + 1);
  CHECK(vk::allocation(big)->offset == 0);
  mx::allocator::free(big);
  mx::clear_cache();
  CHECK(alloc->block_count() <= blocks);
}

TEST_CASE("host data round-trips through GPU memory for every byte pattern") {
  VK_REQUIRE_DEVICE();
  // Upload (host write), a GPU copy kernel, then readback (mapped or staged download).
  std::vector<uint8_t> bytes(4099);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  mx::array a(bytes.begin(), {static_cast<int>(bytes.size())}, mx::uint8);
  auto b = mx::copy(a, mx::Device::gpu);
  b.eval();
  REQUIRE(b.buffer().ptr() != a.buffer().ptr());
  CHECK(std::memcmp(b.data<uint8_t>(), bytes.data(), bytes.size()) == 0);
  // Host writes after a GPU read are uploaded before the next GPU read.
  a.data<uint8_t>()[5] = 200;
  auto c = mx::copy(a, mx::Device::gpu);
  CHECK(mlx_test::to_vector<uint8_t>(c)[5] == 200);
}

// Staged path (discrete GPUs; MLX_VK_STAGING=1 here): arrays made from host values in the
// smallest size class live mapped in the device's host-visible device memory, so a host
// scalar reaches a kernel with no upload; larger host arrays and every computed result
// (which the CPU may read back a lot) stay staged. The host reads them through a cached
// shadow, copied over at their first GPU use. A host write after a GPU read still reaches the
// next GPU read.
TEST_CASE("the staged path maps the smallest host-made arrays") {
  VK_REQUIRE_DEVICE();
  auto* alloc = vk::vulkan_allocator();
  REQUIRE(alloc != nullptr);
  const bool small_mapped =
      !vk::device().arrays_mapped() && vk::device().small_mapped_memory_type() >= 0;
  auto gpu = mx::Device::gpu;
  mx::array scalar(3.0f);
  mx::array few({1.0f, 2.0f, 3.0f, 4.0f});
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(i);
  }
  mx::array many(values.begin(), {1000}, mx::float32);
  auto* s_alloc = vk::allocation(scalar.buffer());
  CHECK(s_alloc->small_mapped == small_mapped);
  CHECK((s_alloc->mapped != nullptr) == (small_mapped || alloc->mapped()));
  // The host reads and writes a small mapped array through its (cached) shadow: CPU reads of
  // BAR memory are uncached. Its first GPU use copies the bytes over on the host.
  if (small_mapped) {
    CHECK(static_cast<void*>(scalar.data<float>()) != static_cast<void*>(s_alloc->mapped));
  }
  CHECK_FALSE(vk::allocation(many.buffer())->small_mapped);  // 4000 bytes
  auto y = mx::multiply(many, scalar, gpu);
  auto total = mx::sum(mx::multiply(few, scalar, gpu), gpu);
  mx::eval({y, total});
  CHECK_FALSE(vk::allocation(total.buffer())->small_mapped);  // a computed result
  CHECK(total.item<float>() == 30.0f);
  CHECK(mlx_test::to_vector<float>(y)[999] == 2997.0f);
  // A host write to the scalar after the GPU read it reaches the next GPU read.
  scalar.data<float>()[0] = 5.0f;
  CHECK(mx::sum(mx::multiply(few, scalar, gpu), gpu).item<float>() == 50.0f);
  // Freed and made again, a host scalar takes a mapped buffer again, a result a staged one.
  for (int i = 0; i < 3; ++i) {
    mx::array again(static_cast<float>(i));
    CHECK(vk::allocation(again.buffer())->small_mapped == small_mapped);
    auto r = mx::multiply(few, again, gpu);
    r.eval();
    CHECK_FALSE(vk::allocation(r.buffer())->small_mapped);
  }
}

TEST_CASE("a GPU fill and copy through the encoder land in host-visible memory") {
  VK_REQUIRE_DEVICE();
  auto s = mx::default_stream(mx::Device::gpu);
  auto& enc = vk::encoder(s.index);
  auto src = mx::allocator::malloc(4096);
  auto dst = mx::allocator::malloc(4096);
  enc.fill({vk::allocation(src), 0, 4096, true}, 0x01020304u);
  enc.copy({vk::allocation(src), 256, 1024, false}, {vk::allocation(dst), 512, 1024, true});
  enc.synchronize();
  auto* p = static_cast<uint32_t*>(src.raw_ptr());
  CHECK(p[0] == 0x01020304u);
  CHECK(p[1023] == 0x01020304u);
  auto* q = static_cast<uint32_t*>(dst.raw_ptr());
  CHECK(q[128] == 0x01020304u);  // byte 512
  CHECK(q[383] == 0x01020304u);  // last copied word
  mx::allocator::free(src);
  mx::allocator::free(dst);
}

TEST_CASE("poisoned buffers carry a guard region that detects out-of-bounds writes") {
  VK_REQUIRE_DEVICE();
  auto s = mx::default_stream(mx::Device::gpu);
  auto& enc = vk::encoder(s.index);
  mx::gpu::debug::PoisonScope poison;
  auto b = mx::allocator::malloc(1000);
  auto* bytes = static_cast<uint8_t*>(b.raw_ptr());
  CHECK(bytes[0] == vk::VulkanAllocator::kPoison);
  CHECK(bytes[999] == vk::VulkanAllocator::kPoison);
  CHECK(mx::gpu::debug::check_guards() == 0);
  // A GPU write one word past the end hits the guard.
  enc.fill({vk::allocation(b), 1000, 4, true}, 0);
  CHECK(mx::gpu::debug::check_guards() == 1);
  mx::allocator::free(b);
  CHECK(mx::gpu::debug::check_guards() == 0);
}

TEST_CASE("under MLX_VK_VALIDATION=1 a validation error makes synchronize throw") {
  VK_REQUIRE_DEVICE();
  if (!mx::vulkan::device().validation_enabled()) {
    MESSAGE("validation is off: skipped");
    return;
  }
  MESSAGE("the validation error printed next is expected (a misaligned vkCmdFillBuffer)");
  auto s = mx::default_stream(mx::Device::gpu);
  auto b = mx::allocator::malloc(64);
  vk::encoder(s.index).fill({vk::allocation(b), 2, 4, true}, 0);  // offset must be 4-aligned
  CHECK_THROWS_WITH_AS(mx::synchronize(), doctest::Contains("validation layer reported"),
                       std::runtime_error);
  mx::allocator::free(b);
  mx::synchronize();  // the error was reported once; later work is clean again
}

TEST_CASE("a signaled fence completes its serial even if its stream never polls again") {
  VK_REQUIRE_DEVICE();
  // A side stream used once is never polled again; its finished batch must not hold back
  // the reuse of every buffer freed afterwards.
  VkDevice dev = vk::device().handle();
  auto fi = vk::make_info<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
  VkFence fence;
  REQUIRE(vk::vkCreateFence(dev, &fi, nullptr, &fence) == VK_SUCCESS);
  mx::synchronize();
  uint64_t s = vk::begin_serial();
  CHECK(vk::completed_watermark() < s);  // recording: outstanding
  vk::submitted_serial(s, dev, fence);
  CHECK(vk::completed_watermark() >= s);  // its fence says it is done
  vk::end_serial(s);                      // the stream's own (late) poll is harmless
  CHECK(vk::completed_watermark() >= s);
  vk::vkDestroyFence(dev, fence, nullptr);
}

TEST_CASE("serial_completed is false while a serial is outstanding, true once it and those before end") {
  VK_REQUIRE_DEVICE();
  // Ended serials are answered without the lock (below the oldest outstanding one): the
  // answer must still follow the fence and the stream's end_serial exactly.
  VkDevice dev = vk::device().handle();
  auto fi = vk::make_info<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  VkFence fence;
  REQUIRE(vk::vkCreateFence(dev, &fi, nullptr, &fence) == VK_SUCCESS);  // unsignaled
  mx::synchronize();
  uint64_t a = vk::begin_serial();
  uint64_t b = vk::begin_serial();
  CHECK_FALSE(vk::serial_completed(a));  // recording
  vk::submitted_serial(a, dev, fence);
  CHECK_FALSE(vk::serial_completed(a));  // submitted, fence not signaled
  CHECK(vk::serial_submitted(a));
  vk::end_serial(b);  // a later serial ends first
  CHECK(vk::serial_completed(b));
  CHECK_FALSE(vk::serial_completed(a));  // the earlier one is still outstanding
  vk::end_serial(a);
  CHECK(vk::serial_completed(a));
  CHECK(vk::serial_completed(b));
  CHECK(vk::completed_watermark() >= b);
  vk::vkDestroyFence(dev, fence, nullptr);
}
