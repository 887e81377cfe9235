// vkd_et_runner: runs a .pte's "forward" through ExecuTorch's Module with VkdBackend linked in,
// like ExecuTorch's executor_runner. Inputs by position from .npy files, the rest zeros; prints
// each output (dtype, shape, first values) and, with --output-dir, writes it as DIR/output<i>.npy
// (what `vkd run` writes, so the two compare byte for byte). Delegated subgraphs run on
// VkdBackend; the other ops on ExecuTorch's optimized / quantized CPU kernels, and on those of
// the libraries --kernels loads (a model's custom ops: each registers its kernels when loaded).
//
// --bench N then times N more forward calls after 3 warm-up ones: median and min host wall per
// inference, beside the device's name, printed and (--bench-json FILE) written as JSON.
//
// usage: vkd_et_runner MODEL.pte [--input FILE.npy]... [--output-dir DIR] [--kernels LIB.so]...
//                      [--bench N [--bench-json FILE]]
// exit: 0 success, 1 ExecuTorch failed (its error logged), 2 usage or input error.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "VkdBackend.h"
#include "tools/vkd/Npy.h"

namespace {

using executorch::aten::ScalarType;
using executorch::extension::Module;
using executorch::extension::TensorPtr;
using executorch::runtime::EValue;
using vkd::cli::NpyArray;
using vkd::cli::NpyDType;

struct Args {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  std::vector<std::string> kernels;
  int bench = 0;
  std::string bench_json;
};

bool parse_args(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kernels" && i + 1 < argc) {
      args->kernels.emplace_back(argv[++i]);
    } else if (arg == "--bench" && i + 1 < argc) {
      char* end = nullptr;
      const long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || n < 1 || n > 100000) {
        std::fprintf(stderr, "vkd_et_runner: --bench wants a count in 1..100000, got '%s'\n",
                     argv[i]);
        return false;
      }
      args->bench = static_cast<int>(n);
    } else if (arg == "--bench-json" && i + 1 < argc) {
      args->bench_json = argv[++i];
    } else if ((arg == "--input" || arg == "--output-dir") && i + 1 < argc) {
      (arg == "--input" ? args->inputs.emplace_back() : args->output_dir) = argv[++i];
    } else if (arg.rfind("--", 0) != 0 && args->model.empty()) {
      args->model = arg;
    } else {
      std::fprintf(stderr, "vkd_et_runner: unexpected argument '%s'\n", arg.c_str());
      return false;
    }
  }
  if (!args->bench_json.empty() && args->bench == 0) {
    std::fprintf(stderr, "vkd_et_runner: --bench-json needs --bench N\n");
    return false;
  }
  return !args->model.empty();
}

// The dtypes VkdBackend exchanges (int64: token ids, which it narrows to int32); .npy files of
// others are refused by name.
bool npy_of(ScalarType type, NpyDType* out) {
  switch (type) {
    case ScalarType::Float: *out = NpyDType::Float32; return true;
    case ScalarType::Int: *out = NpyDType::Int32; return true;
    case ScalarType::Long: *out = NpyDType::Int64; return true;
    case ScalarType::Char: *out = NpyDType::Int8; return true;
    default: return false;
  }
}

std::string shape_of(const executorch::aten::Tensor& t) {
  return vkd::cli::npy_shape_string(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
}

void print_output(size_t index, const executorch::aten::Tensor& t) {
  std::printf("output%zu: dtype %d shape %s:", index, static_cast<int>(t.scalar_type()),
              shape_of(t).c_str());
  const size_t shown = t.numel() < 8 ? static_cast<size_t>(t.numel()) : 8;
  for (size_t i = 0; i < shown; ++i) {
    if (t.scalar_type() == ScalarType::Float) std::printf(" %.9g", t.const_data_ptr<float>()[i]);
    if (t.scalar_type() == ScalarType::Int) std::printf(" %d", t.const_data_ptr<int32_t>()[i]);
    if (t.scalar_type() == ScalarType::Char) std::printf(" %d", t.const_data_ptr<int8_t>()[i]);
  }
  std::printf("%s\n", shown < static_cast<size_t>(t.numel()) ? " ..." : "");
}

// --bench: 3 warm-up and `args.bench` timed forward calls; prints (and writes as JSON) the
// median and min host wall of one inference. 0, or 1 when a call fails.
int benchmark(Module& module, const std::vector<EValue>& inputs, const Args& args) {
  constexpr int kWarmup = 3;
  std::vector<double> wall_us;
  for (int i = 0; i < kWarmup + args.bench; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto outputs = module.forward(inputs);
    const auto end = std::chrono::steady_clock::now();
    if (!outputs.ok()) {
      std::fprintf(stderr, "vkd_et_runner: bench run %d failed (ExecuTorch error 0x%x)\n", i,
                   static_cast<unsigned>(outputs.error()));
      return 1;
    }
    if (i >= kWarmup)
      wall_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  std::sort(wall_us.begin(), wall_us.end());
  const double median = wall_us[wall_us.size() / 2];
  const char* device = vkd_executorch_device_name();
  std::printf(
      "bench: %d warm-up + %d timed forward calls on %s: host wall median %.1f us, "
      "min %.1f us\n",
      kWarmup, args.bench, device, median, wall_us.front());
  if (args.bench_json.empty()) return 0;
  FILE* f = std::fopen(args.bench_json.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "vkd_et_runner: cannot write '%s'\n", args.bench_json.c_str());
    return 1;
  }
  std::fprintf(f,
               "{\"runner\": \"vkd_et_runner\", \"device\": \"%s\", \"runs\": %d, "
               "\"host_wall_median_us\": %.3f, \"host_wall_min_us\": %.3f}\n",
               device, args.bench, median, wall_us.front());
  std::fclose(f);
  return 0;
}

int run(const Args& args) {
  Module module(args.model, Module::LoadMode::File);
  auto meta = module.method_meta("forward");
  if (!meta.ok()) {
    std::fprintf(stderr, "vkd_et_runner: %s: cannot read method 'forward' (error 0x%x)\n",
                 args.model.c_str(), static_cast<unsigned>(meta.error()));
    return 1;
  }
  if (args.inputs.size() > meta->num_inputs()) {
    std::fprintf(stderr, "vkd_et_runner: %zu --input files, the model takes %zu inputs\n",
                 args.inputs.size(), meta->num_inputs());
    return 2;
  }
  std::vector<TensorPtr> tensors;
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    auto info = meta->input_tensor_meta(i);
    if (!info.ok()) {
      std::fprintf(stderr, "vkd_et_runner: input %zu is not a tensor\n", i);
      return 2;
    }
    std::vector<executorch::aten::SizesType> sizes(info->sizes().begin(), info->sizes().end());
    const size_t bytes = info->nbytes();
    std::vector<uint8_t> data(bytes, 0);
    if (i < args.inputs.size()) {
      NpyDType want;
      const NpyArray npy = vkd::cli::read_npy(args.inputs[i]);  // NpyError names the file
      const std::vector<int64_t> shape(sizes.begin(), sizes.end());
      if (!npy_of(info->scalar_type(), &want) || npy.dtype != want || npy.shape != shape) {
        std::fprintf(stderr, "vkd_et_runner: %s: %s %s, input %zu wants dtype %d shape %s\n",
                     args.inputs[i].c_str(), vkd::cli::npy_dtype_name(npy.dtype),
                     vkd::cli::npy_shape_string(npy.shape).c_str(), i,
                     static_cast<int>(info->scalar_type()),
                     vkd::cli::npy_shape_string(shape).c_str());
        return 2;
      }
      data = npy.data;
    }
    tensors.push_back(
        executorch::extension::make_tensor_ptr(sizes, std::move(data), info->scalar_type()));
  }
  std::vector<EValue> inputs(tensors.begin(), tensors.end());
  // Outputs the .pte does not plan (alloc_graph_output=False) are written into ours.
  std::vector<TensorPtr> output_buffers;
  for (size_t i = 0; i < meta->num_outputs(); ++i) {
    auto info = meta->output_tensor_meta(i);
    if (!info.ok() || info->is_memory_planned()) continue;
    std::vector<executorch::aten::SizesType> sizes(info->sizes().begin(), info->sizes().end());
    output_buffers.push_back(executorch::extension::make_tensor_ptr(
        sizes, std::vector<uint8_t>(info->nbytes()), info->scalar_type()));
    const auto status = module.set_output(EValue(output_buffers.back()), i);
    if (status != executorch::runtime::Error::Ok) {
      std::fprintf(stderr, "vkd_et_runner: cannot set output %zu (ExecuTorch error 0x%x)\n", i,
                   static_cast<unsigned>(status));
      return 1;
    }
  }
  // As `vkd run`: a missing --output-dir is created (one level), before the run.
  std::error_code ec;
  if (!args.output_dir.empty() && !std::filesystem::exists(args.output_dir, ec) &&
      !std::filesystem::create_directory(args.output_dir, ec)) {
    std::fprintf(stderr, "vkd_et_runner: cannot create output directory '%s': %s\n",
                 args.output_dir.c_str(), ec.message().c_str());
    return 2;
  }
  auto outputs = module.forward(inputs);
  if (!outputs.ok()) {
    std::fprintf(stderr, "vkd_et_runner: forward failed (ExecuTorch error 0x%x)\n",
                 static_cast<unsigned>(outputs.error()));
    return 1;
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const auto& t = (*outputs)[i].toTensor();
    print_output(i, t);
    if (args.output_dir.empty()) continue;
    NpyArray npy;
    if (!npy_of(t.scalar_type(), &npy.dtype)) {
      std::fprintf(stderr, "vkd_et_runner: output %zu: dtype %d has no .npy form here\n", i,
                   static_cast<int>(t.scalar_type()));
      return 1;
    }
    npy.shape.assign(t.sizes().begin(), t.sizes().end());
    const auto* p = static_cast<const uint8_t*>(t.const_data_ptr());
    npy.data.assign(p, p + t.nbytes());
    vkd::cli::write_npy(args.output_dir + "/output" + std::to_string(i) + ".npy", npy);
  }
  return args.bench > 0 ? benchmark(module, inputs, args) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: vkd_et_runner MODEL.pte [--input FILE.npy]... [--output-dir DIR] "
                 "[--kernels LIB.so]... [--bench N [--bench-json FILE]]\n");
    return 2;
  }
  // Referencing the backend keeps its library linked, and so VkdBackend registered.
  if (vkd_executorch_registration_error() != 0) {
    std::fprintf(stderr, "vkd_et_runner: VkdBackend did not register (ExecuTorch error 0x%x)\n",
                 static_cast<unsigned>(vkd_executorch_registration_error()));
    return 1;
  }
  for (const std::string& library : args.kernels) {
    // Kept loaded for the process: the registry holds pointers into it.
    if (dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::fprintf(stderr, "vkd_et_runner: --kernels %s: %s\n", library.c_str(), dlerror());
      return 2;
    }
  }
  try {
    return run(args);
  } catch (const std::exception& e) {  // NpyError: a missing or malformed input file
    std::fprintf(stderr, "vkd_et_runner: %s\n", e.what());
    return 2;
  }
}
