// libFuzzer target: partition plans, the untrusted input `vkd run PLAN` and vkd_model_load read.
// Each input (test/fuzz/PlanInput.h: the plan's JSON and the files beside it, its blobs and
// weights) is written to a directory of this process and loaded with vkd::Model::load (the
// plan reader and its data-flow checks, the blobs read as a plan's are, the constants from the
// weights, each host step's one-node graph, one delegate per GPU step on the default Vulkan
// device: lavapipe without a GPU); a model that loads runs once on small inputs, every output
// read back.
//
// Expected answers to a bad input: a Status of InvalidArgument, Unsupported or OutOfMemory,
// from load or execute. Findings: a crash, an ASan/UBSan report, a hang (libFuzzer -timeout),
// an uncaught exception, and any other status (Internal: a check missing earlier; a Vulkan
// failure, a lost device or a GPU timeout: a plan must never get that far), which aborts with
// the message.
//
// Harness budget, not the model's: a blob with a tensor over kMaxTensorElements (or
// kMaxTotalElements in all) is not loaded, and a plan whose tensors together exceed
// kMaxTotalElements is loaded but not executed (both return -1, so they stay out of the
// corpus); an input costs milliseconds when it is refused, tens to hundreds when it loads.
// VKD_FUZZ_VERBOSE=1 prints each input's outcome.
//
// Mutation (LLVMFuzzerCustomMutator): the plan's text alone seven times in eight, in its JSON
// structure (JsonMutator.h: values, members, elements; sizes past the caps, op names, names
// outside the plan's folder) five times in eight, else its bytes; the whole input with
// libFuzzer's byte mutations the rest of the time. The blobs are most of an input's bytes and
// their checksums refuse nearly any change, and byte mutations of JSON mostly break its syntax:
// with whole-input mutations alone, 208 of 113,982 inputs loaded and ran in ten minutes.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "compiler/Parse.h"
#include "core/Error.h"
#include "core/TensorLimits.h"
#include "model/PartitionPlan.h"
#include "runtime/vk/Instance.h"
#include "serialization/Deserializer.h"
#include "test/fuzz/JsonMutator.h"
#include "test/fuzz/PlanInput.h"
#include "vkdelegate/Model.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

namespace fs = std::filesystem;
using namespace vkd;

constexpr int64_t kMaxTensorElements = int64_t(1) << 18;
constexpr int64_t kMaxTotalElements = int64_t(1) << 20;
constexpr size_t kMaxFiles = 16;
const char* kPlanName = "model.partition.json";

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

const bool kVerbose = env_on("VKD_FUZZ_VERBOSE");

// Outcomes so far, printed at exit: how deep the inputs get.
struct Outcomes {
  uint64_t over_budget = 0, load_errors = 0, loaded_not_run = 0, execute_errors = 0, ran = 0;
} outcomes;

void print_outcomes() {
  const Outcomes& o = outcomes;
  std::fprintf(stderr,
               "fuzz_partition_plan: outcomes: %llu blobs over the tensor budget, %llu load "
               "errors, %llu loaded (over the budget to run), %llu execute errors, %llu loaded "
               "and ran\n",
               (unsigned long long)o.over_budget, (unsigned long long)o.load_errors,
               (unsigned long long)o.loaded_not_run, (unsigned long long)o.execute_errors,
               (unsigned long long)o.ran);
}

// Each GPU step's delegate has a Vulkan instance of its own, destroyed with the model; when the
// last one goes, the loader unloads the driver, and LeakSanitizer can then no longer name the
// library whose allocations it keeps for the life of the process (lsan.supp names the drivers).
// One instance held for the whole run keeps the driver loaded.
void keep_vulkan_driver_loaded() {
  static const vk::Instance* const kInstance = new vk::Instance(false);  // never destroyed
  (void)kInstance;
}

// This process's directory for the plan and its files, emptied before each input.
const fs::path& work_dir() {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "vkd_fuzz_plan_XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror("fuzz_partition_plan: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(work_dir(), ec);
      print_outcomes();
    });
    return fs::path(templ);
  }();
  return dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.good()) {
    std::fprintf(stderr, "fuzz_partition_plan: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// A file the input may create: a plain name (the plan can only name those), not the plan's.
bool writable_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && name != "." && name != ".." && name != kPlanName &&
         name.find('/') == std::string_view::npos;
}

// Every blob of the input within the tensor budget (a blob that does not deserialize is the
// loader's to refuse, and costs nothing to load).
bool blobs_within_budget(const vkd::fuzz::PlanInput& in) {
  for (const auto& [name, bytes] : in.files) {
    if (name == vkd::fuzz::kWeightsFileName) continue;
    try {
      const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
      const serialization::DeserializedGraph g = serialization::deserialize(data, bytes.size());
      int64_t total = 0;
      for (const serialization::Value& v : g.values) {
        const auto* t = std::get_if<serialization::TensorValue>(&v);
        if (t == nullptr) continue;
        const int64_t n = t->spec.numel();  // validated: within the caps
        if (n > kMaxTensorElements) return false;
        total += n;
      }
      if (total > kMaxTotalElements) return false;
    } catch (const Error&) {
    }
  }
  return true;
}

// Whether every tensor of the plan fits the budget to run (the plan loaded, so it parses).
bool plan_within_budget(std::string_view plan_text) {
  try {
    const model::PartitionPlan plan =
        model::parse_partition_plan(std::string(plan_text), (work_dir() / kPlanName).string());
    int64_t total = 0;
    for (const auto& [name, t] : plan.tensors) {
      total += *checked_element_count(t.shape);  // within the caps: the load checked them
      if (total > kMaxTotalElements) return false;
    }
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz_partition_plan: a plan that loaded does not parse: %s\n", e.what());
    std::abort();
  }
}

// What a plan's strings may become: the edge ops (host steps), dtypes, names in and out of the
// plan's folder, the plan's fields.
const std::vector<std::string>& words() {
  static const std::vector<std::string> kWords = [] {
    std::vector<std::string> w = compiler::accepted_edge_ops();
    for (const char* s :
         {"float32",  "float16",  "int8",        "int32",       "int64",
          "m.p0.vkd", "m.p1.vkd", "../m.p0.vkd", "/etc/passwd", "weights.safetensors",
          "",         "delegate", "host",        "inputs",      "outputs",
          "tensors",  "steps",    "args",        "quant",       "constant",
          "data",     "origin",   "shape",       "dtype"}) {
      w.push_back(s);
    }
    return w;
  }();
  return kWords;
}

bool expected(Status s) {
  return s == Status::InvalidArgument || s == Status::Unsupported || s == Status::OutOfMemory;
}

[[noreturn]] void finding(const char* stage, Status s, const std::string& message) {
  std::fprintf(stderr,
               "fuzz_partition_plan: %s failed with %s, which a plan must never cause: %s\n", stage,
               status_name(s), message.c_str());
  std::abort();
}

// Deterministic small values of each dtype the API exchanges: zero points, scales and indices
// stay in range for the int8 and int32 inputs a host step or a quantize reads.
std::vector<uint8_t> input_bytes(const TensorInfo& info) {
  std::vector<uint8_t> bytes(info.host_bytes());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 37 + 11) % 7);
  if (info.host_dtype == HostDType::Float32) {
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      const float f = 0.25f * static_cast<float>(static_cast<int>((i / 4) % 9) - 4);
      std::memcpy(bytes.data() + i, &f, 4);
    }
  }
  return bytes;
}

// One execute on the model's inputs: false when it failed as a bad plan may.
bool run_once(Model& m) {
  std::vector<std::vector<uint8_t>> in_data, out_data;
  std::vector<ConstTensorView> in;
  std::vector<TensorView> out;
  for (size_t i = 0; i < m.input_count(); ++i) {
    const TensorInfo info = m.input(i);
    in_data.push_back(input_bytes(info));
    in.push_back({in_data.back().data(), in_data.back().size(), info.host_dtype, info.sizes});
  }
  for (size_t i = 0; i < m.output_count(); ++i) {
    const TensorInfo info = m.output(i);
    out_data.emplace_back(info.host_bytes());
    out.push_back({out_data.back().data(), out_data.back().size(), info.host_dtype, info.sizes});
  }
  const Status s = m.execute(in, out);
  if (s == Status::Ok) return true;
  if (!expected(s)) finding("Model::execute", s, m.last_error());
  if (kVerbose) {
    std::fprintf(stderr, "fuzz_partition_plan: execute: %s\n", m.last_error().c_str());
  }
  return false;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::minstd_rand rng(seed);
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t plan_size = std::min(all.find(vkd::fuzz::kFileSeparator), size);
  const std::string files(all.substr(plan_size));
  const unsigned pick = rng() % 8;
  if (pick == 0 || files.size() >= max_size) return LLVMFuzzerMutate(data, size, max_size);
  const size_t room = max_size - files.size();
  size_t n = 0;
  std::optional<std::string> text;
  if (pick >= 3) {
    text = vkd::fuzz::mutate_json(std::string(all.substr(0, plan_size)), seed, words());
  }
  if (text && text->size() <= room) {
    n = text->size();
    std::memcpy(data, text->data(), n);
  } else {
    n = LLVMFuzzerMutate(data, plan_size, room);  // the plan's bytes, in place
  }
  std::memcpy(data + n, files.data(), files.size());
  return n + files.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keep_vulkan_driver_loaded();
  const vkd::fuzz::PlanInput in = vkd::fuzz::split_plan_input(data, size);
  if (in.files.size() > kMaxFiles) return -1;
  if (!blobs_within_budget(in)) {
    ++outcomes.over_budget;
    return -1;
  }
  const fs::path& dir = work_dir();
  std::vector<fs::path> old;
  for (const auto& entry : fs::directory_iterator(dir)) old.push_back(entry.path());
  for (const fs::path& p : old) fs::remove_all(p);
  write_file(dir / kPlanName, in.plan);
  ModelOptions options;
  options.delegate.pipeline_cache_file = "off";  // no file written per input
  options.delegate.gpu_timeout_ms = 20000;
  for (const auto& [name, bytes] : in.files) {
    if (!writable_name(name)) continue;
    write_file(dir / std::string(name), bytes);
    if (name == vkd::fuzz::kWeightsFileName) options.weights_path = (dir / name).string();
  }

  std::unique_ptr<Model> model;
  std::string error;
  const Status s = Model::load((dir / kPlanName).string(), options, &model, &error);
  if (s != Status::Ok) {
    if (!expected(s)) finding("Model::load", s, error);
    if (kVerbose) std::fprintf(stderr, "fuzz_partition_plan: load: %s\n", error.c_str());
    ++outcomes.load_errors;
    return 0;
  }
  if (!plan_within_budget(in.plan)) {
    ++outcomes.loaded_not_run;
    return -1;
  }
  if (run_once(*model)) {
    ++outcomes.ran;
    if (kVerbose) std::fprintf(stderr, "fuzz_partition_plan: loaded and ran\n");
  } else {
    ++outcomes.execute_errors;
  }
  return 0;
}
