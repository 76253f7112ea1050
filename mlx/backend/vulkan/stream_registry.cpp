// The registry of GPU streams: one CommandEncoder per stream index (command_encoder.h),
// created by gpu::new_stream, looked up by every op, and dropped at device teardown.
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

namespace {

// Stream indices below this are looked up without the registry lock (every op looks up
// its stream's encoder, several times).
constexpr int kFastStreams = 64;

struct Streams {
  std::mutex mtx;
  std::map<int, std::unique_ptr<CommandEncoder>> encoders;
  bool torn_down = false;
  // Set once an encoder exists, cleared at teardown; encoders live until then.
  std::array<std::atomic<CommandEncoder*>, kFastStreams> fast{};
};

Streams& streams() {
  static Streams* s = new Streams();  // reached during teardown: never destroyed
  return *s;
}

}  // namespace

void create_encoder(int stream_index) {
  auto& s = streams();
  auto& d = device("new_stream");
  std::lock_guard lk(s.mtx);
  if (s.torn_down) {
    throw std::runtime_error("[new_stream] the Vulkan device has been destroyed.");
  }
  bool first = s.encoders.empty();
  if (!s.encoders.count(stream_index)) {
    auto it =
        s.encoders.emplace(stream_index, std::make_unique<CommandEncoder>(d, stream_index)).first;
    if (stream_index >= 0 && stream_index < kFastStreams) {
      s.fast[stream_index].store(it->second.get(), std::memory_order_release);
    }
  }
  if (first) {
    // Streams go before the allocator and kernels they use (teardown runs in reverse).
    d.on_teardown([] {
      auto& ss = streams();
      std::map<int, std::unique_ptr<CommandEncoder>> gone;
      {
        std::lock_guard lk2(ss.mtx);
        gone.swap(ss.encoders);
        ss.torn_down = true;
        for (auto& f : ss.fast) {
          f.store(nullptr, std::memory_order_release);
        }
      }
      gone.clear();
    });
  }
}

CommandEncoder& encoder(int stream_index) {
  auto& s = streams();
  if (stream_index >= 0 && stream_index < kFastStreams) {
    if (auto* e = s.fast[stream_index].load(std::memory_order_acquire)) {
      return *e;
    }
  }
  std::lock_guard lk(s.mtx);
  auto it = s.encoders.find(stream_index);
  if (it == s.encoders.end()) {
    throw std::runtime_error("[vulkan] stream " + std::to_string(stream_index) +
                             " is not a GPU stream of this device.");
  }
  return *it->second;
}

namespace {

// The encoders that exist now, collected under the registry lock and used outside it, so
// committing or waiting never holds the lock.
std::vector<CommandEncoder*> snapshot_encoders() {
  std::vector<CommandEncoder*> all;
  auto& s = streams();
  std::lock_guard lk(s.mtx);
  for (auto& [i, e] : s.encoders) {
    all.push_back(e.get());
  }
  return all;
}

}  // namespace

void commit_all_streams() {
  auto all = snapshot_encoders();
  for (auto* e : all) {
    e->commit();
  }
}

void poll_all_streams() {
  auto all = snapshot_encoders();
  for (auto* e : all) {
    e->poll();
  }
  // Buffers freed while a now-finished batch was outstanding become reusable.
  if (auto* a = vulkan_allocator()) {
    a->collect();
  }
}

void synchronize_all_streams() {
  auto all = snapshot_encoders();
  for (auto* e : all) {
    e->commit();
  }
  for (auto* e : all) {
    e->synchronize();
  }
}

void commit_stream(int stream_index) {
  CommandEncoder* e = nullptr;
  {
    auto& s = streams();
    std::lock_guard lk(s.mtx);
    auto it = s.encoders.find(stream_index);
    if (it == s.encoders.end()) {
      return;
    }
    e = it->second.get();
  }
  e->commit();
}

}  // namespace mlx::core::vulkan
