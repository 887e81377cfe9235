// aten.embedding: rows of a table gathered by token ids (BERT's word, position and token type
// embeddings, a ViT's position table). Float32 or int8 tables; the ids are int32 (an int64
// graph input of ids is narrowed at the API: Value::caller_int64).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of aten.embedding(weight [V, C], indices [...]): out[..., c] =
// weight[indices[...], c], of weight's dtype (float32 or int8: a copy, bit-exact) and shape
// indices.shape + [C]. padding_idx, scale_grad_by_freq and sparse only change the gradient:
// ignored. An index outside [0, V) is an error naming the node, the index's position and value.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

std::vector<HostTensor> reference_embedding(const ReferenceContext& c) {
  const HostTensor& weight = c.input(0, "weight");
  const HostTensor& indices = c.input(1, "indices");
  c.require(weight.dtype == DType::Float32 || weight.dtype == DType::Int8,
            "weight must be float32 or int8");
  c.expect_dtype(indices, DType::Int32, "indices");
  c.require(weight.shape.size() == 2, "weight must be 2-D [V, C]");
  const int64_t rows = weight.shape[0], cols = weight.shape[1];
  std::vector<int64_t> shape = indices.shape;
  shape.push_back(cols);
  HostTensor out = make_tensor(weight.dtype, shape);
  const size_t row_bytes = static_cast<size_t>(cols) * elem_bytes(weight.dtype);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t id = get_i32(indices, i);
    c.require(id >= 0 && id < rows, "indices element " + std::to_string(i) + " is " +
                                        std::to_string(id) + ", outside the table's [0, " +
                                        std::to_string(rows) + ")");
    std::copy_n(weight.bytes.begin() + static_cast<int64_t>(row_bytes) * id, row_bytes,
                out.bytes.begin() + static_cast<int64_t>(row_bytes) * i);
  }
  return {out};
}

}  // namespace vkd::compiler

// aten.embedding (float32 table [V, C], int32 ids) -> q => q8ta_embedding: the table quantized
// here with the quantize's parameters, by the reference (exact: quantize(W)[ids] =
// quantize(W[ids]) element by element), so the kernel only gathers int8 rows.
// aten.embedding (float32 rows) -> aten.add.Tensor (alpha 1) with a float32 constant
// [-> aten.add.Tensor with another] => embedding_add: the rows plus the constants, added in the
// graph's order, each add rounded to float32 (never c1 + c2 folded first: float addition is
// not associative), float_add's bits. BERT's word rows + position rows + token type rows: one
// dispatch, not three. At most kMaxAddends (2) adds (the kernel's bindings); a longer chain
// leaves the rest to float_add. Each add: alpha 1, its input read by it alone, its other operand
// a float32 constant, not a graph output, whose sizes after leading 1s end the rows' (the kernel
// reads it at i % its count), and its output of the rows' shape. With none of this after it,
// the float32 rows (lower_embedding) => embedding.
namespace vkd::compiler::fusion {
namespace {

constexpr const char* kQ8taEmbedding = "q8ta_embedding";
constexpr const char* kEmbeddingAdd = "embedding_add";
constexpr size_t kMaxAddends = 2;  // runtime/ops/Embedding.h, kMaxEmbeddingAddends

// "" when embedding `n` reads a float32 constant table and int32 ids the device holds.
std::string check_embedding_operands(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return "malformed embedding";
  const Value& w = g.value(n.inputs[0]);
  const Value& ids = g.value(n.inputs[1]);
  if (!w.is_constant() || w.dtype != DType::Float32) {
    return "the table " + quoted(w.name) + " is not a float32 constant";
  }
  if (ids.is_constant()) return "the ids " + quoted(ids.name) + " are a constant";
  if (ids.shape.empty() || ids.shape.size() > 3) {
    return "the ids " + quoted(ids.name) + " have rank " + std::to_string(ids.shape.size()) +
           " (the kernel takes 1 to 3)";
  }
  return "";
}

// The table quantized by quantize node `q` (the reference's quantize, run by the interpreter).
std::vector<uint8_t> quantized_table(InterpretFn interpret, const Graph& g, const Value& w, int q,
                                     std::string& why) {
  Graph t;
  Value table;
  table.name = "table";
  table.shape = w.shape;
  t.add_value(table);
  t.inputs = {table.name};
  Node n = g.nodes[q];
  n.inputs = {table.name};
  n.outputs = {"table_q"};
  Value out = g.value(g.nodes[q].outputs[0]);
  out.name = "table_q";
  out.shape = w.shape;
  t.add_value(out);
  t.nodes.push_back(std::move(n));
  t.outputs = {"table_q"};
  HostTensor in;
  in.shape = w.shape;
  in.bytes = *w.data;
  try {
    return interpret(t, {{table.name, in}}).at("table_q").bytes;
  } catch (const Error& e) {
    why = std::string("the reference cannot quantize the table: ") + e.what();
    return {};
  }
}

// "" when add node `add` reading the rows so far (`rows`) adds `other` as embedding_add does.
std::string check_addend(const Graph& g, const Node& add, const std::string& rows,
                         const std::string& other) {
  const std::optional<double> alpha = opt_float(add, "alpha");
  if (arg_present(add, "alpha") && (!alpha || *alpha != 1.0)) return "alpha is not 1";
  if (other == rows) return "both operands are the rows";
  const Value& c = g.value(other);
  if (!c.is_constant()) return quoted(other) + " is not a constant";
  if (c.dtype != DType::Float32) return quoted(other) + " is not float32";
  if (std::find(g.outputs.begin(), g.outputs.end(), other) != g.outputs.end()) {
    return quoted(other) + " is a graph output";
  }
  const std::vector<int64_t>& shape = g.value(rows).shape;
  if (g.value(add.outputs[0]).shape != shape || g.value(add.outputs[0]).dtype != DType::Float32) {
    return "the sum " + shape_str(g.value(add.outputs[0]).shape) + " is not float32 of the rows' " +
           shape_str(shape);
  }
  std::vector<int64_t> dims = c.shape;
  while (!dims.empty() && dims.front() == 1) dims.erase(dims.begin());
  if (dims.size() > shape.size() ||
      !std::equal(dims.begin(), dims.end(), shape.end() - static_cast<int64_t>(dims.size()))) {
    return quoted(other) + " " + shape_str(c.shape) +
           " is broadcast along an inner dim; embedding_add takes the rows' trailing dims " +
           shape_str(shape);
  }
  return "";
}

// The float rows `rows` plus the chain of adds after them, as far as it fits (at most
// kMaxAddends); the first add's reason when it does not fit.
struct AddChain {
  std::vector<int> nodes;
  std::vector<std::string> addends, dead;
  std::string output, why;
  int refused = -1;  // the first add, when it does not fit
};

AddChain match_add_chain(const Graph& g, const std::string& rows) {
  AddChain c;
  std::string v = rows;
  while (c.nodes.size() < kMaxAddends && single_use(g, v).empty()) {
    const int a = g.consumers(v)[0];
    const Node& add = g.nodes[a];
    if (add.op != kAdd || add.inputs.size() != 2 || add.outputs.size() != 1) break;
    const std::string other = add.inputs[0] == v ? add.inputs[1] : add.inputs[0];
    const std::string why = check_addend(g, add, v, other);
    if (!why.empty()) {
      if (c.nodes.empty()) c.refused = a, c.why = why;
      break;
    }
    c.nodes.push_back(a);
    c.addends.push_back(other);
    c.dead.push_back(v);
    v = add.outputs[0];
  }
  c.output = v;
  return c;
}

// Float embedding `i` followed by adds of constants => embedding_add (reported), or nothing.
void fuse_embedding_adds(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (!state.may_target(kEmbeddingAdd)) return;  // the rows and the adds apart
  const AddChain c = match_add_chain(g, n.outputs[0]);
  if (c.nodes.empty() && c.refused < 0) return;  // no add after the rows: lower_embedding
  std::vector<int> nodes = {i};
  nodes.insert(nodes.end(), c.nodes.begin(), c.nodes.end());
  if (c.refused >= 0) nodes.push_back(c.refused);
  const std::string chain = state.chain_of({}, i, std::vector<int>(nodes.begin() + 1, nodes.end()));
  std::string why = c.why;
  if (why.empty()) why = check_embedding_operands(g, n);
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, kEmbeddingAdd, why);

  Fusion f;
  f.nodes = nodes;
  f.dead = c.dead;
  Node fused;
  fused.op = kEmbeddingAdd;
  fused.inputs = {n.inputs[1], n.inputs[0]};
  fused.inputs.insert(fused.inputs.end(), c.addends.begin(), c.addends.end());
  fused.outputs = {c.output};
  fused.origin = state.fused_origin(i, fused.op);
  std::string added;
  for (const std::string& a : c.addends) added += (added.empty() ? "" : " then ") + quoted(a);
  f.node = std::move(fused);
  state.commit(std::move(f), chain, " (adds " + added + " in order)");
}

}  // namespace

void fuse_embedding(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.outputs.size() != 1) return;
  const Tail tail = match_tail(g, n.outputs[0]);
  if (tail.kind == Tail::None) return fuse_embedding_adds(state, i);  // float rows
  if (!state.allowed(i, kQ8taEmbedding)) return;
  std::vector<int> nodes = {i};
  nodes.insert(nodes.end(), tail.nodes.begin(), tail.nodes.end());
  const std::string chain = state.chain_of({}, i, tail.nodes);
  std::string why = check_embedding_operands(g, n);
  if (why.empty() && tail.kind == Tail::Half) why = tail.why;
  if (why.empty() &&
      (tail.act >= 0 || tail.out_q.quant_min != -128 || tail.out_q.quant_max != 127)) {
    why = "the quantize is not alone into the full int8 range";
  }
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  std::vector<uint8_t> table;
  if (why.empty()) table = quantized_table(state.interpret, g, g.value(n.inputs[0]), tail.q, why);
  if (!why.empty()) return state.not_fused(chain, nodes, kQ8taEmbedding, why);

  Fusion f;
  f.nodes = nodes;
  f.dead = tail.values;
  const std::string output = g.nodes[tail.q].outputs[0];
  Value w;
  w.name = state.graph.unique_name(n.inputs[0] + "_int8");
  w.dtype = DType::Int8;
  w.shape = g.value(n.inputs[0]).shape;
  w.data = std::move(table);
  Node fused;
  fused.op = kQ8taEmbedding;
  fused.inputs = {n.inputs[1], w.name};
  fused.outputs = {output};
  fused.args["output_scale"] = tail.out_q.scale;
  fused.args["output_zero_point"] = tail.out_q.zero_point;
  fused.origin = state.fused_origin(i, fused.op);
  const std::string name = w.name;
  state.graph.add_value(std::move(w));  // after the last use of `n`: it may move the nodes
  f.node = std::move(fused);
  state.produced[output] = tail.out_q;
  state.commit(std::move(f), chain, " (table " + quoted(name) + ")");
}

// A float embedding left after fusion: the float32 rows => embedding.
std::string lower_embedding(FuseState& state, Node& node, int where) {
  if (!check_embedding_operands(state.graph, node).empty()) return "";
  if (!state.may_target("embedding")) return "";
  if (node.origin.empty()) node.origin = origin_of(node, where);
  node.op = "embedding";
  node.inputs = {node.inputs[1], node.inputs[0]};
  node.args.clear();
  return node.op;
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// weight: float32 or int8 [V, C]; indices: int32 of any rank up to 3 -> weight's dtype,
// indices.shape + [C].
std::vector<TypedShape> embedding(const ShapeContext& c) {
  const Value& weight = c.in("weight");
  const Value& indices = c.in("indices");
  if (weight.dtype != DType::Float32 && weight.dtype != DType::Int8) {
    c.fail(c.input_field("weight"), "expected float32 or int8, got ", to_string(weight.dtype));
  }
  c.rank(weight, "weight", 2);
  c.dtype(indices, "indices", DType::Int32);
  std::vector<int64_t> shape = indices.shape;
  shape.push_back(weight.shape[1]);
  return {{weight.dtype, shape}};
}

}  // namespace

std::vector<EdgeOp> embedding_edge_ops() {
  return {EdgeOp{"aten.embedding",
                 {"weight", "indices"},
                 2,
                 {optional_arg("padding_idx", Lit::Int, ArgValue(int64_t{-1}), false),
                  optional_arg("scale_grad_by_freq", Lit::Bool, ArgValue(false), false),
                  optional_arg("sparse", Lit::Bool, ArgValue(false), false)},
                 1,
                 embedding}
              .computed_by(reference_embedding)
              .fused_by(fusion::fuse_embedding, {"q8ta_embedding", "embedding_add"})
              .lowered_by(fusion::lower_embedding, {"embedding"})};
}

}  // namespace vkd::compiler
