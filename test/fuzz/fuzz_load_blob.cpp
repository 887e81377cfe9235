// libFuzzer target: mutated real blobs through the real loader (vkd::delegate::load_graph: the
// runtime's op registry, data-flow checks, op builders, constant packing, prepare()) and, when
// a blob loads, one execution with zero-filled inputs on the default Vulkan device (lavapipe on
// a machine without a GPU), outputs read back. One vk::Context for the whole run (static), as
// an application keeps its device (replaced now and then: kMaxPipelines).
//
// Expected answers to a bad blob: a vkd::Error with code InvalidArgument, Unsupported or
// OutOfMemory, from loading or executing. Findings: a crash, an ASan/UBSan report, a hang
// (libFuzzer -timeout), an uncaught exception (std::terminate), and any other error code
// (Internal, VulkanFailure, DeviceLost, a GPU timeout): a blob must not get past the checks and
// then break an invariant, a Vulkan call or the device. Those abort with the message.
//
// Harness budget, not the runtime's: blobs whose tensors exceed kMaxTensorElements /
// kMaxTotalElements are not loaded, and graphs whose estimated arithmetic exceeds kMaxWork are
// loaded but not executed (returning -1 keeps them out of the corpus), so one input stays
// within milliseconds to a second on a CPU device.
//
// Deterministic variations, from a hash of the input: a quarter of the inputs are loaded from
// an address 1 byte past 8-byte alignment (the API takes any pointer; misaligned reads of
// constants are UB that UBSan reports); VKD_FUZZ_ALIGNED=1 turns that off. A quarter load with
// expose_intermediates. VKD_FUZZ_VERBOSE=1 prints each input's outcome (for replaying seeds).
//
// Structure-aware mutation: LLVMFuzzerCustomMutator (test/fuzz/BlobMutator.h), with
// libFuzzer's byte-level mutator an eighth of the time and for inputs that do not deserialize;
// a byte-mutated blob is resealed (seal_blob: new checksums) for all but one seed in 64.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/Error.h"
#include "runtime/delegate/GraphLoader.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/Context.h"
#include "serialization/Blob.h"
#include "serialization/Deserializer.h"
#include "test/fuzz/BlobMutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace vkd;
using serialization::DeserializedGraph;
using serialization::TensorValue;

constexpr int64_t kMaxTensorElements = int64_t(1) << 20;
constexpr int64_t kMaxTotalElements = int64_t(4) << 20;
constexpr double kMaxWork = 1 << 27;  // multiply-adds (or comparisons), roughly

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

const bool kVerbose = env_on("VKD_FUZZ_VERBOSE");

// One context for many inputs (creating one, and compiling its kernels, costs far more than a
// small graph). Its pipeline cache keeps every (kernel, specialization constants) pair it was
// asked for, and mutated geometry makes new ones without end, so past kMaxPipelines the context
// is replaced (memory stays bounded over millions of inputs).
constexpr size_t kMaxPipelines = 256;
// Never destroyed at exit (the driver's own teardown may have run by then).
vk::Context* g_context = nullptr;
uint64_t g_contexts_created = 0;

vk::Context& context() {
  if (!g_context) {
    vk::ContextOptions options = vk::ContextOptions::from_env();
    options.gpu_timeout = std::chrono::seconds(20);
    g_context = new vk::Context(options);
    if (g_contexts_created++ == 0) {
      std::fprintf(stderr, "fuzz_load_blob: device '%s'\n", g_context->profile().name.c_str());
    }
  }
  return *g_context;
}

void bound_context() {
  if (g_context && g_context->pipelines().pipeline_count() > kMaxPipelines) {
    delete g_context;
    g_context = nullptr;
  }
}

// Outcomes so far, printed at exit: how deep the inputs get.
struct Outcomes {
  uint64_t rejected = 0, over_budget = 0, load_errors = 0, loaded_not_run = 0, execute_errors = 0,
           ran = 0;
} outcomes;

void print_outcomes() {
  const Outcomes& o = outcomes;
  std::fprintf(stderr,
               "fuzz_load_blob: outcomes: %llu rejected by deserialize, %llu over the tensor "
               "budget, %llu load errors, %llu loaded (over the work budget), %llu execute "
               "errors, %llu loaded and ran; %llu Vulkan context(s)\n",
               (unsigned long long)o.rejected, (unsigned long long)o.over_budget,
               (unsigned long long)o.load_errors, (unsigned long long)o.loaded_not_run,
               (unsigned long long)o.execute_errors, (unsigned long long)o.ran,
               (unsigned long long)g_contexts_created);
}

const serialization::OpSignatureTable& signatures() {
  static const auto table = ops::op_registry().signatures();
  return table;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : ops::op_registry().entries()) out.push_back(e.name);
    return out;
  }();
  return names;
}

uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

[[noreturn]] void finding(const char* stage, const Error& e) {
  std::fprintf(stderr, "fuzz_load_blob: %s failed with %s, which a blob must never cause: %s\n",
               stage, std::string(to_string(e.code())).c_str(), e.what());
  std::abort();
}

// Whether the error is an acceptable answer to a bad blob (else a finding).
bool expected(const Error& e) {
  switch (e.code()) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::Unsupported:
    case ErrorCode::OutOfMemory: return true;
    default: return false;
  }
}

// The harness budget: element counts of every tensor value, and a rough count of the
// arithmetic the ops do (per op: its largest tensor times the products of its int lists, which
// hold kernel sizes, and times the per-output-channel size of a constant weight).
bool within_budget(const DeserializedGraph& g, bool* executable) {
  int64_t total = 0;
  for (const auto& v : g.values) {
    const auto* t = std::get_if<TensorValue>(&v);
    if (!t) continue;
    const int64_t n = t->spec.numel();  // sizes passed validate(): rank <= 4, each >= 1
    if (n > kMaxTensorElements) return false;
    total += n;
    if (total > kMaxTotalElements) return false;
  }
  double work = 0;
  for (const auto& op : g.ops) {
    double largest = 1, factor = 1;
    for (auto id : op.args) {
      const auto& v = g.values[id];
      if (const auto* t = std::get_if<TensorValue>(&v)) {
        const double n = static_cast<double>(t->spec.numel());
        largest = std::max(largest, n);
        if (t->constant && t->spec.sizes.size() >= 2) {
          factor *= n / static_cast<double>(t->spec.sizes[0]);  // a weight's size per output
        }
      } else if (const auto* l = std::get_if<serialization::IntListValue>(&v)) {
        for (int64_t x : l->items) factor *= std::max<double>(1.0, static_cast<double>(x));
      }
    }
    work += largest * factor;
  }
  *executable = work <= kMaxWork;
  return true;
}

void run_graph(delegate::LoadedGraph& loaded) {
  graph::ComputeGraph& graph = *loaded.graph;
  for (const auto& io : loaded.inputs) {
    const auto n = static_cast<size_t>(io.spec.numel());
    switch (io.spec.dtype) {
      case DType::Float32:
      case DType::Float16: graph.write_float(io.ref, std::vector<float>(n, 0.0f).data(), n); break;
      case DType::Int32: graph.write_int32(io.ref, std::vector<int32_t>(n, 0).data(), n); break;
      case DType::Int8x4:
        graph.write_int8(io.ref, std::vector<int8_t>(n, 0).data(), n,
                         static_cast<int8_t>(graph.zero_point(io.ref).value_or(0)));
        break;
      case DType::Int8:
        return;  // the public API refuses int8 graph inputs (Delegate.cpp host_dtype_of)
    }
  }
  graph.execute();
  for (const auto& io : loaded.outputs) {
    switch (io.spec.dtype) {
      case DType::Float32:
      case DType::Float16: graph.read_float(io.ref); break;
      case DType::Int32: graph.read_int32(io.ref); break;
      case DType::Int8x4: graph.read_int8(io.ref); break;
      case DType::Int8: break;
    }
  }
  for (size_t n = 0; n < graph.nodes().size(); ++n) graph.describe_node(n);  // `vkd inspect`
}

int run_one(const uint8_t* data, size_t size, bool expose_intermediates) {
  DeserializedGraph g;
  try {
    g = serialization::deserialize(data, size, &signatures());
  } catch (const Error& e) {
    if (kVerbose) std::fprintf(stderr, "  rejected by deserialize: %s\n", e.what());
    ++outcomes.rejected;
    return 0;  // load_graph would stop at the same check
  }
  bool executable = true;
  if (!within_budget(g, &executable)) {
    if (kVerbose) std::fprintf(stderr, "  over the harness's tensor budget: not loaded\n");
    ++outcomes.over_budget;
    return -1;
  }
  delegate::LoadedGraph loaded;
  try {
    loaded = delegate::load_graph(context(), data, size, 1 << 16, expose_intermediates);
  } catch (const Error& e) {
    if (!expected(e)) finding("load_graph", e);
    if (kVerbose) std::fprintf(stderr, "  load error: %s\n", e.what());
    ++outcomes.load_errors;
    return 0;
  }
  if (!executable) {
    if (kVerbose) std::fprintf(stderr, "  loaded; over the harness's work budget: not run\n");
    ++outcomes.loaded_not_run;
    return -1;
  }
  try {
    run_graph(loaded);
  } catch (const Error& e) {
    if (!expected(e)) finding("execute", e);
    if (kVerbose) std::fprintf(stderr, "  execute error: %s\n", e.what());
    ++outcomes.execute_errors;
    return 0;
  }
  ++outcomes.ran;
  if (kVerbose) {
    std::fprintf(stderr, "  loaded and ran: %zu op(s), %zu dispatch node(s)\n", loaded.ops.size(),
                 loaded.graph->nodes().size());
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  try {
    context();
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz_load_blob: no Vulkan device: %s\n", e.what());
    std::exit(1);
  }
  std::atexit(print_outcomes);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint64_t h = fnv1a(data, size);
  static const bool aligned_only = env_on("VKD_FUZZ_ALIGNED");
  const size_t shift = (!aligned_only && (h & 3) == 0) ? 1 : 0;
  const bool expose = ((h >> 2) & 3) == 0;
  if (kVerbose) {
    std::fprintf(stderr, "fuzz_load_blob: %zu bytes%s%s\n", size, shift ? ", misaligned" : "",
                 expose ? ", expose_intermediates" : "");
  }
  // A copy `shift` bytes past the allocator's (16-byte) alignment, ending exactly where the
  // blob does, so ASan sees any over-read.
  const std::unique_ptr<uint8_t[]> storage(new uint8_t[size + shift]);
  uint8_t* copy = storage.get() + shift;
  if (size > 0) std::memcpy(copy, data, size);
  const int result = run_one(copy, size, expose);
  bound_context();
  return result;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  // libFuzzer chains a few mutations per new input (-mutate_depth); a byte mutation mostly
  // leaves a blob that no longer deserializes, after which only byte mutations apply, so they
  // are kept rare while the structure is intact. (A structure mutation writes the blob again
  // with GraphBuilder: sealed, with checksums that match.)
  if (seed % 8 != 0) {
    auto blob = vkd::fuzz::mutate_blob_structure(data, size, seed, op_names(), &signatures());
    if (blob && blob->size() <= max_size) {
      std::memcpy(data, blob->data(), blob->size());
      return blob->size();
    }
  }
  const size_t mutated = LLVMFuzzerMutate(data, size, max_size);
  // Resealed (the blob's size and checksums recomputed) except for one seed in 64, so the
  // changed bytes reach deserialize's other checks and the loader, not only the checksums.
  if (seed % 64 != 0) serialization::seal_blob(data, mutated);
  return mutated;
}
