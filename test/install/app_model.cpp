// The whole-model APIs (vkdelegate/Model.hpp, vkdelegate/vkd_model.h) used from outside the
// project, against the INSTALLED libvkdmodel.so (which brings libvkdelegate.so): the install
// test's blob loaded as a model of one GPU step, run, compared exactly with the expected output;
// a missing plan refused through the C API with the file named.
//
// usage: vkd_install_model_app MODEL.vkd INPUT.bin EXPECTED.bin
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <vkdelegate/vkd_model.h>
#include <vkdelegate/Model.hpp>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.vkd INPUT.bin EXPECTED.bin\n", argv[0]);
    return 2;
  }
  std::vector<std::vector<char>> files;
  for (int i = 2; i < 4; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  vkd::ModelOptions options;
  const char* v = std::getenv("VKD_VALIDATION");
  options.delegate.validation = v != nullptr && std::strcmp(v, "0") != 0;
  std::unique_ptr<vkd::Model> model;
  std::string error;
  const vkd::Status st = vkd::Model::load(argv[1], options, &model, &error);
  if (st != vkd::Status::Ok) {
    std::fprintf(stderr, "load: %s: %s\n", vkd::status_name(st), error.c_str());
    return 1;
  }
  const vkd::TensorInfo in = model->input(0), out = model->output(0);
  std::vector<char> result(out.host_bytes());
  if (model->execute({{files[0].data(), files[0].size(), in.host_dtype, in.sizes}},
                     {{result.data(), result.size(), out.host_dtype, out.sizes}}) !=
      vkd::Status::Ok) {
    std::fprintf(stderr, "execute: %s\n", model->last_error().c_str());
    return 1;
  }
  for (const vkd::StepTiming& t : model->last_timings()) {
    std::printf("%s: %.1f us host wall, %zu dispatch node(s)\n", t.label.c_str(), t.wall_us,
                t.profile.size());
  }
  if (options.delegate.validation && model->validation_message_count() != 0) {
    std::fprintf(stderr, "FAIL: validation layer messages\n");
    return 1;
  }
  if (result != files[1]) {
    std::fprintf(stderr, "FAIL: output differs from %s\n", argv[3]);
    return 1;
  }
  vkd_model* handle = nullptr;
  if (vkd_model_load("missing.partition.json", nullptr, nullptr, &handle) == VKD_OK ||
      std::strstr(vkd_model_load_error(), "missing.partition.json") == nullptr) {
    std::fprintf(stderr, "FAIL: vkd_model_load of a missing plan: '%s'\n", vkd_model_load_error());
    return 1;
  }
  std::printf("PASS (model API)\n");
  return 0;
}
