"""VkdQuantizer: the PT2E Quantizer for what vkdelegate's GPU kernels run.

Use it as any PT2E quantizer (torchao.quantization.pt2e):

    gm = torch.export.export(model.eval(), example_inputs).module()
    prepared = prepare_pt2e(gm, VkdQuantizer())
    prepared(*sample)                    # calibration, as many samples as you like
    converted = convert_pt2e(prepared)   # what vkdelegate.export.to_graph_ir reads

It annotates static int8 only, exactly the patterns the backend runs:
- activations int8, affine, per tensor (HistogramObserver by default, MinMaxObserver with
  observer="minmax"), the full range [-128, 127];
- conv / linear weights int8 symmetric in [-127, 127], per output channel by default
  (per_channel=False: per tensor; transposed convs are always per tensor); biases stay float
  (the compiler quantizes them to int32 with the input and weight scales);
- a conv / linear / add / batch norm followed by its only user relu / hardtanh (relu6) /
  clamp is one quantized op: only the activation's output is observed; so is a linear whose
  only user is gelu (the GELU in the GEMM's epilogue, q8ta_linear_gelu: no int8 rounding of
  its input; all-MiniLM-L6-v2's worst sentence cosine 0.9906 -> 0.9919, docs/TRANSFORMERS.md);
- ops that only move or select bytes (pools, mean, views, permutes, cat, slices, pixel
  shuffle, nearest and bilinear upsampling, dropout in eval, relu standalone) share their
  input's parameters; cat's inputs all share one set, as the kernel concatenates bytes;
- hardswish / silu / gelu / elu / leaky_relu (and a standalone batch norm) have an observer
  of their own on the output, so that dq -> op -> q is one q8ta_lut whatever reads the result
  (a graph output, an op left float, several readers);
- sigmoid / hardsigmoid / softmax / tanh have the fixed parameters of their output range;
- the residual stream of a transformer stays float: an add that a layer_norm reads (or that
  such an add reads) is left float, and so are its inputs: a linear feeding it (through
  dropout / views) has int8 input and weights and a float output (the GEMM's epilogue
  dequantizes), a layer_norm feeding it writes float, and the linears reading that layer norm
  quantize it on their input edges. Per-tensor int8 of the residual stream (outlier channels
  of BERT-class models) costs most of the accuracy (all-MiniLM-L6-v2: sentence cosine 0.81
  with it, 0.99 without it; docs/TRANSFORMERS.md);
- any other layer_norm has an observer of its own on the output (q8ta_layer_norm);
- scaled_dot_product_attention: query, key and value int8, the output observed (one
  q8ta_attention); its attention mask stays float, and so do the views and element-wise
  scalar ops that only make it (quantizing an additive mask of 0 and -10000 buys nothing);
- the masked mean of a sentence embedding stays float: a mul that a sum reads, whose other
  operand derives only from a graph input through views / unsqueeze / to(dtype) / expand (a
  token mask), that mask chain (where only the mean reads it), and the reductions,
  divisions, clamps, norms and expand_as after the mul or the mask (sentence-transformers'
  pooling, F.normalize) have no observer; the hidden states keep their producer's
  parameters (dequantized on the mul's edge), and `vkd compile` makes the chain one
  q8ta_masked_mean_normalize. Int8 of the token count or of the pooled values bought
  nothing but dispatches.
Anything else (nn.MultiheadAttention's node, a custom op) is left float: the exporter keeps it
by name for `vkd compile --partition`, and names it.
"""
import operator

import torch
from torchao.quantization.pt2e.observer import (HistogramObserver, MinMaxObserver,
                                                PerChannelMinMaxObserver)
from torchao.quantization.pt2e.quantizer import (FixedQParamsQuantizationSpec,
                                                 QuantizationAnnotation, QuantizationSpec,
                                                 Quantizer, SharedQuantizationSpec)

ACTIVATION_OBSERVERS = {"histogram": HistogramObserver, "minmax": MinMaxObserver}

aten = torch.ops.aten
WEIGHTED = {aten.conv1d, aten.conv2d, aten.conv3d, aten.linear, aten.convolution}
TRANSPOSED = {aten.conv_transpose1d, aten.conv_transpose2d, aten.conv_transpose3d}
BINARY = {aten.add, aten.add_, aten.mul, aten.mul_}
FUSED_ACTIVATIONS = {aten.relu, aten.relu_, aten.hardtanh, aten.hardtanh_, aten.relu6,
                     aten.relu6_, aten.clamp, aten.clamp_, aten.clip, aten.clip_}
# The activations a linear's epilogue computes in float before its output quantize.
LINEAR_EPILOGUE_ACTIVATIONS = {aten.gelu, aten.gelu_}
OWN_PARAMETERS = {aten.batch_norm, aten._native_batch_norm_legit_no_training, aten.hardswish,
                  aten.hardswish_, aten.silu, aten.silu_, aten.gelu, aten.gelu_, aten.elu,
                  aten.elu_, aten.leaky_relu, aten.leaky_relu_}
LAYER_NORM = {aten.layer_norm}
ATTENTION = {aten.scaled_dot_product_attention}
SHARED = {
    aten.max_pool2d, aten.adaptive_avg_pool2d, aten.avg_pool2d, aten.mean, aten.flatten,
    aten.view, aten.reshape, aten._unsafe_view, aten.permute, aten.transpose, aten.t,
    aten.squeeze, aten.unsqueeze, aten.clone, aten.contiguous, aten.dropout, aten.dropout_,
    aten.feature_dropout, aten.alpha_dropout, aten.feature_alpha_dropout, aten.pixel_shuffle,
    aten.pixel_unshuffle, aten.upsample_nearest2d, aten.upsample_bilinear2d, aten.slice,
    aten.narrow, aten.chunk, aten.split, aten.split_with_sizes, aten.relu, aten.relu_,
    aten.hardtanh, aten.hardtanh_, aten.relu6, aten.relu6_, aten.clamp, aten.clamp_,
    aten.clip, aten.clip_}
CAT = {aten.cat, aten.concat}
# (scale, zero point) on int8 of an op whose output range is fixed: [0, 1] or [-1, 1].
FIXED = {aten.sigmoid: (1 / 256, -128), aten.sigmoid_: (1 / 256, -128),
         aten.hardsigmoid: (1 / 256, -128), aten.hardsigmoid_: (1 / 256, -128),
         aten.softmax: (1 / 256, -128), aten._softmax: (1 / 256, -128),
         aten.tanh: (2 / 256, 0), aten.tanh_: (2 / 256, 0)}
# Ops that return several tensors: each piece a getitem reads shares the op's parameters.
MULTI_OUTPUT = {aten.chunk, aten.split, aten.split_with_sizes}
# What may stand between a graph input and a mul that masks tokens with it (a [B, T] 0/1 mask
# to [B, T, 1] float), and what may follow that mul or the mask in a masked mean + L2 norm.
TOKEN_MASK_MOVES = {aten.view, aten.reshape, aten._unsafe_view, aten.unsqueeze, aten.to,
                    aten._to_copy, aten.expand}
MASKED_MEAN_TAIL = {aten.sum, aten.div, aten.clamp, aten.clamp_min, aten.linalg_vector_norm,
                    aten.expand_as, aten.expand}


def packet(node):
    """The OpOverloadPacket of a call_function node (aten.conv2d for aten.conv2d.default)."""
    target = node.target if node.op == "call_function" else None
    return getattr(target, "overloadpacket", target)


class VkdQuantizer(Quantizer):
    """Static int8 for vkdelegate (module docstring). per_channel: conv / linear weights per
    output channel (default) or per tensor; observer: "histogram" (default) or "minmax"."""

    def __init__(self, per_channel=True, observer="histogram"):
        super().__init__()
        if observer not in ACTIVATION_OBSERVERS:
            raise ValueError(f"unknown observer '{observer}' (accepted: "
                             f"{', '.join(ACTIVATION_OBSERVERS)})")
        self.per_channel = per_channel
        self.observer = observer
        self.activation = QuantizationSpec(
            dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
            observer_or_fake_quant_ctr=ACTIVATION_OBSERVERS[observer].with_args(eps=2 ** -12))

    def weight_spec(self, per_channel):
        """int8 symmetric weights in [-127, 127], per output channel (axis 0) or per tensor."""
        if per_channel:
            return QuantizationSpec(
                dtype=torch.int8, quant_min=-127, quant_max=127, ch_axis=0,
                qscheme=torch.per_channel_symmetric,
                observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=2 ** -12))
        return QuantizationSpec(
            dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_tensor_symmetric,
            observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2 ** -12))

    def _input(self, x):
        """The spec of an input edge from `x`: the activation's, or the very spec of x's fixed
        output parameters (sigmoid, tanh, ...), so that prepare_pt2e reads x's observer
        instead of requantizing it (a cat still gives its inputs one set of its own)."""
        annotation = x.meta.get("quantization_annotation")
        output = getattr(annotation, "output_qspec", None)
        return output if isinstance(output, FixedQParamsQuantizationSpec) else self.activation

    # ---- the Quantizer interface ---------------------------------------------------------------

    def annotate(self, model):
        masks = _attention_mask_makers(model.graph) | _masked_mean(model.graph)
        residual, float_outputs = _residual_stream(model.graph)
        for node in model.graph.nodes:
            if node.op != "call_function" or _annotated(node) or node in masks or \
                    node in residual:
                continue
            op = packet(node)
            if op in LAYER_NORM:
                _annotate(node, {}, None if node in float_outputs else self.activation)
            elif node in float_outputs and op in WEIGHTED:
                x, weight = node.args[0], node.args[1]
                _annotate(node, {x: self._input(x), weight: self.weight_spec(self.per_channel)},
                          None)
            elif op in ATTENTION:
                qkv = [a for a in node.args[:3] if _is_float_tensor(a)]
                _annotate(node, {a: self._input(a) for a in qkv}, self.activation)
            elif op in WEIGHTED or op in TRANSPOSED:
                self._weighted(node, op in TRANSPOSED)
            elif op in BINARY and _tensor_args(node) == 2:
                self._fusable(node, {a: self._input(a) for a in _tensor_inputs(node)})
            elif op in OWN_PARAMETERS:
                self._fusable(node, {node.args[0]: self._input(node.args[0])})
            elif op in FIXED and _is_float_tensor(node.args[0]):
                scale, zero_point = FIXED[op]
                x = node.args[0]
                _annotate(node, {x: self._input(x)}, FixedQParamsQuantizationSpec(
                    dtype=torch.int8, scale=scale, zero_point=zero_point, quant_min=-128,
                    quant_max=127, qscheme=torch.per_tensor_affine))
            elif op in CAT:
                self._cat(node)
            elif op in SHARED and _is_float_tensor(node.args[0]):
                self._shared(node)
        return model

    def validate(self, model):
        pass

    # ---- patterns -----------------------------------------------------------------------------

    def _weighted(self, node, transposed):
        """conv / linear: input activation, weight, float bias; output fused with a following
        activation when it has one."""
        x, weight = node.args[0], node.args[1]
        inputs = {x: self._input(x)}
        if isinstance(weight, torch.fx.Node):
            inputs[weight] = self.weight_spec(self.per_channel and not transposed)
        self._fusable(node, inputs)

    def _fusable(self, node, inputs):
        """Annotates `node`'s inputs; its output is observed, or, when its only user is a
        relu / hardtanh / clamp (or, for a linear, a gelu), that activation's output instead
        (one quantized op)."""
        users = list(node.users)
        fused = FUSED_ACTIVATIONS | (LINEAR_EPILOGUE_ACTIVATIONS
                                     if packet(node) == aten.linear else set())
        if len(users) == 1 and packet(users[0]) in fused and \
                users[0].args[0] is node and not _annotated(users[0]):
            _annotate(node, inputs, None)
            _annotate(users[0], {}, self.activation)
        else:
            _annotate(node, inputs, self.activation)

    def _shared(self, node):
        """A byte move: the output has the input's parameters (its producer's observer).
        Pieces of a split are annotated as getitems sharing the split's output."""
        x = node.args[0]
        _annotate(node, {x: self._input(x)}, SharedQuantizationSpec((x, node)))
        if packet(node) in MULTI_OUTPUT:
            for user in node.users:
                if user.op == "call_function" and user.target is operator.getitem:
                    _annotate(user, {}, SharedQuantizationSpec((x, node)))

    def _cat(self, node):
        """cat: every input and the output share one set of parameters."""
        tensors = [t for t in node.args[0] if _is_float_tensor(t)]
        if not tensors or len(tensors) != len(node.args[0]):
            return
        # cat([y, y]) has one input edge: sharing it with itself would never end.
        tensors = list(dict.fromkeys(tensors))
        first = (tensors[0], node)
        inputs = {tensors[0]: self.activation}
        inputs.update({t: SharedQuantizationSpec(first) for t in tensors[1:]})
        _annotate(node, inputs, SharedQuantizationSpec(first))


def _attention_mask_makers(graph):
    """The nodes that only make attention masks: an SDPA's attn_mask argument and, up from it,
    every call whose users are all such nodes (views, scalar arithmetic on a 0/1 mask)."""
    makers = set()
    for node in graph.nodes:
        if packet(node) in ATTENTION:
            mask = node.args[3] if len(node.args) > 3 else node.kwargs.get("attn_mask")
            if isinstance(mask, torch.fx.Node):
                makers.add(mask)
    for node in reversed(graph.nodes):  # users before producers: a chain is found in one pass
        if node.op == "call_function" and node not in makers and node.users and \
                all(user in makers for user in node.users):
            makers.add(node)
    return {n for n in makers if n.op == "call_function"}


def _masked_mean(graph):
    """The nodes of a masked mean over tokens left float: each mul of two float tensors that a
    sum reads, one of them a graph input through TOKEN_MASK_MOVES only (the token mask), those
    moves where only the mean reads them, and, down from the mul and the moves, every user in
    MASKED_MEAN_TAIL (the sums, the clamp of the token count, the divisions, F.normalize's
    norm, clamp_min and expand_as). A move something else also reads (a mask bias made from
    the same view) keeps its parameters: its float readers read it dequantized."""
    found, moves = set(), set()
    for node in graph.nodes:
        if packet(node) not in (aten.mul, aten.mul_) or _tensor_args(node) != 2 or \
                not any(packet(user) == aten.sum for user in node.users):
            continue
        for operand in _tensor_inputs(node):
            chain, x = [], operand
            while x.op == "call_function" and packet(x) in TOKEN_MASK_MOVES:
                chain.append(x)
                x = x.args[0]
            if x.op == "placeholder":
                found.add(node)
                moves.update(chain)
                break
    pending = list(found | moves)
    while pending:
        for user in pending.pop().users:
            if user not in found and user not in moves and \
                    packet(user) in MASKED_MEAN_TAIL and _is_float_tensor(user):
                found.add(user)
                pending.append(user)
    # A move stays float only when the mean's nodes and float moves alone read it (torch.export
    # checks a to(dtype)'s input with _assert_tensor_metadata, which reads no data).
    changed = True
    while changed:
        changed = False
        for move in list(moves):
            if any(u not in found and u not in moves and
                   packet(u) != aten._assert_tensor_metadata for u in move.users):
                moves.discard(move)
                changed = True
    return found | moves


def _residual_stream(graph):
    """(the float nodes of the residual stream, the nodes whose output feeds it float). The
    stream: every add with a layer_norm among its users, or an add of the stream; the byte
    moves (dropout, views) between it and its operands (their other readers quantize on
    their own input edges). Its operands' producers, a linear that nothing else reads or a
    layer_norm, write float."""
    stream = set()
    for node in reversed(graph.nodes):  # users before producers
        if packet(node) in BINARY and node.op == "call_function" and any(
                packet(u) in LAYER_NORM or u in stream for u in node.users):
            stream.add(node)
    adds = list(stream)
    float_outputs = set()
    for add in adds:
        for x in _tensor_inputs(add):
            while x.op == "call_function" and packet(x) in SHARED:
                stream.add(x)
                x = x.args[0]
            op = packet(x)
            if (op in WEIGHTED and len(x.users) == 1) or op in LAYER_NORM:
                float_outputs.add(x)
    return stream, float_outputs


def _annotate(node, inputs, output):
    node.meta["quantization_annotation"] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True)


def _annotated(node):
    annotation = node.meta.get("quantization_annotation")
    return annotation is not None and annotation._annotated


def _is_float_tensor(arg):
    value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _tensor_inputs(node):
    return [a for a in node.args if _is_float_tensor(a)]


def _tensor_args(node):
    return len(_tensor_inputs(node))
