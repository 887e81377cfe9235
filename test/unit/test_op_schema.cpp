// One source of truth: every op the schema says has a kernel, in every (dtype, storage, layout)
// combination its tensor arguments claim, must build on the runtime (blob -> load_graph), and
// every runtime op must be in the schema.
#include <gtest/gtest.h>

#include <functional>

#include "core/Error.h"
#include "partitioner_schema/OpSchema.h"
#include "runtime/delegate/GraphLoader.h"
#include "runtime/ops/OpRegistry.h"
#include "serialization/Serializer.h"
#include "test/unit/GpuTest.h"

namespace {

using namespace vkd::schema;
using vkd::serialization::GraphBuilder;
using vkd::serialization::ValueId;

struct TensorChoice {
  vkd::DType dtype;
  Placement placement;
};

// Tensor sizes: [1, 5, 6, 7] for activations; ops with weights get shapes that fit them (a
// linear layer with K = 7 and N = 3; a 3x3 convolution 5 -> 3 channels, stride, padding and
// dilation 1, so the output keeps 6 x 7).
std::vector<int64_t> sizes_of(const OpSchema& op, const ArgSchema& a) {
  const bool linear =
      op.name.rfind("q8ta_linear", 0) == 0 || op.name == "q8da_linear" || op.name == "q8csw_linear";
  // q8ta_conv_transpose2d's weights are in q8ta_conv2d's order; with stride and padding 1 (and
  // output_padding 0) a 3x3 kernel also keeps 6 x 7.
  const bool conv = op.name.rfind("q8ta_conv2d", 0) == 0 || op.name == "q8ta_conv_transpose2d";
  // q8ta_linear_qkv: three column blocks of 4 channels (N = 12).
  if (op.name == "q8ta_linear_qkv") {
    if (a.name == "weight") return {12, 7};
    if (a.constant) return {12};
    if (a.output) return {1, 5, 6, 12};
  }
  if (linear && a.name == "weight") return {3, 7};
  // q8ta_conv2d_ps / _add (upscale_factor 2): 16 = 4 * 2^2 channels shuffled; the added
  // tensor has the output's sizes.
  if (op.name == "q8ta_conv2d_ps" || op.name == "q8ta_conv2d_add") {
    if (a.name == "weight") return {16, 5, 3, 3};
    if (a.constant) return {16};
    if (a.output || a.name == "other") return {1, 4, 12, 14};
  }
  // q8ta_conv2d_dw_pw[_add]: a 3x3 depthwise over the 5 channels (stride, padding, dilation
  // 1), then a 1x1 5 -> 3; the added tensor has the output's sizes.
  // q8ta_conv2d_pw_dw_pw[_add]: a 1x1 expansion 5 -> 8 first, then the same over 8 channels.
  const bool expanded = op.name.rfind("q8ta_conv2d_pw_dw_pw", 0) == 0;
  if (expanded || op.name.rfind("q8ta_conv2d_dw_pw", 0) == 0) {
    const int64_t c = expanded ? 8 : 5;
    if (a.name == "expand_weight") return {8, 5, 1, 1};
    if (a.name == "expand_weight_scales" || a.name == "expand_bias") return {8};
    if (a.name == "dw_weight") return {c, 1, 3, 3};
    if (a.name == "dw_weight_scales" || a.name == "dw_bias") return {c};
    if (a.name == "weight") return {3, c, 1, 1};
  }
  // q8ta_conv2d_ps_pw_q_dq: a 1x1 5 -> 16 shuffled by 2 (mid [1, 4, 12, 14]), then a 1x1 head
  // 4 -> 3 into [1, 3, 12, 14].
  if (op.name == "q8ta_conv2d_ps_pw_q_dq") {
    if (a.name == "ps_weight") return {16, 5, 1, 1};
    if (a.name == "ps_weight_scales" || a.name == "ps_bias") return {16};
    if (a.name == "weight") return {3, 4, 1, 1};
    if (a.output) return {1, 3, 12, 14};
  }
  if ((op.name == "q8ta_linear_add" || op.name == "q8ta_linear_dq_add") && a.name == "other")
    return {1, 5, 6, 3};
  if (conv && a.name == "weight") return {3, 5, 3, 3};
  if ((linear || conv) && a.constant) return {3};
  if (linear && a.output) return {1, 5, 6, 3};
  if (conv && (a.output || a.name == "other")) return {1, 3, 6, 7};
  if (op.name == "q8ta_lut" && a.name == "table") return {256};  // one entry per int8 value
  if (op.name == "q8ta_batch_norm" && a.constant) return {5};    // scale, shift per channel
  if (op.name == "q8ta_mean" && a.output) return {1, 5, 1, 1};   // mean over H and W, keepdim
  if (op.name == "q8ta_mean_flat" && a.output) return {1, 5};    // keepdim = False: [N, C]
  if (op.name == "q8ta_cat" && a.output) return {2, 5, 6, 7};    // two inputs along dim 0
  if (op.name.find("layer_norm") != std::string::npos && a.constant) return {7};
  if (op.name.find("masked_mean") != std::string::npos) {  // [B, T, C] pooled over T
    return a.name == "mask" ? std::vector<int64_t>{1, 5}
           : a.output       ? std::vector<int64_t>{1, 6}
                            : std::vector<int64_t>{1, 5, 6};
  }
  if (op.name.rfind("q8ta_attention", 0) == 0 ||
      op.name == "attention") {  // [B, T, H*D], one head of 8; _qkv: Q, K, V in [B, T, 3 H*D]
    if (a.name == "qkv") return {1, 5, 6, 24};
    return a.name == "mask" ? std::vector<int64_t>{5, 1, 1, 6} : std::vector<int64_t>{1, 5, 6, 8};
  }
  // Rows of a [9, 7] table (embedding_add: plus addends of the output's sizes).
  if (op.name == "embedding" || op.name == "q8ta_embedding" || op.name == "embedding_add") {
    return a.name == "weight"    ? std::vector<int64_t>{9, 7}
           : a.name == "indices" ? std::vector<int64_t>{1, 5}
                                 : std::vector<int64_t>{1, 5, 7};
  }
  if (op.name == "q8ta_pixel_shuffle" || op.name == "pixel_shuffle") {  // upscale_factor 2
    return a.output ? std::vector<int64_t>{1, 2, 12, 14} : std::vector<int64_t>{1, 8, 6, 7};
  }
  return {1, 5, 6, 7};
}

size_t constant_bytes(const vkd::TensorSpec& spec) {
  return static_cast<size_t>(spec.numel()) * vkd::host_element_size(spec.dtype);
}

// A one-op blob: tensor args as chosen (a tensor list: two tensors of the choice), scalars with
// plausible values.
std::vector<uint8_t> one_op_blob(const OpSchema& op, const std::vector<TensorChoice>& tensors) {
  GraphBuilder b;
  std::vector<ValueId> args, inputs, outputs;
  size_t t = 0;
  for (const auto& a : op.args) {
    switch (a.kind) {
      case ArgKind::TensorList: {
        const auto& c = tensors[t++];
        const vkd::TensorSpec spec{sizes_of(op, a), c.dtype, c.placement.storage,
                                   c.placement.layout};
        std::vector<ValueId> items;
        for (int k = 0; k < 2; ++k) {
          const std::string name = a.name + std::to_string(t) + "_" + std::to_string(k);
          items.push_back(b.add_tensor(spec, name));
          inputs.push_back(items.back());
        }
        args.push_back(b.add_value_list(items));
        break;
      }
      case ArgKind::Tensor: {
        const auto& c = tensors[t++];
        const vkd::TensorSpec spec{sizes_of(op, a), c.dtype, c.placement.storage,
                                   c.placement.layout};
        if (a.constant) {  // weights and per-channel data: zeros of the op's shape
          args.push_back(b.add_tensor(spec, a.name, std::vector<uint8_t>(constant_bytes(spec), 0)));
          break;
        }
        const ValueId id = b.add_tensor(spec, a.name + std::to_string(t));
        (a.output ? outputs : inputs).push_back(id);
        args.push_back(id);
        break;
      }
      case ArgKind::Int:
        args.push_back(b.add_int(a.name == "quant_max"        ? 127
                                 : a.name == "quant_min"      ? -128
                                 : a.name == "groups"         ? 1
                                 : a.name == "upscale_factor" ? 2
                                 : a.name == "step"           ? 1
                                 : a.name == "num_heads"      ? 1
                                                              : 0));
        break;
      case ArgKind::Float: args.push_back(b.add_float(0.5)); break;
      case ArgKind::Bool: args.push_back(b.add_bool(false)); break;
      case ArgKind::IntList:  // block_size, a permute's dims: per dim of the rank-4 activations
        args.push_back(a.name == "block_size" ? b.add_int_list({1, 1, 1, 1})
                       : a.name == "dims"     ? b.add_int_list({0, 1, 2, 3})
                       // below the stride (1) of a transposed conv
                       : a.name == "output_padding" ? b.add_int_list({0, 0})
                       // a pool's padding must be at most half its (1x1) kernel
                       : a.name == "padding" && op.name.find("pool2d") != std::string::npos
                           ? b.add_int_list({0, 0})
                           : b.add_int_list({1, 1}));
        break;
      case ArgKind::FloatList:  // one per input of a tensor list
        args.push_back(a.name == "input_scales" ? b.add_float_list({0.5, 0.25})
                                                : b.add_float_list({1.0}));
        break;
    }
  }
  b.add_op(op.name, args);
  b.set_inputs(inputs);
  b.set_outputs(outputs);
  return b.finish();
}

class OpSchemaVsRuntime : public vkd_test::GpuTest {};

TEST_F(OpSchemaVsRuntime, EveryClaimedCombinationBuilds) {
  size_t built = 0;
  for (const auto& op : op_schemas()) {
    if (!op.has_kernel) continue;
    std::vector<const ArgSchema*> tensor_args;
    for (const auto& a : op.args) {
      if (holds_tensors(a)) tensor_args.push_back(&a);
    }
    // Full cross product over every tensor's (dtype, placement) claims; a tensor tied to
    // another (tied_to: an index into op.args) only ever gets that one's placement and dtype.
    std::vector<TensorChoice> choice(tensor_args.size());
    auto tensor_index = [&](int arg) {
      size_t k = 0;
      for (int j = 0; j < arg; ++j) k += holds_tensors(op.args[static_cast<size_t>(j)]);
      return k;
    };
    std::function<void(size_t)> walk = [&](size_t i) {
      if (i == tensor_args.size()) {
        const auto blob = one_op_blob(op, choice);
        std::string what = op.name;
        for (const auto& c : choice) what += " " + describe(c.placement);
        EXPECT_NO_THROW(vkd::delegate::load_graph(ctx(), blob.data(), blob.size(), 1 << 20))
            << what;
        ++built;
        return;
      }
      for (vkd::DType d : tensor_args[i]->dtypes) {
        for (const auto& p : tensor_args[i]->placements.list()) {
          const int tie = tensor_args[i]->tied_to;
          if (tie >= 0 &&
              !(choice[tensor_index(tie)].placement == p && choice[tensor_index(tie)].dtype == d)) {
            continue;
          }
          choice[i] = {d, p};
          walk(i + 1);
        }
      }
    };
    walk(0);
  }
  std::printf("built %zu (op, dtype, placement) combinations\n", built);
  EXPECT_GE(built, 18u + 18u + 9u + 36u);
}

// Builders read arguments by their schema name: a name the schema lacks (a typo, or a schema
// change the builder did not follow) fails naming the op and the argument, before any value
// is read.
TEST_F(OpSchemaVsRuntime, ABuilderReadingAnArgumentTheSchemaLacksFails) {
  const vkd::ops::OpEntry* entry = vkd::ops::op_registry().find("q8ta_linear");
  ASSERT_NE(entry, nullptr);
  vkd::graph::ComputeGraph graph(ctx());
  const vkd::serialization::DeserializedGraph blob;
  const vkd::ops::OpCall::TensorResolver no_tensors = [](ValueId) -> vkd::graph::ValueRef {
    ADD_FAILURE() << "no tensor should be resolved";
    return 0;
  };
  const std::vector<ValueId> args(entry->args.size(), 0);
  const vkd::ops::OpCall call(graph, *entry, 3, blob, no_tensors, args);
  try {
    call.tensor("weigth");
    FAIL() << "expected an error";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), vkd::ErrorCode::Internal);
    EXPECT_STREQ(e.what(),
                 "op 3 'q8ta_linear': builder reads argument 'weigth', which the "
                 "schema of q8ta_linear does not have");
  }
}

TEST(OpSchema, EveryRuntimeOpIsInTheSchemaWithAKernel) {
  for (const auto& e : vkd::ops::op_registry().entries()) {
    const OpSchema* s = find_op_schema(e.name);
    ASSERT_NE(s, nullptr) << e.name;
    EXPECT_TRUE(s->has_kernel) << e.name;
  }
  for (const auto& s : op_schemas()) {
    if (s.has_kernel) {
      EXPECT_NE(vkd::ops::op_registry().find(s.name), nullptr) << s.name;
    }
  }
}

TEST(OpSchema, TiesAndPreferencesAreConsistent) {
  for (const auto& s : op_schemas()) {
    for (const auto& a : s.args) {
      if (!holds_tensors(a)) continue;
      EXPECT_FALSE(a.output && a.kind == ArgKind::TensorList) << s.name;  // inputs only
      EXPECT_FALSE(a.dtypes.empty()) << s.name << "." << a.name;
      EXPECT_FALSE(a.placements.empty()) << s.name << "." << a.name;
      for (const auto& p : a.preferred) EXPECT_TRUE(a.placements.contains(p)) << s.name;
      if (a.tied_to >= 0) {
        ASSERT_LT(static_cast<size_t>(a.tied_to), s.args.size()) << s.name;
        EXPECT_TRUE(holds_tensors(s.args[a.tied_to])) << s.name;
        EXPECT_FALSE((s.args[a.tied_to].placements & a.placements).empty()) << s.name;
        EXPECT_EQ(s.args[a.tied_to].dtypes, a.dtypes) << s.name;  // a tie shares the dtype too
      }
    }
  }
}

}  // namespace
