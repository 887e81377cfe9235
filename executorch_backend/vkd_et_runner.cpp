// vkd_et_runner: runs a .pte's "forward" through ExecuTorch's Module with VkdBackend linked in,
// like ExecuTorch's executor_runner. Inputs by position from .npy files, the rest zeros; prints
// each output (dtype, shape, first values) and, with --output-dir, writes it as DIR/output<i>.npy
// (what `vkd run` writes, so the two compare byte for byte). Delegated subgraphs run on
// VkdBackend; the other ops on ExecuTorch's optimized / quantized CPU kernels, and on those of
// the libraries --kernels loads (a model's custom ops: each registers its kernels when loaded).
//
// usage: vkd_et_runner MODEL.pte [--input FILE.npy]... [--output-dir DIR] [--kernels LIB.so]...
// exit: 0 success, 1 ExecuTorch failed (its error logged), 2 usage or input error.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <dlfcn.h>

#include <cstdio>
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
};

bool parse_args(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kernels" && i + 1 < argc) {
      args->kernels.emplace_back(argv[++i]);
    } else if ((arg == "--input" || arg == "--output-dir") && i + 1 < argc) {
      (arg == "--input" ? args->inputs.emplace_back() : args->output_dir) = argv[++i];
    } else if (arg.rfind("--", 0) != 0 && args->model.empty()) {
      args->model = arg;
    } else {
      std::fprintf(stderr, "vkd_et_runner: unexpected argument '%s'\n", arg.c_str());
      return false;
    }
  }
  return !args->model.empty();
}

// The three dtypes VkdBackend exchanges; .npy files of others are refused by name.
bool npy_of(ScalarType type, NpyDType* out) {
  switch (type) {
    case ScalarType::Float: *out = NpyDType::Float32; return true;
    case ScalarType::Int: *out = NpyDType::Int32; return true;
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
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: vkd_et_runner MODEL.pte [--input FILE.npy]... [--output-dir DIR] "
                 "[--kernels LIB.so]...\n");
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
