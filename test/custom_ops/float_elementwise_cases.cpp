// ACCU and PERF cases for float_add / float_mul / float_div / float_affine_scalar / float_clamp /
// float_gelu (runtime/ops/FloatElementwise.h): equal shapes (the awkward ones: widths not a
// multiple of 4, ranks 1 to 4), a [.., T, 1] operand against [.., T, C] in either position, a [C]
// operand, a float32 constant operand of the full shape or broadcast, outputs in every float buffer
// layout, and the unary ops broadcasting (expand_as). Inputs mix ordinary values with +-0, +-inf,
// NaN and values whose products overflow; every output is compared bit for bit with
// test/reference/FloatElementwiseReference.h (two NaNs match whatever their payloads), except
// float_gelu's: within its bound 1e-6 |x| of the reference's (an erf approximation; the shader's
// header derives the bound), on MiniLM's FFN shape [1, 128, 1536], awkward shapes and values
// spread over [-12, 12] with +-0, +-inf, NaN and +-1e20. PERF: MiniLM's residual add and pooling
// product, [1, 128, 384], and its FFN's gelu.
#include <cstring>
#include <limits>

#include "runtime/graph/ConstantPacker.h"
#include "runtime/ops/FloatElementwise.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/FloatElementwiseReference.h"

namespace vkd::custom_ops {
namespace {

enum class Op { Add, Mul, Div, Affine, Clamp, Gelu, GeluTanh };

const char* op_name(Op op) {
  switch (op) {
    case Op::Add: return "float_add";
    case Op::Mul: return "float_mul";
    case Op::Div: return "float_div";
    case Op::Affine: return "float_affine_scalar";
    case Op::Clamp: return "float_clamp";
    case Op::Gelu: return "float_gelu";
    case Op::GeluTanh: return "float_gelu";
  }
  return "?";
}

// Ordinary values in [-4, 4] with, now and then, +-0, +-inf, NaN or +-1e20 (whose products
// overflow); never a subnormal (a device may flush those).
std::vector<float> special_floats(size_t n, std::mt19937& rng) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f,  -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                            1e20f, -1e20f};
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  std::vector<float> v(n);
  for (float& x : v) {
    const int k = pick(rng);
    x = k < 7 ? specials[k] : value(rng);
  }
  return v;
}

// What float_gelu is checked on: values over [-12, 12] (the erf form's clamp at |x / sqrt(2)| = 4,
// the tanh form's exp clamp and both saturations), now and then a special of special_floats.
std::vector<float> gelu_floats(size_t n, std::mt19937& rng) {
  std::vector<float> v = special_floats(n, rng);
  std::uniform_real_distribution<float> value(-12.0f, 12.0f);
  for (size_t i = 0; i < n; i += 2) v[i] = value(rng);
  return v;
}

// Within 1e-6 |x| of the reference (float_gelu's bound); NaN where it is NaN, infinities equal.
void compare_within_gelu_bound(const std::vector<float>& x, const std::vector<float>& got,
                               const std::vector<float>& want, AccuResult& r) {
  if (got.size() != want.size() || x.size() != want.size()) {
    r.mismatches += static_cast<int64_t>(std::max(got.size(), want.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    const bool ok = std::isnan(want[i])   ? std::isnan(got[i])
                    : std::isinf(want[i]) ? got[i] == want[i]
                                          : err <= 1e-6 * std::fabs(double(x[i]));
    if (!ok) {
      ++r.mismatches;
      r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
    }
    ++r.checked;
  }
}

// Bit for bit; two NaNs match (x86's 0 / 0 is the negative default NaN, a GPU's another).
void compare_bits(const std::vector<float>& got, const std::vector<float>& want, AccuResult& r) {
  if (got.size() != want.size()) {
    r.mismatches += static_cast<int64_t>(std::max(got.size(), want.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t g = 0, w = 0;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    const bool same = g == w || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same) {
      ++r.mismatches;
      const double err = std::fabs(double(got[i]) - double(want[i]));
      r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
    }
    ++r.checked;
  }
}

struct Setup {
  Op op = Op::Add;
  std::vector<int64_t> a_shape, b_shape, out_shape;  // b unused by the unary ops
  bool b_constant = false;
  MemoryLayout out_layout = MemoryLayout::WidthPacked;
  float s0 = 1.0f, s1 = 0.0f;  // alpha; multiplier, addend; lo, hi
};

class FloatElementwiseCase : public CaseInstance {
 public:
  explicit FloatElementwiseCase(Setup s) : s_(std::move(s)) {}

  void build(graph::ComputeGraph& g) override {
    auto spec = [](const std::vector<int64_t>& shape, MemoryLayout layout) {
      return TensorSpec{shape, DType::Float32, StorageType::Buffer, layout};
    };
    a_ = g.add_tensor(spec(s_.a_shape, MemoryLayout::WidthPacked), "a");
    out_ = g.add_tensor(spec(s_.out_shape, s_.out_layout), "y");
    g.add_input(a_);
    if (binary()) {
      const TensorSpec b_spec = spec(s_.b_shape, MemoryLayout::WidthPacked);
      if (s_.b_constant) {
        std::mt19937 rng(7);
        b_values_ = special_floats(static_cast<size_t>(testing::ref_numel(s_.b_shape)), rng);
        const auto* bytes = reinterpret_cast<const uint8_t*>(b_values_.data());
        b_ = g.add_constant(b_spec, "b",
                            graph::nchw_constant_packer(b_spec, bytes, 4 * b_values_.size(), 0),
                            4 * b_values_.size());
      } else {
        b_ = g.add_tensor(b_spec, "b");
        g.add_input(b_);
      }
      const ops::FloatBinaryOp op = s_.op == Op::Add   ? ops::FloatBinaryOp::Add
                                    : s_.op == Op::Mul ? ops::FloatBinaryOp::Mul
                                                       : ops::FloatBinaryOp::Div;
      ops::add_float_binary_node(g, op, a_, b_, out_, s_.s0);
    } else if (gelu()) {
      ops::add_float_gelu_node(
          g, a_, out_,
          s_.op == Op::GeluTanh ? ops::GeluApproximate::Tanh : ops::GeluApproximate::Erf);
    } else if (s_.op == Op::Affine) {
      ops::add_float_affine_scalar_node(g, a_, out_, s_.s0, s_.s1);
    } else {
      ops::add_float_clamp_node(g, a_, out_, s_.s0, s_.s1);
    }
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    const auto n = static_cast<size_t>(testing::ref_numel(s_.a_shape));
    a_values_ = gelu() ? gelu_floats(n, rng) : special_floats(n, rng);
    g.write_float(a_, a_values_);
    if (binary() && !s_.b_constant) {
      b_values_ = special_floats(static_cast<size_t>(testing::ref_numel(s_.b_shape)), rng);
      g.write_float(b_, b_values_);
    }
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    if (gelu()) {
      const std::vector<float> none = {0.0f};
      const std::vector<float> x = testing::ref_float_binary(
          a_values_, s_.a_shape, none, {1}, s_.out_shape, [](float v, float) { return v; });
      compare_within_gelu_bound(x, g.read_float(out_), expected(), r);
    } else {
      compare_bits(g.read_float(out_), expected(), r);
    }
    return r;
  }
  PerfWork work() const override {
    double bytes = 4.0 * static_cast<double>(testing::ref_numel(s_.a_shape) +
                                             testing::ref_numel(s_.out_shape));
    if (binary()) bytes += 4.0 * static_cast<double>(testing::ref_numel(s_.b_shape));
    return {bytes, static_cast<double>(testing::ref_numel(s_.out_shape))};
  }

 private:
  bool binary() const { return s_.op == Op::Add || s_.op == Op::Mul || s_.op == Op::Div; }
  bool gelu() const { return s_.op == Op::Gelu || s_.op == Op::GeluTanh; }

  std::vector<float> expected() const {
    const float s0 = s_.s0, s1 = s_.s1;
    if (binary()) {
      std::function<float(float, float)> f;
      if (s_.op == Op::Add) f = [s0](float a, float b) { return testing::ref_float_add(a, b, s0); };
      if (s_.op == Op::Mul) f = testing::ref_float_mul;
      if (s_.op == Op::Div) f = testing::ref_float_div;
      return testing::ref_float_binary(a_values_, s_.a_shape, b_values_, s_.b_shape, s_.out_shape,
                                       f);
    }
    // A unary op: its input broadcast like a binary op's first operand.
    const std::vector<float> none = {0.0f};
    return testing::ref_float_binary(
        a_values_, s_.a_shape, none, {1}, s_.out_shape, [&](float x, float) {
          if (gelu()) return testing::ref_float_gelu(x, s_.op == Op::GeluTanh);
          return s_.op == Op::Affine ? testing::ref_float_affine(x, s0, s1)
                                     : testing::ref_float_clamp(x, s0, s1);
        });
  }

  Setup s_;
  graph::ValueRef a_ = -1, b_ = -1, out_ = -1;
  std::vector<float> a_values_, b_values_;
};

std::string layout_short(MemoryLayout l) {
  return l == MemoryLayout::WidthPacked    ? "width_packed"
         : l == MemoryLayout::HeightPacked ? "height_packed"
                                           : "channels_packed";
}

void add_case(Registry& registry, const std::string& prefix, const Setup& s, bool accu,
              const std::string& what = "") {
  const bool binary = s.op == Op::Add || s.op == Op::Mul || s.op == Op::Div;
  const std::string shape =
      shape_string(s.a_shape) +
      (binary ? (s.b_constant ? "+const" : "+") + shape_string(s.b_shape) : "") + "->" +
      shape_string(s.out_shape);
  const std::string layout = "buffer/" + layout_short(s.out_layout);
  registry.add({prefix + op_name(s.op) + "/" + shape + "/" + layout + what, op_name(s.op), shape,
                layout, accu, !accu, false, Metric::GBps,
                [=] { return std::make_unique<FloatElementwiseCase>(s); }});
}

Setup binary(Op op, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> out,
             bool b_constant = false, MemoryLayout layout = MemoryLayout::WidthPacked) {
  Setup s;
  s.op = op;
  s.a_shape = std::move(a);
  s.b_shape = std::move(b);
  s.out_shape = std::move(out);
  s.b_constant = b_constant;
  s.out_layout = layout;
  return s;
}

Setup unary(Op op, std::vector<int64_t> in, std::vector<int64_t> out, float s0, float s1) {
  Setup s;
  s.op = op;
  s.a_shape = std::move(in);
  s.out_shape = std::move(out);
  s.s0 = s0;
  s.s1 = s1;
  return s;
}

}  // namespace

void register_float_elementwise_cases(Registry& registry) {
  const float inf = std::numeric_limits<float>::infinity();
  for (Op op : {Op::Add, Op::Mul, Op::Div}) {
    for (const auto& shape : awkward_shapes())
      add_case(registry, "", binary(op, shape, shape, shape), true);
    // A [.., T, 1] operand against [.., T, C], either side; a [C] one; constants.
    add_case(registry, "", binary(op, {1, 7, 10}, {1, 7, 1}, {1, 7, 10}), true);
    add_case(registry, "", binary(op, {1, 7, 1}, {1, 7, 10}, {1, 7, 10}), true);
    add_case(registry, "", binary(op, {2, 3, 5, 6}, {6}, {2, 3, 5, 6}), true);
    add_case(registry, "", binary(op, {1, 7, 10}, {1, 7, 10}, {1, 7, 10}, true), true);
    add_case(registry, "", binary(op, {1, 7, 10}, {1, 1, 10}, {1, 7, 10}, true), true);
    add_case(registry, "", binary(op, {1, 6}, {1, 1}, {1, 6}), true);
    for (MemoryLayout l : {MemoryLayout::HeightPacked, MemoryLayout::ChannelsPacked}) {
      add_case(registry, "", binary(op, {2, 5, 3, 6}, {2, 5, 3, 1}, {2, 5, 3, 6}, false, l), true);
    }
  }
  Setup alpha = binary(Op::Add, {3, 6, 10}, {3, 6, 10}, {3, 6, 10});
  alpha.s0 = -2.5f;
  add_case(registry, "", alpha, true, "/alpha_-2.5");
  // mul.Scalar (x * -10000 + -0.0), rsub.Scalar (x * -1 + 1), a broadcast copy (x * 1 + -0.0).
  for (const auto& shape : awkward_shapes()) {
    add_case(registry, "", unary(Op::Affine, shape, shape, -10000.0f, -0.0f), true, "/mul_scalar");
    add_case(registry, "", unary(Op::Clamp, shape, shape, -0.5f, 2.0f), true, "/-0.5..2");
  }
  add_case(registry, "", unary(Op::Affine, {1, 7, 10}, {1, 7, 10}, -1.0f, 1.0f), true, "/rsub");
  add_case(registry, "", unary(Op::Affine, {1, 1}, {1, 10}, 1.0f, -0.0f), true, "/expand_as");
  add_case(registry, "", unary(Op::Clamp, {1, 7, 10}, {1, 7, 10}, 1e-9f, inf), true, "/clamp_min");
  add_case(registry, "", unary(Op::Clamp, {1, 7, 10}, {1, 7, 10}, 2.0f, -1.0f), true, "/lo>hi");
  // gelu, both forms: MiniLM's FFN at T = 128, the awkward shapes, a broadcast input.
  for (Op op : {Op::Gelu, Op::GeluTanh}) {
    const std::string form = op == Op::Gelu ? "/erf" : "/tanh";
    add_case(registry, "", unary(op, {1, 128, 1536}, {1, 128, 1536}, 0, 0), true, form);
    for (const auto& shape : awkward_shapes()) {
      add_case(registry, "", unary(op, shape, shape, 0, 0), true, form);
    }
    add_case(registry, "", unary(op, {1, 7, 1}, {1, 7, 10}, 0, 0), true, form + "/broadcast");
  }
  // MiniLM at T = 128: the residual add, the pooling product, the attention mask's scaling.
  add_case(registry, "perf/", binary(Op::Add, {1, 128, 384}, {1, 128, 384}, {1, 128, 384}), false);
  add_case(registry, "perf/", binary(Op::Mul, {1, 128, 384}, {1, 128, 1}, {1, 128, 384}), false);
  add_case(registry, "perf/", binary(Op::Add, {1, 128, 384}, {1, 128, 384}, {1, 128, 384}, true),
           false);
  add_case(registry, "perf/", unary(Op::Affine, {1, 128, 384}, {1, 128, 384}, -10000.0f, -0.0f),
           false, "/mul_scalar");
  add_case(registry, "perf/", unary(Op::Gelu, {1, 128, 1536}, {1, 128, 1536}, 0, 0), false, "/erf");
}

}  // namespace vkd::custom_ops
