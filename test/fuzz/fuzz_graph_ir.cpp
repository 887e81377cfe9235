// libFuzzer target: the compiler's readers (compiler/Parse.* for the graph IR JSON,
// Safetensors.* for the weights) and, for a graph they accept, the whole compiler behind them
// (fusion and lowering, layout propagation, folding, emit + read-back; the partitioned compile
// and its host plan JSON). Input format: test/fuzz/GraphIrInput.h (JSON, then optionally a
// separator and a safetensors file).
//
// Expected answer to a bad input: a vkd::Error, except ErrorCode::Internal (a broken invariant
// inside the compiler: a check missing earlier), which aborts as a finding like a crash, a
// sanitizer report, a hang or any other exception.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "compiler/Compiler.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Error.h"
#include "test/fuzz/GraphIrInput.h"

namespace {

using namespace vkd;
using namespace vkd::compiler;

void check(const Error& e, const char* stage) {
  if (e.code() != ErrorCode::Internal) return;
  std::fprintf(stderr, "fuzz_graph_ir: %s failed with an internal error: %s\n", stage, e.what());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [json, weights_bytes] = fuzz::split_graph_ir_input(data, size);
  std::optional<SafetensorsFile> weights;
  if (weights_bytes) {
    try {
      weights = SafetensorsFile::from_bytes(
          std::vector<uint8_t>(weights_bytes->begin(), weights_bytes->end()), "fuzz.safetensors");
      for (const std::string& name : weights->names()) weights->get(name).bytes();
    } catch (const Error& e) {
      check(e, "SafetensorsFile::from_bytes");
      // the JSON is still read, without weights
    }
  }
  Graph g;
  try {
    g = parse_graph(std::string(json), "fuzz.json", weights ? &*weights : nullptr);
  } catch (const Error& e) {
    check(e, "parse_graph");
    return 0;
  }
  try {
    const CompileResult r = compile_graph(g, {});
    format_report(r);
  } catch (const Error& e) {
    check(e, "compile_graph");
  }
  try {
    const PartitionedResult p = compile_partitioned(std::move(g), {});
    std::vector<std::string> files;
    for (size_t i = 0; i < p.parts.size(); ++i) files.push_back("part" + std::to_string(i));
    partition_plan_json(p, files);
  } catch (const Error& e) {
    check(e, "compile_partitioned");
  }
  return 0;
}
