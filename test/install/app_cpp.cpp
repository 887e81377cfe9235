// The C++ API (vkdelegate/Delegate.hpp) used from outside the project, against the INSTALLED
// libvkdelegate.so: checks that what a C++ app naturally calls is exported.
//
// usage: vkd_install_app_cpp MODEL.vkd INPUT.bin EXPECTED.bin
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <vkdelegate/Delegate.hpp>

namespace {
std::vector<char> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.vkd INPUT.bin EXPECTED.bin\n", argv[0]);
    return 2;
  }
  const std::vector<char> blob = read_file(argv[1]);
  const std::vector<char> input = read_file(argv[2]);
  const std::vector<char> expected = read_file(argv[3]);

  vkd::DelegateOptions options;
  const char* v = std::getenv("VKD_VALIDATION");
  options.validation = v != nullptr && std::strcmp(v, "0") != 0;
  std::unique_ptr<vkd::Delegate> delegate;
  std::string error;
  vkd::Status st = vkd::Delegate::create(blob.data(), blob.size(), options, &delegate, &error);
  if (st != vkd::Status::Ok) {
    std::fprintf(stderr, "create: %s: %s\n", vkd::status_name(st), error.c_str());
    return 1;
  }
  if (delegate->input_count() != 1 || delegate->output_count() != 1) {
    std::fprintf(stderr, "expected 1 input and 1 output\n");
    return 1;
  }
  const vkd::TensorInfo in = delegate->input(0);
  const vkd::TensorInfo out = delegate->output(0);
  std::printf("device: %s\n", delegate->device_name().c_str());
  std::printf("input '%s' %s %zu bytes, output '%s' %s %zu bytes\n", in.name.c_str(),
              vkd::host_dtype_name(in.host_dtype), in.host_bytes(), out.name.c_str(),
              vkd::host_dtype_name(out.host_dtype), out.host_bytes());
  if (input.size() != in.host_bytes() || expected.size() != out.host_bytes()) {
    std::fprintf(stderr, "input/expected file sizes do not match the model\n");
    return 1;
  }

  std::vector<char> result(out.host_bytes());
  vkd::ConstTensorView iv;
  iv.data = input.data();
  iv.bytes = input.size();
  iv.dtype = in.host_dtype;
  iv.sizes = in.sizes;
  vkd::TensorView ov;
  ov.data = result.data();
  ov.bytes = result.size();
  ov.dtype = out.host_dtype;
  ov.sizes = out.sizes;
  st = delegate->execute({iv}, {ov});
  if (st != vkd::Status::Ok) {
    std::fprintf(stderr, "execute: %s: %s\n", vkd::status_name(st), delegate->last_error().c_str());
    return 1;
  }
  for (const vkd::NodeProfile& node : delegate->last_profile()) {
    std::printf("  %-18s %-40s %10.2f us\n", node.op.c_str(), node.kernel.c_str(), node.gpu_us);
  }
  const vkd::MemoryReport mem = delegate->memory();
  std::printf("device bytes %llu, validation messages %llu\n",
              static_cast<unsigned long long>(mem.device_bytes),
              static_cast<unsigned long long>(delegate->validation_message_count()));
  if (options.validation && delegate->validation_message_count() != 0) {
    std::fprintf(stderr, "FAIL: validation layer messages\n");
    return 1;
  }
  if (std::memcmp(result.data(), expected.data(), result.size()) != 0) {
    std::fprintf(stderr, "FAIL: output differs from %s\n", argv[3]);
    return 1;
  }
  std::printf("PASS (C++ API)\n");
  return 0;
}
