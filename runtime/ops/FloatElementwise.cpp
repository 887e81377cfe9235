// Op family: float element-wise ops (float_add, float_mul, float_div, float_affine_scalar,
// float_clamp, float_gelu), one shader (float_elementwise.glsl) with the op as its variant.
// Anatomy: push-constant struct (mirroring the shader), the broadcast strides, the node
// functions, the registry entries.
#include "runtime/ops/FloatElementwise.h"

#include <array>
#include <string>
#include <utility>

#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/float_elementwise.glsl.
struct FloatElementwisePush {
  std::array<int32_t, 4> sizes;
  std::array<int32_t, 4> out_strides, a_strides, b_strides;
  float s0, s1;
  int32_t chunks;
};

// The variant index of each op (the OP axis of shaders/float_elementwise.variants.json).
enum Variant { kAdd = 0, kMul = 1, kDiv = 2, kAffine = 3, kClamp = 4, kGelu = 5, kGeluTanh = 6 };

const char* op_name(FloatBinaryOp op) {
  switch (op) {
    case FloatBinaryOp::Add: return "float_add";
    case FloatBinaryOp::Mul: return "float_mul";
    case FloatBinaryOp::Div: return "float_div";
  }
  return "?";
}

// The element strides of operand `t` read at the output's [N, C, H, W] coordinates: its own
// strides, 0 along each dim where it has size 1 and the output more (numpy broadcasting).
std::array<int32_t, 4> broadcast_strides(const std::string& op, const graph::GpuTensor& t,
                                         const graph::GpuTensor& out, const char* what) {
  const TensorSpec& s = t.spec();
  VKD_CHECK(s.sizes.size() <= out.spec().sizes.size(), ErrorCode::InvalidArgument, op, ": ", what,
            " ", s.describe(), " has more dims than the output ", out.spec().describe());
  const Dims4 d = s.dims4(), o = out.spec().dims4();
  const std::array<int64_t, 4> ds{d.n, d.c, d.h, d.w}, os{o.n, o.c, o.h, o.w};
  std::array<int32_t, 4> strides = float_tile_meta(s);
  for (size_t k = 0; k < 4; ++k) {
    VKD_CHECK(ds[k] == os[k] || ds[k] == 1, ErrorCode::InvalidArgument, op, ": ", what, " ",
              s.describe(), " does not broadcast to the output ", out.spec().describe());
    if (ds[k] != os[k]) strides[k] = 0;
  }
  return strides;
}

// One invocation per 4 widths of a row of the output.
void add_node(graph::ComputeGraph& graph, const std::string& op, Variant variant,
              std::vector<graph::ValueRef> bindings, FloatElementwisePush push) {
  const Dims4 d = graph.spec(bindings[0]).dims4();
  const int64_t chunks = d.n * d.c * d.h * div_up(d.w, 4);
  push.sizes = nchw_sizes(d);
  push.chunks = static_cast<int32_t>(chunks);
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::float_elementwise[variant];
  node.bindings = std::move(bindings);
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(chunks));
  graph.add_node(std::move(node));
}

// A unary op: float32 buffers, the input broadcast to the output's sizes (aten.expand_as is a
// broadcast float_affine_scalar by 1 plus -0.0).
void add_unary_node(graph::ComputeGraph& graph, const std::string& op, Variant variant,
                    graph::ValueRef input, graph::ValueRef output, float s0, float s1) {
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_operand(op, in, "input");
  check_float_operand(op, out, "output");
  FloatElementwisePush push{};
  push.out_strides = float_tile_meta(out.spec());
  push.a_strides = broadcast_strides(op, in, out, "input");
  push.s0 = s0;
  push.s1 = s1;
  add_node(graph, op, variant, {output, input}, push);
}

}  // namespace

void add_float_binary_node(graph::ComputeGraph& graph, FloatBinaryOp op, graph::ValueRef a,
                           graph::ValueRef b, graph::ValueRef output, float alpha) {
  const std::string name = op_name(op);
  const auto& ta = graph.tensor(a);
  const auto& tb = graph.tensor(b);
  const auto& out = graph.tensor(output);
  check_float_operand(name, ta, "a");
  check_float_operand(name, tb, "b");
  check_float_operand(name, out, "output");
  FloatElementwisePush push{};
  push.out_strides = float_tile_meta(out.spec());
  push.a_strides = broadcast_strides(name, ta, out, "a");
  push.b_strides = broadcast_strides(name, tb, out, "b");
  push.s0 = alpha;
  const Variant variant = op == FloatBinaryOp::Add ? kAdd : op == FloatBinaryOp::Mul ? kMul : kDiv;
  add_node(graph, name, variant, {output, a, b}, push);
}

void add_float_affine_scalar_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                  graph::ValueRef output, float multiplier, float addend) {
  add_unary_node(graph, "float_affine_scalar", kAffine, input, output, multiplier, addend);
}

void add_float_clamp_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                          float lo, float hi) {
  add_unary_node(graph, "float_clamp", kClamp, input, output, lo, hi);
}

void add_float_gelu_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                         GeluApproximate approximate) {
  add_unary_node(graph, "float_gelu", approximate == GeluApproximate::Tanh ? kGeluTanh : kGelu,
                 input, output, 0.0f, 0.0f);
}

// --- registry entries -------------------------------------------------------------

namespace {

float float32_arg(const OpCall& call, const char* name) {
  return static_cast<float>(call.float_arg(name));
}

template <FloatBinaryOp Op>
void build_binary(const OpCall& call) {
  const float alpha = Op == FloatBinaryOp::Add ? float32_arg(call, "alpha") : 1.0f;
  add_float_binary_node(call.graph(), Op, call.tensor("a"), call.tensor("b"), call.tensor("output"),
                        alpha);
}

void build_affine_scalar(const OpCall& call) {
  add_float_affine_scalar_node(call.graph(), call.tensor("input"), call.tensor("output"),
                               float32_arg(call, "multiplier"), float32_arg(call, "addend"));
}

void build_clamp(const OpCall& call) {
  add_float_clamp_node(call.graph(), call.tensor("input"), call.tensor("output"),
                       float32_arg(call, "min"), float32_arg(call, "max"));
}

// approximate 0 = erf ('none'), 1 = tanh, as q8ta_linear_gelu takes it.
void build_gelu(const OpCall& call) {
  const GeluApproximate approximate =
      call.int32_arg("approximate", 0, 1) == 0 ? GeluApproximate::Erf : GeluApproximate::Tanh;
  add_float_gelu_node(call.graph(), call.tensor("input"), call.tensor("output"), approximate);
}

}  // namespace

void register_float_elementwise_ops(OpRegistry& registry) {
  registry.add("float_add", build_binary<FloatBinaryOp::Add>);
  registry.add("float_mul", build_binary<FloatBinaryOp::Mul>);
  registry.add("float_div", build_binary<FloatBinaryOp::Div>);
  registry.add("float_affine_scalar", build_affine_scalar);
  registry.add("float_clamp", build_clamp);
  registry.add("float_gelu", build_gelu);
}

}  // namespace vkd::ops
