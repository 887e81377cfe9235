// Compute pipelines, created once and cached by (kernel, local size, specialization constants;
// a graph's missing ones on several threads at once),
// with the descriptor-set and pipeline layouts they need (cached by binding kinds and push-
// constant size). Backed by a VkPipelineCache that can be saved to and loaded from a file (by
// default one per device, driver and shader set in the per-user cache directory); the file's
// header is checked against this device and driver before the driver sees it.
// Optionally the pipelines are built with statistics capture, so the driver can say what it
// made of each kernel (VK_KHR_pipeline_executable_properties).
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/Handle.h"
#include "vkd/generated/ShaderRegistry.h"

namespace vkd::vk {

struct PipelineKey {
  shaders::Kernel kernel;
  std::array<uint32_t, 3> local_size;
  std::vector<uint32_t> spec_constants;  // raw 32-bit values for the shader's ids >= 3, in order
  bool operator<(const PipelineKey& o) const {
    return std::tie(kernel, local_size, spec_constants) <
           std::tie(o.kernel, o.local_size, o.spec_constants);
  }
};

struct Pipeline {
  VkPipeline pipeline;
  VkPipelineLayout layout;
  VkDescriptorSetLayout set_layout;
  const shaders::ShaderInfo* info;
};

// One statistic the driver reports for a pipeline executable, its value as text (bool as
// true/false, integers in decimal, floats with up to 6 significant digits).
struct KernelStatistic {
  std::string name;  // the driver's own, e.g. "Register Count"
  std::string value;
};

// A pipeline compiles to one or more executables (for compute usually one; some drivers split
// e.g. by subgroup size), each with the driver's name for it and its statistics.
struct PipelineExecutableStatistics {
  std::string name;
  std::vector<KernelStatistic> statistics;
};

// Checks that the device can run `kernel` (int8 dot product, cooperative matrix, ...); throws
// an Unsupported error naming the kernel and the missing feature.
void check_kernel_supported(const DeviceProfile& profile, shaders::Kernel kernel);

// Where a PipelineCache's data lives between processes.
struct PipelineCacheFile {
  std::string path;  // "" = in memory only
  // The path is the per-user default (default_pipeline_cache_file), not one the user named:
  // anything there that is not a pipeline cache of this device and driver (corrupt, truncated
  // header, another device's, not a regular file) is ignored and, when a regular file, replaced;
  // nothing about it is an error. A file the user named is refused by name instead (never read
  // as a cache, never overwritten) when it is not a Vulkan pipeline cache.
  bool per_user_default = false;
};

// The per-user default cache file for this device, driver and shader set:
// $XDG_CACHE_HOME/vkdelegate (an absolute XDG_CACHE_HOME), else $HOME/.cache/vkdelegate, created
// with mode 0700 where missing (an existing one that group or others may write into is made
// 0700; one of another user's is not used); the name holds the vendor and device ids, the
// driver version, the pipelineCacheUUID and a hash of every embedded SPIR-V module, so another
// GPU, driver or build of the library never meets this file. "" after one warning on stderr when
// there is no usable directory (the caller then keeps its pipelines in memory only).
std::string default_pipeline_cache_file(const DeviceProfile& profile);

// FNV-1a 64 over all embedded SPIR-V (each kernel's word count, then its words), computed once.
uint64_t embedded_spirv_hash();

class PipelineCache {
 public:
  // `cache_file`: where pipeline-cache data is loaded from and saved to.
  // `capture_statistics`: build pipelines with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  // the device must have been created with VK_KHR_pipeline_executable_properties and its
  // pipelineExecutableInfo feature (Context does that when asked and available).
  // `build_threads`: how many pipelines get_all() creates at once; unset = the device
  // profile's pipeline_threads.
  PipelineCache(VkDevice device, const DeviceProfile& profile, PipelineCacheFile cache_file,
                bool capture_statistics = false,
                std::optional<uint32_t> build_threads = std::nullopt);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The pipelines of `keys`, in order; equal keys get the same pipeline. The missing ones are
  // created once per distinct key, up to build_threads() at a time (vkCreateComputePipelines
  // may run concurrently for distinct pipelines on one VkPipelineCache: one created without
  // VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT is synchronized by the driver). A key
  // that cannot be built (kernel the device cannot run, wrong specialization constants, a
  // failed vkCreateComputePipelines) throws its error naming the kernel here, on the calling
  // thread, once every key has been tried: the first such key's in `keys` order. The others
  // are built and stay cached.
  std::vector<const Pipeline*> get_all(const std::vector<PipelineKey>& keys);
  const Pipeline& get(const PipelineKey& key) { return *get_all({key}).front(); }

  // Writes the driver's pipeline-cache data to the cache file (no-op without a file, or when
  // the per-user default path holds something other than a regular file), through a temporary
  // file in the same directory renamed over it, so a reader never sees a torn file. The
  // temporary is created exclusively under an unpredictable name (mkostemp, mode 0600): nothing
  // planted in the directory is followed or overwritten. The saved file has mode 0600.
  void save() const;

  // What the driver made of `pipeline` (one of ours): every executable with every statistic.
  // Empty when statistics are not captured (not asked for, or the device lacks the extension):
  // this is a diagnostic, never a reason to fail.
  std::vector<PipelineExecutableStatistics> statistics(VkPipeline pipeline) const;
  bool captures_statistics() const { return get_executable_properties_ != nullptr; }

  size_t pipeline_count() const { return pipelines_.size(); }
  size_t created_count() const { return created_; }
  uint32_t build_threads() const { return build_threads_; }
  bool loaded_from_file() const { return loaded_from_file_; }
  const std::string& cache_file() const { return file_.path; }

 private:
  struct Built {
    UniquePipeline handle;
    Pipeline pipeline;
  };
  // Checks `key` against the device and creates its pipeline; safe to run on several threads
  // at once for distinct keys (the layouts and modules it shares are made under
  // shared_objects_mutex_).
  Built build(const PipelineKey& key);
  VkDescriptorSetLayout set_layout_for(const shaders::ShaderInfo& info);
  VkPipelineLayout pipeline_layout_for(VkDescriptorSetLayout set_layout, uint32_t push_bytes);
  VkShaderModule module_for(shaders::Kernel kernel);

  VkDevice device_;
  const DeviceProfile& profile_;
  PipelineCacheFile file_;
  bool loaded_from_file_ = false;
  bool save_to_file_ = false;
  UniquePipelineCache cache_;
  std::map<std::vector<shaders::DescriptorKind>, UniqueDescriptorSetLayout> set_layouts_;
  std::map<std::pair<VkDescriptorSetLayout, uint32_t>, UniquePipelineLayout> pipeline_layouts_;
  std::map<shaders::Kernel, UniqueShaderModule> modules_;
  std::map<PipelineKey, std::pair<UniquePipeline, Pipeline>> pipelines_;
  size_t created_ = 0;
  uint32_t build_threads_ = 1;
  std::mutex shared_objects_mutex_;  // set_layouts_, pipeline_layouts_, modules_ during build()
  // Extension entry points, loaded only when capturing (null otherwise).
  PFN_vkGetPipelineExecutablePropertiesKHR get_executable_properties_ = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR get_executable_statistics_ = nullptr;
};

}  // namespace vkd::vk
