// Op family: quantized transposed 2-D convolution (q8ta_conv_transpose2d), as a q8ta_conv2d of
// the stride phases followed by q8ta_phase_shuffle (ConvTranspose2d.h says how).
// Anatomy: push-constant struct (mirroring shaders/q8ta_phase_shuffle.glsl), the geometry of
// the phase convolution, its weights, the checks, add_q8ta_conv_transpose2d_node, registry
// entries.
#include "runtime/ops/ConvTranspose2d.h"

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/Error.h"
#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_phase_shuffle.glsl.
struct PhaseShufflePush {
  int32_t chunk_count, word_count, batches, out_zp;
};

// One spatial dim of a transposed convolution and of its phase convolution.
struct PhaseDim {
  int64_t in = 0, kernel = 0, stride = 1, pad = 0, output_pad = 0, dilation = 1;
  int64_t out() const {
    return (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_pad + 1;
  }
  // Taps of the phase convolution: t = k * dilation / stride < taps().
  int64_t taps() const { return dilation * (kernel - 1) / stride + 1; }
  // Rows of Z: the coarse rows a = (o + pad) / stride up to the last output's, and at least the
  // input's (the phase convolution pads only, never crops).
  int64_t z_size() const { return std::max(in, (out() - 1 + pad) / stride + 1); }
  // The kernel tap of phase r at phase-convolution tap u (taps flipped), or -1 for none.
  int64_t kernel_tap(int64_t r, int64_t u) const {
    const int64_t reach = (taps() - 1 - u) * stride + r;  // = k * dilation
    return reach % dilation == 0 && reach / dilation < kernel ? reach / dilation : -1;
  }
};

// The transposed convolution's two dims and channel arrangement.
struct PhaseLayout {
  PhaseDim h, w;
  int64_t groups = 1, cin_g = 1, cout_g = 1;
  int64_t phases() const { return h.stride * w.stride; }
  int64_t cout_g4() const { return div_up(cout_g, 4) * 4; }
  int64_t z_channels() const { return groups * phases() * cout_g4(); }
  // Z's channel of output channel co in phase (ry, rx).
  int64_t z_channel(int64_t co, int64_t ry, int64_t rx) const {
    const int64_t g = co / cout_g;
    return (g * phases() + ry * w.stride + rx) * cout_g4() + co - g * cout_g;
  }
};

PhaseLayout phase_layout(const Dims4& in, const Conv2dWeights& w,
                         const ConvTranspose2dGeometry& g) {
  PhaseLayout l;
  l.h = {in.h, w.kh, g.stride_h, g.pad_h, g.output_pad_h, g.dilation_h};
  l.w = {in.w, w.kw, g.stride_w, g.pad_w, g.output_pad_w, g.dilation_w};
  l.groups = g.groups;
  l.cin_g = w.in_per_group;
  l.cout_g = w.out_channels / std::max<int64_t>(g.groups, 1);
  return l;
}

// The phase convolution's weights [Z channels, C_in / groups, T_h, T_w], scales and bias, made
// on the CPU and owned by the returned struct until prepare() has packed them.
struct PhaseWeights {
  std::vector<int8_t> weight;
  std::vector<float> scales, bias;
};

std::shared_ptr<const PhaseWeights> phase_weights(const PhaseLayout& l, const Conv2dWeights& w) {
  auto pw = std::make_shared<PhaseWeights>();
  const int64_t th = l.h.taps(), tw = l.w.taps(), zc = l.z_channels();
  pw->weight.assign(static_cast<size_t>(zc * l.cin_g * th * tw), 0);
  pw->scales.assign(static_cast<size_t>(zc), 1.0f);  // zero-weight channels: any scale
  pw->bias.assign(static_cast<size_t>(zc), 0.0f);
  for (int64_t co = 0; co < w.out_channels; ++co) {
    for (int64_t ry = 0; ry < l.h.stride; ++ry) {
      for (int64_t rx = 0; rx < l.w.stride; ++rx) {
        const int64_t z = l.z_channel(co, ry, rx);
        pw->scales[static_cast<size_t>(z)] = w.scales[co];
        pw->bias[static_cast<size_t>(z)] = w.bias ? w.bias[co] : 0.0f;
        for (int64_t ci = 0; ci < l.cin_g; ++ci) {
          for (int64_t u = 0; u < th; ++u) {
            const int64_t ky = l.h.kernel_tap(ry, u);
            for (int64_t v = 0; v < tw && ky >= 0; ++v) {
              const int64_t kx = l.w.kernel_tap(rx, v);
              if (kx < 0) continue;
              pw->weight[static_cast<size_t>(((z * l.cin_g + ci) * th + u) * tw + v)] =
                  w.weight[((co * l.cin_g + ci) * w.kh + ky) * w.kw + kx];
            }
          }
        }
      }
    }
  }
  return pw;
}

void check_transposed(const std::string& op, const Dims4& in, const Dims4& out,
                      const Conv2dWeights& w, const ConvTranspose2dGeometry& g) {
  check_conv_weights(op, in.c, w, g.groups);
  VKD_CHECK(g.stride_h >= 1 && g.stride_w >= 1 && g.dilation_h >= 1 && g.dilation_w >= 1 &&
                g.pad_h >= 0 && g.pad_w >= 0,
            ErrorCode::InvalidArgument, op, ": stride (", g.stride_h, ", ", g.stride_w,
            ") and dilation (", g.dilation_h, ", ", g.dilation_w, ") must be >= 1, padding (",
            g.pad_h, ", ", g.pad_w, ") >= 0");
  VKD_CHECK(g.output_pad_h >= 0 && g.output_pad_w >= 0 &&
                g.output_pad_h < std::max(g.stride_h, g.dilation_h) &&
                g.output_pad_w < std::max(g.stride_w, g.dilation_w),
            ErrorCode::InvalidArgument, op, ": output_padding (", g.output_pad_h, ", ",
            g.output_pad_w, ") must be >= 0 and smaller than either stride or dilation");
  const PhaseLayout l = phase_layout(in, w, g);
  VKD_CHECK(l.h.out() >= 1 && l.w.out() >= 1, ErrorCode::InvalidArgument, op, ": padding (",
            g.pad_h, ", ", g.pad_w, ") leaves no output for the ", in.h, "x", in.w, " input");
  VKD_CHECK(out.n == in.n && out.c == w.out_channels && out.h == l.h.out() && out.w == l.w.out(),
            ErrorCode::InvalidArgument, op, ": output sizes [", out.n, ", ", out.c, ", ", out.h,
            ", ", out.w, "] must be [", in.n, ", ", w.out_channels, ", ", l.h.out(), ", ",
            l.w.out(), "]");
}

// The phase convolution (ConvTranspose2d.h): stride 1, the flipped taps padded before.
Conv2dParams phase_params(const ConvTranspose2dParams& p, const PhaseLayout& l) {
  Conv2dParams cp;
  cp.input = p.input;
  cp.output = p.output;
  cp.activation_min = p.activation_min;
  cp.activation_max = p.activation_max;
  cp.route = p.route;
  cp.gemm = p.gemm;
  Conv2dGeometry& g = cp.geometry;
  g.pad_top = int32_t(l.h.taps() - 1);
  g.pad_left = int32_t(l.w.taps() - 1);
  g.pad_bottom = int32_t(l.h.z_size() - l.h.in);
  g.pad_right = int32_t(l.w.z_size() - l.w.in);
  g.groups = int32_t(l.groups);
  return cp;
}

// q8ta_phase_shuffle: Z (4W4C) into the output.
void add_phase_shuffle(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef z,
                       graph::ValueRef output, const PhaseLayout& l, int32_t zero_point) {
  const TensorSpec& out = graph.spec(output);
  const Dims4 o = out.dims4();
  const int64_t words = packed_int8_word_count(out.layout, o);
  VKD_CHECK(words < (int64_t(1) << 31) && graph.spec(z).numel() < (int64_t(1) << 31),
            ErrorCode::Unsupported, op, ": tensors of 2^31 or more elements are not supported");
  const PhaseShufflePush push{int32_t(div_up(words, 4)), int32_t(words), int32_t(o.n), zero_point};
  graph::DispatchNode node;
  node.op = op;
  node.kernel =
      shaders::variants::q8ta_phase_shuffle[out.layout == MemoryLayout::PackedInt8_4W4C ? 0 : 1];
  node.bindings = {output, z};
  node.push_constants = graph::push_constant_bytes(push);
  node.spec_constants = {uint32_t(o.c),          uint32_t(o.h),
                         uint32_t(o.w),          uint32_t(div_up(l.z_channels(), 4)),
                         uint32_t(l.h.z_size()), uint32_t(l.w.z_size()),
                         uint32_t(l.h.stride),   uint32_t(l.w.stride),
                         uint32_t(l.h.pad),      uint32_t(l.w.pad),
                         uint32_t(l.cout_g),     uint32_t(l.cout_g4())};
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(div_up(words, 4)));
  graph.add_node(std::move(node));
}

}  // namespace

Conv2dRoute add_q8ta_conv_transpose2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                           const Conv2dWeights& weights, graph::ValueRef output,
                                           const ConvTranspose2dParams& p) {
  const std::string op = "q8ta_conv_transpose2d";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  for (const auto* t : {&in, &out}) {
    check_int8x4_tensor(op, *t);
    VKD_CHECK(is_channels_packed_int8(t->spec()) && t->spec().sizes.size() >= 3,
              ErrorCode::InvalidArgument, op, ": tensor '", t->name(), "' ", t->spec().describe(),
              " must be an int8x4 buffer in 4W4C or 4C1W of rank 3 or 4 ([N,] C, H, W)");
  }
  VKD_CHECK(out.spec().sizes.size() == in.spec().sizes.size(), ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must have the input's rank");
  check_quant_params(op, p.input);
  check_requantized_output(op, p.output, p.activation_min, p.activation_max);
  const Dims4 d_in = in.spec().dims4(), d_out = out.spec().dims4();
  check_transposed(op, d_in, d_out, weights, p.geometry);

  const PhaseLayout l = phase_layout(d_in, weights, p.geometry);
  const std::string name = out.name().empty() ? op : out.name();
  std::vector<int64_t> z_sizes = {l.z_channels(), l.h.z_size(), l.w.z_size()};
  if (in.spec().sizes.size() == 4) z_sizes.insert(z_sizes.begin(), d_in.n);
  const graph::ValueRef z =
      graph.add_tensor({z_sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C},
                       name + ".phases");
  const std::shared_ptr<const PhaseWeights> pw = phase_weights(l, weights);
  Conv2dWeights zw{pw->weight.data(), pw->scales.data(), pw->bias.data(), l.z_channels(),
                   l.cin_g,           l.h.taps(),        l.w.taps(),      pw};
  const Conv2dRoute route = add_q8ta_conv2d_node(graph, input, zw, z, phase_params(p, l));
  add_phase_shuffle(graph, op, z, output, l, p.output.zero_point);
  return route;
}

// --- registry entries -------------------------------------------------------------

namespace {

void build_q8ta_conv_transpose2d(const OpCall& call) {
  ConvTranspose2dParams p;
  p.input = call.quant("input");
  p.output = call.quant("output");
  p.activation_min = call.int32_arg("activation_min", -128, 127);
  p.activation_max = call.int32_arg("activation_max", -128, 127);
  ConvTranspose2dGeometry& g = p.geometry;
  // Each value in [0, 2^20]; add_q8ta_conv_transpose2d_node's checks say what they mean.
  const auto pair = [&](const char* arg) {
    const auto v = call.int32_list(arg, {1, 2}, 0, 1 << 20);
    return std::pair{v.front(), v.back()};
  };
  std::tie(g.stride_h, g.stride_w) = pair("stride");
  std::tie(g.pad_h, g.pad_w) = pair("padding");
  std::tie(g.output_pad_h, g.output_pad_w) = pair("output_padding");
  std::tie(g.dilation_h, g.dilation_w) = pair("dilation");
  g.groups = call.int32_arg("groups", 1, 1 << 20);
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output.zero_point);

  const auto& w = call.constant("weight");
  const auto channels = call.channel_floats("weight_scales", "bias");
  Conv2dWeights cw;
  cw.weight = reinterpret_cast<const int8_t*>(w.constant->data);
  cw.scales = channels->scales.data();
  cw.bias = channels->bias.data();
  cw.out_channels = w.spec.sizes[0];
  cw.in_per_group = w.spec.sizes[1];
  cw.kh = w.spec.sizes[2];
  cw.kw = w.spec.sizes[3];
  cw.owner = channels;
  add_q8ta_conv_transpose2d_node(call.graph(), call.tensor("input"), cw, call.tensor("output"), p);
}

}  // namespace

void register_conv_transpose2d_ops(OpRegistry& registry) {
  registry.add("q8ta_conv_transpose2d", build_q8ta_conv_transpose2d);
}

}  // namespace vkd::ops
