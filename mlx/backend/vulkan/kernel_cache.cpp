#include "mlx/backend/vulkan/kernel_cache.h"

#include <algorithm>
#include <cstring>

#include "cache/hash.h"
#include "cache/warn.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

uint32_t read_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

std::vector<uint8_t> pipeline_cache_data(VkDevice d, VkPipelineCache c) {
  std::vector<uint8_t> data;
  // The size can grow between the two calls when other threads add pipelines.
  for (int attempt = 0; attempt < 4; ++attempt) {
    size_t size = 0;
    if (vkGetPipelineCacheData(d, c, &size, nullptr) != VK_SUCCESS) {
      return {};
    }
    data.resize(size);
    VkResult r = vkGetPipelineCacheData(d, c, &size, data.data());
    if (r == VK_SUCCESS) {
      data.resize(size);
      return data;
    }
    if (r != VK_INCOMPLETE) {
      return {};
    }
  }
  return {};
}

}  // namespace

KernelCache::KernelCache(Device& d)
    : dev_(d),
      disk_(cache::DiskCache::open(d.caps().fingerprint)),
      recorder_(cache::recorder_from_env()),
      save_every_pipelines_(std::max<size_t>(
          1, env_size("MLX_VK_PIPELINE_CACHE_SAVE_EVERY", kDefaultSaveEveryPipelines))),
      last_save_(std::chrono::steady_clock::now()) {
  vkGetPhysicalDeviceProperties(d.physical_device(), &props_);
  set_stats_source(this);
}

KernelCache::~KernelCache() {
  set_stats_source(nullptr);
}

std::optional<cache::KernelEntry> KernelCache::load(uint64_t hash,
                                                    const std::string& canonical_key) {
  if (!disk_.readable()) {
    return std::nullopt;
  }
  auto entry = disk_.load(hash);
  if (entry && entry->key != canonical_key) {
    // The hash covers the key, so this is a hash collision or a foreign writer: a miss,
    // and the store after the compile replaces the entry.
    cache::warn_once("key:" + cache::to_hex(hash), "ignoring cached kernel " + cache::to_hex(hash) +
                                                       ": it is '" + entry->key + "', not '" +
                                                       canonical_key + "'");
    return std::nullopt;
  }
  return entry;
}

void KernelCache::store(const cache::KernelEntry& entry) {
  if (disk_.writable()) {
    disk_.store(entry);
  }
}

void KernelCache::record(const std::string& canonical_key) {
  if (recorder_) {
    recorder_->record(canonical_key);
  }
}

// Vulkan's own header (VkPipelineCacheHeaderVersionOne, little-endian whatever the host):
// headerSize, headerVersion, vendorID, deviceID, pipelineCacheUUID. The cache library has
// checked that it is well formed; whether it is this driver's is ours to check, because a
// driver is never to be handed another driver's data.
std::optional<std::vector<uint8_t>> KernelCache::matching_blob(std::vector<uint8_t> data,
                                                               bool warn) {
  std::string why;
  if (data.size() < 32) {
    why = "shorter than Vulkan's header";
  } else if (read_le32(&data[4]) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) {
    why = "unknown Vulkan header version " + std::to_string(read_le32(&data[4]));
  } else if (read_le32(&data[8]) != props_.vendorID || read_le32(&data[12]) != props_.deviceID) {
    why = "made for another device";
  } else if (std::memcmp(&data[16], props_.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
    why = "made by another driver build (pipelineCacheUUID differs)";
  }
  if (why.empty()) {
    return data;
  }
  if (warn) {
    cache::warn_once(
        "pipeline-header:" + disk_.config().dir.string(),
        "ignoring the saved pipeline cache: " + why + "; it will be replaced by this device's");
  }
  return std::nullopt;
}

VkPipelineCache KernelCache::make_cache(const std::vector<uint8_t>* data) {
  auto ci = make_info<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  if (data && !data->empty()) {
    ci.initialDataSize = data->size();
    ci.pInitialData = data->data();
  }
  VkPipelineCache c = VK_NULL_HANDLE;
  VkResult r = vkCreatePipelineCache(dev_.handle(), &ci, nullptr, &c);
  if (r != VK_SUCCESS && ci.pInitialData) {
    cache::warn_once("pipeline-rejected:" + disk_.config().dir.string(),
                     std::string("the driver rejected the saved pipeline cache (") +
                         result_name(r) + "); starting with an empty one");
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    r = vkCreatePipelineCache(dev_.handle(), &ci, nullptr, &c);
  }
  check(r, "vkCreatePipelineCache");
  return c;
}

VkPipelineCache KernelCache::create_pipeline_cache() {
  std::optional<std::vector<uint8_t>> blob;
  if (disk_.readable()) {
    if (auto data = disk_.load_pipeline_cache()) {
      blob = matching_blob(std::move(*data), true);
    }
  }
  VkPipelineCache c = make_cache(blob ? &*blob : nullptr);
  std::lock_guard lk(save_mtx_);
  last_blob_ = blob ? std::move(*blob) : std::vector<uint8_t>{};
  last_save_ = std::chrono::steady_clock::now();
  return c;
}

bool KernelCache::save_pipeline_cache(VkPipelineCache live) {
  std::lock_guard lk(save_mtx_);
  unsaved_pipelines_ = 0;
  last_save_ = std::chrono::steady_clock::now();
  if (!disk_.writable() || live == VK_NULL_HANDLE) {
    return false;
  }
  try {
    VkDevice d = dev_.handle();
    std::vector<uint8_t> data = pipeline_cache_data(d, live);
    if (data.empty() || data == last_blob_) {
      return false;  // nothing new since the load or the last save: a warm process writes
                     // (and reads) nothing
    }
    // Another process may have saved since we loaded: merge its pipelines with ours, so
    // that processes sharing a cache add up rather than overwrite each other.
    std::optional<std::vector<uint8_t>> on_disk;
    if (auto raw = disk_.load_pipeline_cache()) {
      on_disk = matching_blob(std::move(*raw), false);
    }
    auto merge = reinterpret_cast<PFN_vkMergePipelineCaches>(
        vkGetDeviceProcAddr(d, "vkMergePipelineCaches"));
    if (on_disk && *on_disk != last_blob_ && *on_disk != data && merge) {
      VkPipelineCache merged = make_cache(&*on_disk);
      if (merge(d, merged, 1, &live) == VK_SUCCESS) {
        auto merged_data = pipeline_cache_data(d, merged);
        if (!merged_data.empty()) {
          data = std::move(merged_data);
        }
      }
      vkDestroyPipelineCache(d, merged, nullptr);
    }
    if (on_disk && data == *on_disk) {
      last_blob_ = std::move(data);
      return false;
    }
    disk_.store_pipeline_cache(data);
    last_blob_ = std::move(data);
    return true;
  } catch (const std::exception& e) {
    cache::warn_once("pipeline-save", std::string("not saving the pipeline cache: ") + e.what());
    return false;
  }
}

void KernelCache::pipeline_created(VkPipelineCache live) {
  {
    std::unique_lock lk(save_mtx_, std::try_to_lock);
    if (!lk.owns_lock()) {
      return;  // a save is running right now; it covers this pipeline or the next one will
    }
    ++unsaved_pipelines_;
    bool due = unsaved_pipelines_ >= save_every_pipelines_ ||
               std::chrono::steady_clock::now() - last_save_ >= kSaveEvery;
    if (!due) {
      return;
    }
  }
  save_pipeline_cache(live);
}

cache::CacheStats KernelCache::disk_stats() const {
  return disk_.stats();
}

}  // namespace mlx::core::vulkan
