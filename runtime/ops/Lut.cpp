// Op family: q8ta_lut (an int8 element-wise function by a 256-entry table).
// Anatomy: push-constant struct (mirroring the shader), the table packer, add_q8ta_lut_node,
// the registry entry.
#include "runtime/ops/Lut.h"

#include <string>
#include <utility>

#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_lut.glsl.
struct LutPush {
  std::array<int32_t, 4> sizes;
  int32_t chunk_count, word_count, out_zp, stride;
};

// Chunks each invocation maps (the table copy into shared memory amortized over them; on the
// H100 4 gave 50 us at 1x64x1024x1024, 1 gave 55, 8 gave 52).
constexpr int64_t kChunksPerInvocation = 4;

// The table as the kernel indexes it: by the input's unsigned byte u, word u = the output byte
// (zero-extended) of int8 input int8(u), i.e. table[int8(u) + 128]; little-endian words.
std::vector<uint8_t> pack_table(const std::array<int8_t, 256>& table) {
  std::vector<uint8_t> bytes(4 * 256, 0);
  for (int u = 0; u < 256; ++u) bytes[4 * u] = static_cast<uint8_t>(table[u ^ 0x80]);
  return bytes;
}

}  // namespace

void add_q8ta_lut_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                       const LutParams& params) {
  const std::string op = "q8ta_lut";
  const int64_t words = check_elementwise_int8x4(op, graph.tensor(input), graph.tensor(output));
  check_quant_params(op, params.input);
  check_quant_params(op, params.output);
  const TensorSpec& so = graph.spec(output);
  const Dims4 d = so.dims4();
  const int64_t chunks = (words + 3) / 4;
  const TensorSpec table_spec{{256}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const auto table = graph.add_constant(
      table_spec, graph.tensor(output).name() + ".table",
      [t = params.table] { return pack_table(t); }, 256);
  const int64_t stride = div_up(chunks, kChunksPerInvocation);
  const LutPush push{nchw_sizes(d), int32_t(chunks), int32_t(words), params.output.zero_point,
                     int32_t(stride)};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_lut[int8_layout_index(so.layout)];
  node.bindings = {output, input, table};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(stride));
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

// The loader checked the table's dtype (int8) and rank (1) against the schema.
void build_lut(const OpCall& call) {
  LutParams p;
  p.input = call.quant("input");
  p.output = call.quant("output");
  const auto& t = call.constant("table");
  VKD_CHECK(t.spec.numel() == 256 && t.constant->size == 256, ErrorCode::InvalidArgument,
            call.label(), ": table must hold 256 int8 entries, got ", t.spec.numel());
  for (size_t i = 0; i < 256; ++i) p.table[i] = static_cast<int8_t>(t.constant->data[i]);
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output.zero_point);
  add_q8ta_lut_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

}  // namespace

void register_lut_ops(OpRegistry& registry) { registry.add("q8ta_lut", build_lut); }

}  // namespace vkd::ops
