#include "runtime/vk/PipelineCache.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/Env.h"
#include "runtime/vk/KernelLimits.h"
#include "runtime/vk/ParallelFor.h"
#include "runtime/vk/VkError.h"

namespace vkd::vk {
namespace {

VkDescriptorType descriptor_type(shaders::DescriptorKind kind) {
  switch (kind) {
    case shaders::DescriptorKind::StorageBuffer: return VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    case shaders::DescriptorKind::UniformBuffer: return VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    case shaders::DescriptorKind::StorageImage: return VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    case shaders::DescriptorKind::CombinedImageSampler:
      return VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
  }
  return VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

// VkPipelineCacheHeaderVersionOne: length, version, vendorID, deviceID, pipelineCacheUUID.
// Its words, or all zeros when `data` is too short to hold one.
std::array<uint32_t, 4> cache_header_words(const std::vector<char>& data) {
  std::array<uint32_t, 4> words{};
  if (data.size() >= 32) std::memcpy(words.data(), data.data(), sizeof(words));
  return words;
}

// A Vulkan pipeline cache of any device (version-one header).
bool is_pipeline_cache(const std::vector<char>& data) {
  const auto words = cache_header_words(data);
  return words[0] >= 32 && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE;
}

// A pipeline cache of this device and driver.
bool cache_header_matches(const std::vector<char>& data, const DeviceProfile& profile) {
  const auto words = cache_header_words(data);
  return is_pipeline_cache(data) && words[2] == profile.vendor_id &&
         words[3] == profile.device_id &&
         std::memcmp(data.data() + 16, profile.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
}

// Larger than any pipeline cache of this library's few dozen kernels: a bigger file is not one.
constexpr uintmax_t kMaxCacheFileBytes = 256ull << 20;

// The cache file's contents ({} when it does not exist yet). The file is the user's: anything
// that is not a regular file, is too large, or holds something other than a Vulkan pipeline
// cache is refused (InvalidArgument) rather than read or later overwritten by save().
std::vector<char> read_cache_file(const std::string& path) {
  const std::string what = "pipeline cache file '" + path +
                           "' (DelegateOptions::pipeline_cache_file or VKD_PIPELINE_CACHE)";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) return {};
  VKD_CHECK(!ec, ErrorCode::InvalidArgument, what, ": ", ec.message());
  VKD_CHECK(status.type() == std::filesystem::file_type::regular, ErrorCode::InvalidArgument, what,
            " is not a regular file");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  VKD_CHECK(!ec && size <= kMaxCacheFileBytes, ErrorCode::InvalidArgument, what, " is ",
            ec ? ec.message() : std::to_string(size >> 20) + " MiB",
            ", not a pipeline cache (at most 256 MiB)");
  std::ifstream in(path, std::ios::binary);
  VKD_CHECK(in.good(), ErrorCode::InvalidArgument, what, " cannot be read");
  std::vector<char> data(static_cast<size_t>(size));
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  VKD_CHECK(in.gcount() == static_cast<std::streamsize>(data.size()), ErrorCode::InvalidArgument,
            what, " could not be read whole");
  VKD_CHECK(data.empty() || is_pipeline_cache(data), ErrorCode::InvalidArgument, what,
            " exists and is not a Vulkan pipeline cache; refusing to overwrite it");
  return data;
}

// The per-user default path's contents when they are a pipeline cache of this device and driver,
// else {}: whatever else is there (text, a truncated header, another device's cache, a file
// that cannot be read) is ignored, never an error. `*replaceable`: the path holds a regular file
// or nothing, so save() may rename a new cache over it; anything else (a directory, a device
// file) is left alone.
std::vector<char> read_default_cache_file(const std::string& path, const DeviceProfile& profile,
                                          bool* replaceable) {
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  *replaceable = type == std::filesystem::file_type::not_found ||
                 (!ec && type == std::filesystem::file_type::regular);
  if (ec || type != std::filesystem::file_type::regular) return {};
  std::vector<char> data;
  try {
    data = read_cache_file(path);
  } catch (const Error&) {
    return {};
  }
  if (!cache_header_matches(data, profile)) return {};
  return data;
}

// Closes a file descriptor when it goes out of scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now; false when close() reports an error (for a written file: the data may be lost).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

// Creates each missing directory of `dir` with mode 0700 (the XDG base-directory rule for the
// cache home; the cache holds compiled code of this user's processes), leaving existing parents
// as they are. `dir` itself, the cache's own directory, must be this user's: one that group or
// others may write into (where they could plant a symlink or swap the cache for their code) is
// tightened to 0700, and one of another user's is refused. false with `*why` when `dir` is not
// such a directory afterwards.
bool make_private_directories(const std::string& dir, std::string* why) {
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    const std::string part = dir.substr(0, end);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = "cannot create '" + part + "': " + std::strerror(errno);
      return false;
    }
    if (end == std::string::npos) break;
  }
  // Checked and changed through one descriptor, so the directory cannot be swapped in between.
  const FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st{};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = "'" + dir + "' is not a directory";
    return false;
  }
  if (st.st_uid != ::geteuid()) {
    *why = "'" + dir + "' belongs to uid " + std::to_string(st.st_uid) +
           ", not to this user (uid " + std::to_string(::geteuid()) + ")";
    return false;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && ::fchmod(fd.get(), 0700) != 0) {
    *why =
        "'" + dir + "' is writable by others and cannot be made private: " + std::strerror(errno);
    return false;
  }
  return true;
}

// Writes all `size` bytes to `fd`; false (errno set) on an error.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// $XDG_CACHE_HOME when absolute (the XDG rule: a relative one is ignored), else $HOME/.cache;
// "" when neither is usable.
std::string user_cache_home() {
  const std::string xdg = env_string("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg;
  const std::string home = env_string("HOME");
  if (!home.empty() && home[0] == '/') return home + "/.cache";
  return "";
}

std::string hex(uint64_t value, int digits) {
  char text[17];
  std::snprintf(text, sizeof(text), "%0*llx", digits, static_cast<unsigned long long>(value));
  return text;
}

// The driver's fixed-size, NUL-terminated strings (bounded anyway: a driver bug must not make
// us read past the array).
template <size_t N>
std::string driver_string(const char (&text)[N]) {
  return std::string(text, strnlen(text, N));
}

std::string format_statistic(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", s.value.f64);
      return text;
    }
    default: return "?";  // a format newer than our headers
  }
}

}  // namespace

uint64_t embedded_spirv_hash() {
  static const uint64_t hash = [] {
    uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
    auto add = [&h](const void* bytes, size_t size) {
      for (size_t i = 0; i < size; ++i) {
        h = (h ^ static_cast<const uint8_t*>(bytes)[i]) * 1099511628211ull;  // FNV prime
      }
    };
    for (size_t k = 0; k < shaders::kKernelCount; ++k) {
      const auto& info = shaders::shader_info(static_cast<shaders::Kernel>(k));
      const uint64_t words = info.spirv_words;  // separates one module from the next
      add(&words, sizeof(words));
      add(info.spirv, info.spirv_words * sizeof(uint32_t));
    }
    return h;
  }();
  return hash;
}

std::string default_pipeline_cache_file(const DeviceProfile& profile) {
  const char* const advice =
      "; pipelines are compiled anew in every process (VKD_PIPELINE_CACHE=FILE names a cache "
      "file, VKD_PIPELINE_CACHE=off silences this)";
  const std::string home = user_cache_home();
  if (home.empty()) {
    std::fprintf(stderr,
                 "vkd: warning: no per-user cache directory for the pipeline cache (neither "
                 "$XDG_CACHE_HOME nor $HOME is an absolute path)%s\n",
                 advice);
    return "";
  }
  const std::string dir = home + "/vkdelegate";
  std::string why;
  if (!make_private_directories(dir, &why)) {
    std::fprintf(stderr, "vkd: warning: no pipeline cache directory: %s%s\n", why.c_str(), advice);
    return "";
  }
  std::string uuid;
  for (uint8_t byte : profile.pipeline_cache_uuid) uuid += hex(byte, 2);
  return dir + "/pipelines-" + hex(profile.vendor_id, 4) + "-" + hex(profile.device_id, 4) + "-" +
         hex(profile.driver_version, 8) + "-" + uuid + "-" + hex(embedded_spirv_hash(), 16) +
         ".vkpc";
}

void check_kernel_supported(const DeviceProfile& p, shaders::Kernel kernel) {
  const auto& info = shaders::shader_info(kernel);
  auto need = [&](uint32_t bit, bool have, const char* what) {
    VKD_CHECK(!(info.requirements & bit) || have, ErrorCode::Unsupported, "kernel ", info.name,
              " needs ", what, ", which device '", p.name, "' does not offer",
              " (or it was switched off)");
  };
  need(shaders::kReqInt8DotProduct, p.int8_dot_product, "the int8 dot product");
  need(shaders::kReqStorage8Bit, p.storage_8bit, "8-bit storage");
  need(shaders::kReqStorage16Bit, p.storage_16bit, "16-bit storage");
  need(shaders::kReqInt8Arith, p.int8_arithmetic, "int8 arithmetic");
  need(shaders::kReqFloat16Arith, p.float16_arithmetic, "float16 arithmetic");
  need(shaders::kReqCooperativeMatrixNV, p.cooperative_matrix_nv, "VK_NV_cooperative_matrix");
  need(shaders::kReqVulkanMemoryModel, p.vulkan_memory_model, "the Vulkan memory model");
  need(shaders::kReqSubgroup, p.subgroup_arithmetic, "subgroup operations in compute shaders");
  need(shaders::kReqSubgroupShuffle, p.subgroup_shuffle, "subgroup shuffles in compute shaders");
  need(shaders::kReqCooperativeMatrixKHR, p.cooperative_matrix_khr, "VK_KHR_cooperative_matrix");
}

PipelineCache::PipelineCache(VkDevice device, const DeviceProfile& profile,
                             PipelineCacheFile cache_file, bool capture_statistics,
                             std::optional<uint32_t> build_threads)
    : device_(device),
      profile_(profile),
      file_(std::move(cache_file)),
      build_threads_(std::max<uint32_t>(1, build_threads.value_or(profile.pipeline_threads))) {
  if (capture_statistics) {
    // Extension commands are not exported by the loader library; ask the device for them.
    get_executable_properties_ = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
        vkGetDeviceProcAddr(device_, "vkGetPipelineExecutablePropertiesKHR"));
    get_executable_statistics_ = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
        vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableStatisticsKHR"));
    // Both or neither, so captures_statistics() alone decides.
    if (!get_executable_properties_ || !get_executable_statistics_) {
      get_executable_properties_ = nullptr;
      get_executable_statistics_ = nullptr;
    }
  }
  std::vector<char> data;
  if (file_.per_user_default && !file_.path.empty()) {
    data = read_default_cache_file(file_.path, profile_, &save_to_file_);
  } else if (!file_.path.empty()) {
    data = read_cache_file(file_.path);
    // A cache from another device or driver is ignored rather than handed to the driver.
    if (!data.empty() && !cache_header_matches(data, profile_)) data.clear();
    save_to_file_ = true;
  }
  loaded_from_file_ = !data.empty();
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreatePipelineCache(device_, &info, nullptr, &cache), "vkCreatePipelineCache");
  cache_ = UniquePipelineCache(device_, cache);
}

PipelineCache::~PipelineCache() = default;

void PipelineCache::save() const {
  if (!save_to_file_) return;
  size_t size = 0;
  VKD_VK_CHECK(vkGetPipelineCacheData(device_, cache_.get(), &size, nullptr),
               "vkGetPipelineCacheData");
  std::vector<char> data(size);
  VKD_VK_CHECK(vkGetPipelineCacheData(device_, cache_.get(), &size, data.data()),
               "vkGetPipelineCacheData");
  // Write to a temporary file in the same directory and rename it over the cache (atomic within
  // one file system), so a crash never leaves a truncated cache and a process loading the cache
  // while another saves it reads the old file or the new one whole. mkostemp creates it
  // exclusively (O_CREAT | O_EXCL, mode 0600) under a name nobody can predict, so it is never a
  // file or symlink someone planted (a symlink to a file of the user's would be followed and
  // that file overwritten), nor another process's or context's temporary.
  const std::string& path = file_.path;
  std::string tmp = path + ".tmp.XXXXXX";
  FileDescriptor fd(::mkostemp(tmp.data(), O_CLOEXEC));
  VKD_CHECK(fd.get() >= 0, ErrorCode::InvalidArgument,
            "cannot create a temporary file next to pipeline cache file '", path,
            "': ", std::strerror(errno));
  const bool written = write_all(fd.get(), data.data(), size);
  const int write_errno = errno;
  if (!fd.close() || !written) {
    ::unlink(tmp.c_str());
    VKD_THROW(ErrorCode::InvalidArgument, "failed writing pipeline cache file '", tmp,
              "': ", std::strerror(written ? errno : write_errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(tmp.c_str());
    VKD_THROW(ErrorCode::InvalidArgument, "cannot move pipeline cache into place at '", path,
              "': ", std::strerror(rename_errno));
  }
}

VkDescriptorSetLayout PipelineCache::set_layout_for(const shaders::ShaderInfo& info) {
  std::vector<shaders::DescriptorKind> kinds(info.bindings, info.bindings + info.binding_count);
  auto it = set_layouts_.find(kinds);
  if (it != set_layouts_.end()) return it->second.get();
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t i = 0; i < info.binding_count; ++i) {
    bindings.push_back({i, descriptor_type(kinds[i]), 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  }
  VkDescriptorSetLayoutCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  ci.bindingCount = static_cast<uint32_t>(bindings.size());
  ci.pBindings = bindings.data();
  VkDescriptorSetLayout layout = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateDescriptorSetLayout(device_, &ci, nullptr, &layout),
               "vkCreateDescriptorSetLayout for ", info.name);
  return set_layouts_.emplace(kinds, UniqueDescriptorSetLayout(device_, layout))
      .first->second.get();
}

VkPipelineLayout PipelineCache::pipeline_layout_for(VkDescriptorSetLayout set_layout,
                                                    uint32_t push_bytes) {
  const auto key = std::make_pair(set_layout, push_bytes);
  auto it = pipeline_layouts_.find(key);
  if (it != pipeline_layouts_.end()) return it->second.get();
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  ci.setLayoutCount = 1;
  ci.pSetLayouts = &set_layout;
  ci.pushConstantRangeCount = push_bytes > 0 ? 1 : 0;
  ci.pPushConstantRanges = push_bytes > 0 ? &range : nullptr;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreatePipelineLayout(device_, &ci, nullptr, &layout), "vkCreatePipelineLayout");
  return pipeline_layouts_.emplace(key, UniquePipelineLayout(device_, layout)).first->second.get();
}

VkShaderModule PipelineCache::module_for(shaders::Kernel kernel) {
  auto it = modules_.find(kernel);
  if (it != modules_.end()) return it->second.get();
  const auto& info = shaders::shader_info(kernel);
  VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  ci.codeSize = info.spirv_words * sizeof(uint32_t);
  ci.pCode = info.spirv;
  VkShaderModule module = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateShaderModule(device_, &ci, nullptr, &module), "vkCreateShaderModule for ",
               info.name);
  return modules_.emplace(kernel, UniqueShaderModule(device_, module)).first->second.get();
}

PipelineCache::Built PipelineCache::build(const PipelineKey& key) {
  const auto& info = shaders::shader_info(key.kernel);
  check_kernel_supported(profile_, key.kernel);
  VKD_CHECK(key.spec_constants.size() == info.spec_constant_count, ErrorCode::Internal, "kernel ",
            info.name, " declares ", info.spec_constant_count,
            " specialization constants but the op passed ", key.spec_constants.size());
  const std::string too_big =
      kernel_limit_problem(profile_, info, key.local_size, key.spec_constants);
  VKD_CHECK(too_big.empty(), ErrorCode::Unsupported, too_big);

  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> values;
  if (info.local_size_from_spec) {
    for (uint32_t i = 0; i < 3; ++i) {
      entries.push_back({i, static_cast<uint32_t>(values.size() * 4), 4});
      values.push_back(key.local_size[i]);
    }
  }
  for (uint32_t i = 0; i < info.spec_constant_count; ++i) {
    entries.push_back({info.spec_constants[i].id, static_cast<uint32_t>(values.size() * 4), 4});
    values.push_back(key.spec_constants[i]);
  }
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                            values.size() * sizeof(uint32_t), values.data()};

  Pipeline result{};
  result.info = &info;
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  {
    const std::lock_guard<std::mutex> lock(shared_objects_mutex_);
    result.set_layout = set_layout_for(info);
    result.layout = pipeline_layout_for(result.set_layout, info.push_constant_bytes);
    ci.stage.module = module_for(key.kernel);
  }
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  ci.layout = result.layout;
  if (captures_statistics()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipeline = VK_NULL_HANDLE;
  // A failed pipeline build is an error for this kernel, never a null handle bound later.
  VKD_VK_CHECK(vkCreateComputePipelines(device_, cache_.get(), 1, &ci, nullptr, &pipeline),
               "vkCreateComputePipelines for kernel ", info.name);
  result.pipeline = pipeline;
  return {UniquePipeline(device_, pipeline), result};
}

std::vector<const Pipeline*> PipelineCache::get_all(const std::vector<PipelineKey>& keys) {
  // The distinct keys not built yet, in first-use order.
  std::vector<const PipelineKey*> missing;
  std::set<PipelineKey> seen;
  for (const auto& key : keys) {
    if (pipelines_.count(key) == 0 && seen.insert(key).second) missing.push_back(&key);
  }
  std::vector<std::optional<Built>> built(missing.size());
  std::exception_ptr error;
  try {
    parallel_for(missing.size(), build_threads_, [&](size_t i) { built[i] = build(*missing[i]); });
  } catch (...) {
    error = std::current_exception();
  }
  // What was built is cached even when another key failed: its handle has an owner, and a
  // later call does not build it again.
  for (size_t i = 0; i < missing.size(); ++i) {
    if (!built[i]) continue;
    pipelines_.emplace(*missing[i],
                       std::make_pair(std::move(built[i]->handle), built[i]->pipeline));
    ++created_;
  }
  if (error) std::rethrow_exception(error);
  std::vector<const Pipeline*> result;
  result.reserve(keys.size());
  for (const auto& key : keys) result.push_back(&pipelines_.at(key).second);
  return result;
}

std::vector<PipelineExecutableStatistics> PipelineCache::statistics(VkPipeline pipeline) const {
  std::vector<PipelineExecutableStatistics> result;
  if (!captures_statistics()) return result;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t count = 0;
  VKD_VK_CHECK(get_executable_properties_(device_, &info, &count, nullptr),
               "vkGetPipelineExecutablePropertiesKHR");
  std::vector<VkPipelineExecutablePropertiesKHR> executables(
      count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  VKD_VK_CHECK(get_executable_properties_(device_, &info, &count, executables.data()),
               "vkGetPipelineExecutablePropertiesKHR");
  for (uint32_t i = 0; i < count; ++i) {
    VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    executable.pipeline = pipeline;
    executable.executableIndex = i;
    uint32_t stat_count = 0;
    VKD_VK_CHECK(get_executable_statistics_(device_, &executable, &stat_count, nullptr),
                 "vkGetPipelineExecutableStatisticsKHR");
    std::vector<VkPipelineExecutableStatisticKHR> stats(
        stat_count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    VKD_VK_CHECK(get_executable_statistics_(device_, &executable, &stat_count, stats.data()),
                 "vkGetPipelineExecutableStatisticsKHR");
    PipelineExecutableStatistics& out = result.emplace_back();
    out.name = driver_string(executables[i].name);
    for (uint32_t k = 0; k < stat_count; ++k) {
      out.statistics.push_back({driver_string(stats[k].name), format_statistic(stats[k])});
    }
  }
  return result;
}

}  // namespace vkd::vk
