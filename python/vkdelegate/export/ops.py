"""The handlers: which graph IR op each node of a converted PT2E graph becomes (walk.py drives
them).

Keys: "<namespace>.<op>.<overload>" of the node's OpOverload ("aten.add.Tensor",
"quantized_decomposed.quantize_per_tensor.default"; an in-place ATen op under its functional
name; an ExecuTorch edge-dialect op under the ATen op it wraps), and operator.getitem. A node
whose tensor inputs are all constants is folded in PyTorch, dequantizes excepted: a weight's
dequantize stays in the IR for the compiler to fold. Anything
else without a handler is written as `<namespace>.<name>[.<overload>]` with its arguments under
its schema's names (`generic`): the compiler runs it where it knows it, `vkd compile
--partition` leaves it to the host where it can.
"""
import math
import operator

import torch

from .walk import (DQ_PER_CHANNEL, DQ_PER_TENSOR, Literal, Param, Tensor, dtype_name, int8_data,
                   int8_qargs)

_HANDLERS = {}  # node key -> fn(walker, node) -> ref
_REQUIRED = object()
# ATen's "no end" of a slice (torch.export writes x[:, 1:] as slice(x, 1, 1, INT64_MAX)).
_SLICE_TO_END = 2 ** 63 - 1


def handles(*keys):
    """Registers a node handler under each key."""
    def register(fn):
        for key in keys:
            _HANDLERS[key] = fn
        return fn
    return register


def overload_name(op):
    """'aten.add.Tensor' for torch.ops.aten.add.Tensor; an in-place ATen op by its functional
    name (aten.hardswish_.default: 'aten.hardswish.default'), see op_namespace_name."""
    namespace, name = op_namespace_name(op)
    return f"{namespace}.{name}.{op._overloadname}"


def op_namespace_name(op):
    """(namespace, name) of an OpOverload, an in-place ATen op (a trailing '_') under its
    functional twin's name: torch.export keeps the in-place spellings a model's code uses
    (relu_, hardswish_), and the graph IR holds values, not mutations. The twin is the same
    op only where the in-place op's input is read by nothing else: what a model's
    `x = f_(x)` gives."""
    namespace, name = op._schema.name.split("::")
    if namespace == "aten" and name.endswith("_") and not name.startswith("_") and \
            hasattr(torch.ops.aten, name[:-1]):
        name = name[:-1]
    return namespace, name


def aten_overload(target):
    """The OpOverload a node's target stands for: the target itself, or the ATen op an
    ExecuTorch edge-dialect op wraps (EdgeOpOverload keeps it in `_op`: preprocess and the
    partitioner walk edge programs); None for anything else (operator.getitem)."""
    if isinstance(target, torch._ops.OpOverload):
        return target
    wrapped = getattr(target, "_op", None)
    return wrapped if isinstance(wrapped, torch._ops.OpOverload) else None


def node_key(node):
    op = aten_overload(node.target)
    return overload_name(op) if op is not None else node.target


def find_handler(w, node):
    """Dispatches one call node (Walker's hook)."""
    if node.op != "call_function":
        raise w.fail(f"a {node.op} node computes a tensor: the walk reads graphs made by "
                     "torch.export and convert_pt2e, where every op is a call_function")
    key = node_key(node)
    if "dequantize" not in str(key) and _only_constants(w, node):
        return _fold(w, node)
    return _HANDLERS.get(key, generic)(w, node)


def arg(node, index, name, default=_REQUIRED):
    """Argument `index` of `node`, positional or by its schema name."""
    if index < len(node.args):
        return node.args[index]
    if name in node.kwargs:
        return node.kwargs[name]
    if default is _REQUIRED:
        raise ValueError(f"node '{node.name}' lacks argument '{name}'")
    return default


# ---- folding constants ------------------------------------------------------------------------

def _node_args(node):
    found = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


def _only_constants(w, node):
    return all(isinstance(w.env[a], (Param, Literal)) for a in _node_args(node))


def _fold(w, node):
    """Evaluates a node that reads only constants (a weight split or quantized in the graph)."""
    args = torch.fx.node.map_arg(node.args, w.literal)
    kwargs = torch.fx.node.map_arg(node.kwargs, w.literal)
    with torch.no_grad():
        result = node.target(*args, **kwargs)
    return Param(result, node.name) if isinstance(result, torch.Tensor) else Literal(result)


# ---- quantize / dequantize --------------------------------------------------------------------

@handles("quantized_decomposed.quantize_per_tensor.default",
         "quantized_decomposed.quantize_per_tensor.tensor")
def _quantize(w, node):
    """quantize_per_tensor(input, scale, zero_point, quant_min, quant_max, dtype): the int8
    tensor named after the value it quantizes (`conv2d_3_q`)."""
    return w.quantize(w.input(node.args[0]), _qargs(w, node))


def _qargs(w, node):
    return int8_qargs(w.scalar(arg(node, 1, "scale")), w.scalar(arg(node, 2, "zero_point")),
                      w.literal(arg(node, 5, "dtype")), w.scalar(arg(node, 3, "quant_min")),
                      w.scalar(arg(node, 4, "quant_max")))


@handles("quantized_decomposed.dequantize_per_tensor.default",
         "quantized_decomposed.dequantize_per_tensor.tensor")
def _dequantize(w, node):
    """Deferred per consumer for activations, emitted at once for a constant (a weight quantized
    per tensor, a constant operand)."""
    source, qargs = node.args[0], _qargs(w, node)
    ref = w.ref(source)
    if not isinstance(ref, Param):
        name = w.input(source)
        if w.value_type(name)[0] != "int8":
            raise w.fail(f"dequantizes '{name}', which is not an 8-bit tensor")
        return w.dequantize_later(name, qargs)
    data_name = _weight_name(w, node, ref.tensor)
    data = int8_data(ref.tensor.numpy(), w.literal(arg(node, 5, "dtype")))
    const = w.ir.add_constant(data_name.replace(".", "_"), data, data_name)
    return w.emit(DQ_PER_TENSOR, [const], qargs, w.temp(f"{const}_dq", "float32", data.shape))


@handles("quantized_decomposed.dequantize_per_channel.default")
def _dequantize_per_channel(w, node):
    """dequantize_per_channel(input, scales, zero_points, axis, quant_min, quant_max, dtype) of
    an int8 constant weight; zero points written only when one is not 0."""
    if w.literal(arg(node, 6, "dtype")) != torch.int8:
        raise w.fail("per-channel dequantize of a non-int8 tensor")
    weight = w.ref(node.args[0])
    if not isinstance(weight, Param):
        raise w.fail("per-channel dequantize of a computed tensor (only constant weights)")
    data_name = _weight_name(w, node, weight.tensor)
    scales, zero_points = arg(node, 1, "scales"), arg(node, 2, "zero_points")
    inputs = [w.ir.add_constant(data_name.replace(".", "_"), weight.tensor.numpy(), data_name),
              _named_constant(w, scales, data_name + "_scale")]
    if zero_points is not None and torch.any(w.literal(zero_points) != 0):
        inputs.append(_named_constant(w, zero_points, data_name + "_zero_point"))
    args = {"axis": w.literal(arg(node, 3, "axis")),
            "quant_min": w.scalar(arg(node, 4, "quant_min")),
            "quant_max": w.scalar(arg(node, 5, "quant_max")), "dtype": "int8"}
    return w.emit(DQ_PER_CHANNEL, inputs, args, w.temp(f"{inputs[0]}_dq", "float32",
                                                     weight.tensor.shape))


def _weight_name(w, node, tensor):
    """The data name of the constant a dequantize reads: `<module path>.weight` where a
    module's op (conv, linear) reads the dequantized value as its `weight` (convert_pt2e names
    the int8 data `_frozen_param<N>`); else the constant's own name."""
    own = w.ref(node.args[0]).data_name
    users = list(node.users)
    if len(users) != 1 or aten_overload(users[0].target) is None:
        return own
    user = users[0]
    stack = user.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else ""
    schema = aten_overload(user.target)._schema.arguments
    index = next((i for i, a in enumerate(user.args) if a is node), None)
    if not path or index is None or index >= len(schema) or schema[index].name != "weight":
        return own
    return w.constant_name(f"{path}.weight", tensor) or own


def _named_constant(w, arg_node, data_name):
    """A constant argument (a weight's scales, zero points) written under `data_name` (or its
    own name when other data holds that one)."""
    ref = w.ref(arg_node)
    if not isinstance(ref, Param):
        return w.input(arg_node)
    name = w.constant_name(data_name, ref.tensor) or ref.data_name
    return w.constant(ref.tensor, name)


# ---- convolution and linear -------------------------------------------------------------------

def _ntuple(value, n):
    return list(value) * (n if len(value) == 1 else 1) if isinstance(value, (list, tuple)) \
        else [value] * n


def _conv_padding(w, padding, kernel, dilation):
    """Explicit padding: 'valid' is 0, 'same' the symmetric padding that keeps the size (refused
    when it would need to be asymmetric, which aten.convolution cannot say)."""
    if padding == "valid":
        return [0] * len(kernel)
    if padding != "same":
        return _ntuple(padding, len(kernel))
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(t % 2 for t in total):
        raise w.fail("padding='same' with an even kernel pads asymmetrically, which "
                     "aten.convolution cannot express")
    return [t // 2 for t in total]


def emit_convolution(w, x, weight, bias, params, out):
    """aten.convolution; `params`: stride, padding, dilation, transposed, output_padding,
    groups, with kernel (its spatial size) to expand ints and resolve string padding."""
    kernel = params["kernel"]
    n = len(kernel)
    dilation = _ntuple(params["dilation"], n)
    args = {"stride": _ntuple(params["stride"], n),
            "padding": _conv_padding(w, params["padding"], kernel, dilation),
            "dilation": dilation, "transposed": params["transposed"],
            "output_padding": _ntuple(params["output_padding"], n), "groups": params["groups"]}
    return w.emit("aten.convolution", [x, weight, bias], args, out)


@handles("aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default",
         "aten.conv1d.padding", "aten.conv2d.padding", "aten.conv3d.padding")
def _conv(w, node):
    """conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1); the
    .padding overloads take padding as 'same' / 'valid'."""
    weight = w.input(arg(node, 1, "weight"))
    bias = arg(node, 2, "bias", None)
    params = {"kernel": w.value_type(weight)[1][2:],
              "stride": w.literal(arg(node, 3, "stride", 1)),
              "padding": w.literal(arg(node, 4, "padding", 0)),
              "dilation": w.literal(arg(node, 5, "dilation", 1)), "transposed": False,
              "output_padding": 0, "groups": w.literal(arg(node, 6, "groups", 1))}
    return emit_convolution(w, w.input(node.args[0]), weight,
                            "" if bias is None else w.input(bias), params, w.out())


@handles("aten.conv_transpose1d.default", "aten.conv_transpose2d.input",
         "aten.conv_transpose3d.input")
def _conv_transpose(w, node):
    """conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
    groups=1, dilation=1)."""
    weight = w.input(arg(node, 1, "weight"))
    bias = arg(node, 2, "bias", None)
    params = {"kernel": w.value_type(weight)[1][2:],
              "stride": w.literal(arg(node, 3, "stride", 1)),
              "padding": w.literal(arg(node, 4, "padding", 0)),
              "output_padding": w.literal(arg(node, 5, "output_padding", 0)),
              "groups": w.literal(arg(node, 6, "groups", 1)),
              "dilation": w.literal(arg(node, 7, "dilation", 1)), "transposed": True}
    return emit_convolution(w, w.input(node.args[0]), weight,
                            "" if bias is None else w.input(bias), params, w.out())


@handles("aten.convolution.default")
def _convolution(w, node):
    names = ("stride", "padding", "dilation", "transposed", "output_padding", "groups")
    params = {k: w.literal(arg(node, 3 + i, k)) for i, k in enumerate(names)}
    weight, bias = w.input(node.args[1]), node.args[2]
    params["kernel"] = w.value_type(weight)[1][2:]
    return emit_convolution(w, w.input(node.args[0]), weight,
                            "" if bias is None else w.input(bias), params, w.out())


@handles("aten.linear.default")
def _linear(w, node):
    bias = arg(node, 2, "bias", None)
    inputs = [w.input(node.args[0]), w.input(arg(node, 1, "weight")),
              "" if bias is None else w.input(bias)]
    return w.emit("aten.linear", inputs, {}, w.out())


# ---- element-wise -----------------------------------------------------------------------------

@handles("aten.add.Tensor")
def _add(w, node):
    a, b = node.args[0], arg(node, 1, "other")
    if not (w.is_tensor(a) and w.is_tensor(b)):
        return generic(w, node)
    alpha = w.literal(arg(node, 2, "alpha", 1))
    args = {} if alpha == 1 else {"alpha": alpha}
    return w.emit("aten.add.Tensor", [w.input(a), w.input(b)], args, w.out())


@handles("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(w, node):
    """A product of two tensors is aten.mul.Tensor; of a tensor and a number (either first:
    multiplication commutes) aten.mul.Scalar(self, other), also where the number is a 0-d float
    constant (ExecuTorch's edge dialect lifts a Python number so: BERT's mask * -10000)."""
    a, b = node.args[0], arg(node, 1, "other")
    a, b = (_number_of_scalar_constant(w, a), b) if w.is_tensor(b) else (a, b)
    b = _number_of_scalar_constant(w, b) if w.is_tensor(a) else b
    if w.is_tensor(a) and w.is_tensor(b):
        return w.emit("aten.mul.Tensor", [w.input(a), w.input(b)], {}, w.out())
    if w.is_tensor(b):
        a, b = b, a
    value = None if not w.is_tensor(a) else w.literal(b)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return generic(w, node)
    return w.emit("aten.mul.Scalar", [w.input(a)], {"other": value}, w.out())


def _number_of_scalar_constant(w, x):
    """A float32 0-d constant's value as a Python float (the product rounds it to float32 as
    PyTorch's does with a number), anything else as it is."""
    ref = w.ref(x)
    if isinstance(ref, Param) and ref.tensor.dim() == 0 and ref.tensor.dtype == torch.float32:
        return float(ref.tensor.item())
    return x


@handles("aten.relu.default")
def _relu(w, node):
    return w.emit("aten.relu", [w.input(node.args[0])], {}, w.out())


@handles("aten.hardtanh.default")
def _hardtanh(w, node):
    """hardtanh(self, min_val=-1, max_val=1); nn.ReLU6 / F.relu6 export as hardtanh(0, 6)."""
    args = {"min_val": float(w.literal(arg(node, 1, "min_val", -1.0))),
            "max_val": float(w.literal(arg(node, 2, "max_val", 1.0)))}
    return w.emit("aten.hardtanh", [w.input(node.args[0])], args, w.out())


@handles("aten.relu6.default")
def _relu6(w, node):
    """F.relu6 is hardtanh(0, 6) in the IR, as nn.ReLU6 exports."""
    return w.emit("aten.hardtanh", [w.input(node.args[0])], {"min_val": 0.0, "max_val": 6.0},
                  w.out())


@handles("aten.clamp.default", "aten.clip.default")
def _clamp(w, node):
    """clamp / clip(self, min=None, max=None) with number bounds (clamp.Tensor stays
    generic)."""
    bounds = [arg(node, 1, "min", None), arg(node, 2, "max", None)]
    args = {k: w.literal(b) for k, b in zip(("min", "max"), bounds) if b is not None}
    return w.emit("aten.clamp", [w.input(node.args[0])], args, w.out())


@handles("aten.softmax.int", "aten.log_softmax.int", "aten._softmax.default",
         "aten._log_softmax.default")
def _softmax(w, node):
    """softmax / log_softmax(self, dim, dtype=None) and core ATen's _softmax / _log_softmax(self,
    dim, half_to_float) -> aten._softmax / aten._log_softmax(self, dim, half_to_float=False).
    A dtype conversion stays generic."""
    key = node_key(node)
    dim = w.literal(arg(node, 1, "dim"))
    if key.startswith("aten._"):
        converts = bool(w.literal(arg(node, 2, "half_to_float", False)))
    else:
        converts = w.literal(arg(node, 2, "dtype", None)) is not None
    if converts:
        return generic(w, node)
    return emit_softmax(w, w.input(node.args[0]), dim, "log_softmax" in key, w.out())


def emit_softmax(w, x, dim, log, out):
    op = "aten._log_softmax" if log else "aten._softmax"
    return w.emit(op, [x], {"dim": dim, "half_to_float": False}, out)


# ---- pooling, reductions, data movement -------------------------------------------------------

@handles("aten.max_pool2d.default")
def _max_pool2d(w, node):
    """max_pool2d(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False): every
    argument explicit, an empty stride the kernel size."""
    kernel, stride, padding, dilation, ceil_mode = [w.literal(arg(node, i, k, d)) for i, (k, d) in
                                                    enumerate([("kernel_size", _REQUIRED),
                                                               ("stride", None), ("padding", 0),
                                                               ("dilation", 1),
                                                               ("ceil_mode", False)], start=1)]
    stride = stride if stride not in (None, [], ()) else kernel
    args = {"kernel_size": _ntuple(kernel, 2), "stride": _ntuple(stride, 2),
            "padding": _ntuple(padding, 2), "dilation": _ntuple(dilation, 2),
            "ceil_mode": bool(ceil_mode)}
    return w.emit("aten.max_pool2d", [w.input(node.args[0])], args, w.out())


_AVG_POOL_ARGS = [("kernel_size", _REQUIRED), ("stride", None), ("padding", 0),
                  ("ceil_mode", False), ("count_include_pad", True), ("divisor_override", None)]


@handles("aten.avg_pool2d.default")
def _avg_pool2d(w, node):
    """avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None) with every argument explicit: ints expanded
    to pairs, an empty stride the kernel size, divisor_override None left out."""
    params = {k: w.literal(arg(node, i, k, d)) for i, (k, d) in enumerate(_AVG_POOL_ARGS, 1)}
    kernel = _ntuple(params["kernel_size"], 2)
    stride = params["stride"]
    args = {"kernel_size": kernel,
            "stride": kernel if stride in (None, [], ()) else _ntuple(stride, 2),
            "padding": _ntuple(params["padding"], 2), "ceil_mode": bool(params["ceil_mode"]),
            "count_include_pad": bool(params["count_include_pad"])}
    if params["divisor_override"] is not None:
        args["divisor_override"] = int(params["divisor_override"])
    return w.emit("aten.avg_pool2d", [w.input(node.args[0])], args, w.out())


@handles("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(w, node):
    """output_size with None entries (keep that dim) made concrete."""
    x = w.input(node.args[0])
    size = _ntuple(w.literal(arg(node, 1, "output_size")), 2)
    shape = w.value_type(x)[1]
    size = [shape[-2 + i] if s is None else s for i, s in enumerate(size)]
    return w.emit("aten.adaptive_avg_pool2d", [x], {"output_size": size}, w.out())


@handles("aten.mean.dim")
def _mean(w, node):
    dim = arg(node, 1, "dim", None)
    if dim is None or w.literal(arg(node, 3, "dtype", None)) is not None:
        return generic(w, node)
    dim = w.literal(dim)
    args = {"dim": list(dim) if isinstance(dim, (list, tuple)) else [dim],
            "keepdim": bool(w.literal(arg(node, 2, "keepdim", False)))}
    return w.emit("aten.mean.dim", [w.input(node.args[0])], args, w.out())


@handles("aten.view.default", "aten.view_copy.default", "aten.reshape.default",
         "aten._unsafe_view.default", "aten.flatten.using_ints", "aten.unflatten.int",
         "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
         "aten.unsqueeze.default", "aten.unsqueeze_copy.default")
def _view(w, node):
    """Every reshape is a view_copy to the concrete output shape (the IR has no -1 or dims)."""
    out = w.out()
    return w.emit("aten.view_copy", [w.input(node.args[0])], {"size": out.shape}, out)


@handles("aten.expand_copy.default")
def _expand(w, node):
    """expand_copy(self, size) read only by a two-tensor op whose other operand (walked already) has
    the expanded dtype and shape: aten.expand_as(self, that operand), the graph IR's broadcast
    (ExecuTorch's edge dialect writes F.normalize's expand_as(norm, mean) so). Otherwise the
    generic node."""
    out = w.out()
    readers = list(node.users)
    operands = [a for a in readers[0].args if isinstance(a, torch.fx.Node)] \
        if len(readers) == 1 else []
    other = next((a for a in operands if a is not node), None) if len(operands) == 2 else None
    meta = other.meta.get("tensor_meta") if other in w.env else None
    if hasattr(meta, "shape") and list(meta.shape) == out.shape and \
            dtype_name(meta.dtype) == out.dtype and w.is_tensor(other):
        return w.emit("aten.expand_as", [w.input(node.args[0]), w.input(other)], {}, out)
    return generic(w, node, out)


@handles("aten.transpose.int", "aten.transpose_copy.int", "aten.swapaxes.default",
         "aten.swapdims.default")
def _transpose(w, node):
    """Every transpose is aten.transpose_copy.int (the edge dialect's copy form, as reshapes are
    view_copy): transpose(self, dim0, dim1), swapaxes(self, axis0, axis1), swapdims."""
    dims = [w.literal(a) for a in node.args[1:3]]
    return w.emit("aten.transpose_copy.int", [w.input(node.args[0])],
                  {"dim0": dims[0], "dim1": dims[1]}, w.out())


@handles("aten.permute.default", "aten.permute_copy.default")
def _permute(w, node):
    dims = list(w.literal(arg(node, 1, "dims")))
    return w.emit("aten.permute_copy", [w.input(node.args[0])], {"dims": dims}, w.out())


@handles("aten.pixel_shuffle.default")
def _pixel_shuffle(w, node):
    factor = w.literal(arg(node, 1, "upscale_factor"))
    return w.emit("aten.pixel_shuffle", [w.input(node.args[0])], {"upscale_factor": factor},
                  w.out())


@handles("aten.clone.default", "aten.contiguous.default",
         "dim_order_ops._clone_dim_order.default")
def _clone(w, node):
    """clone / contiguous / ExecuTorch's edge clone (_clone_dim_order, a clone with a dim
    order): a copy of the values (the graph IR has no memory formats)."""
    return w.emit("aten.clone", [w.input(node.args[0])], {}, w.out())


@handles("aten.dropout.default", "aten.alpha_dropout.default", "aten.feature_dropout.default",
         "aten.feature_alpha_dropout.default")
def _dropout(w, node):
    """dropout(input, p, train) in any variant (alpha, feature: what F.dropout2d and friends
    call) outside training is the identity: a clone. In training it zeroes random elements
    (p = 0 drops none)."""
    if w.literal(arg(node, 2, "train")) and w.literal(arg(node, 1, "p")) != 0:
        raise w.fail("dropout in training mode (call model.eval() first)")
    return w.emit("aten.clone", [w.input(node.args[0])], {}, w.out())


# ---- batch norm -------------------------------------------------------------------------------

@handles("aten.batch_norm.default")
def _batch_norm(w, node):
    """batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
    cudnn_enabled) outside training (a batch norm torch.export could not fold into a conv:
    after a cat, at a block's start): the affine parameters and statistics as constants.
    Training normalizes with the batch's own statistics: refused."""
    names = ("weight", "bias", "running_mean", "running_var")
    tensors = {k: arg(node, i, k, None) for i, k in enumerate(names, start=1)}
    if w.literal(arg(node, 5, "training", False)):
        raise w.fail("batch norm in training mode (call model.eval() first)")
    if tensors["running_mean"] is None or tensors["running_var"] is None:
        raise w.fail("batch norm without running statistics (track_running_stats=False) "
                     "normalizes with the batch's own statistics, in eval mode too")
    momentum = w.literal(arg(node, 6, "momentum", 0.1))
    args = {"training": False, "momentum": 0.0 if momentum is None else float(momentum),
            "eps": float(w.literal(arg(node, 7, "eps", 1e-5))), "cudnn_enabled": True}
    inputs = [w.input(node.args[0])] + ["" if tensors[k] is None else w.input(tensors[k])
                                        for k in names]
    return w.emit("aten.batch_norm", inputs, args, w.out())


# ---- joining and cutting along one dim --------------------------------------------------------

@handles("aten.cat.default", "aten.concat.default")
def _cat(w, node):
    """cat(tensors, dim=0): aten.cat with one input per tensor of the list."""
    tensors = arg(node, 0, "tensors")
    dim = w.literal(arg(node, 1, "dim", 0))
    return w.emit("aten.cat", [w.input(t) for t in tensors], {"dim": dim}, w.out())


@handles("aten.split.Tensor", "aten.split_with_sizes.default", "aten.split_copy.Tensor",
         "aten.split_with_sizes_copy.default", "aten.chunk.default")
def _split_pieces(w, node):
    """Every split (split by a size or by sizes, chunk) is aten.split_with_sizes_copy with the
    pieces' sizes from shape propagation (as the edge dialect spells them); its outputs are
    named after the getitem nodes that pick them."""
    outs = w.outs()
    dim = w.literal(arg(node, 2, "dim", 0))
    sizes = [o.shape[dim] for o in outs]
    return w.emit_pieces("aten.split_with_sizes_copy", [w.input(node.args[0])],
                         {"split_sizes": sizes, "dim": dim}, outs)


@handles("aten.narrow.default", "aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(w, node):
    """narrow(self, dim, start, length) and slice(self, dim=0, start=None, end=None, step=1):
    aten.slice_copy.Tensor, an end at ATen's "to the end" (INT64_MAX) written as None."""
    x = w.input(node.args[0])
    dim = w.literal(arg(node, 1, "dim", 0))
    if node_key(node) == "aten.narrow.default":
        start = w.literal(arg(node, 2, "start"))
        args = {"start": start, "end": start + w.literal(arg(node, 3, "length")), "step": 1}
    else:
        end = w.literal(arg(node, 3, "end", None))
        args = {"start": w.literal(arg(node, 2, "start", None)),
                "end": None if end is not None and end >= _SLICE_TO_END else end,
                "step": w.literal(arg(node, 4, "step", 1))}
    return w.emit("aten.slice_copy.Tensor", [x], dict(dim=dim, **args), w.out())


@handles("aten.select.int", "aten.select_copy.int")
def _select(w, node):
    """select(self, dim, index) (x[:, 0]): a one-long slice, then a view dropping the dim (the
    graph IR has no select; the compiler runs both, int8 on the GPU, float on the host)."""
    x = w.input(node.args[0])
    _, shape = w.value_type(x)
    dim = w.literal(arg(node, 1, "dim"))
    dim = dim + len(shape) if dim < 0 else dim
    index = w.literal(arg(node, 2, "index"))
    index = index + shape[dim] if index < 0 else index
    out = w.out()
    sliced = w.temp(f"{out.name}_slice", out.dtype, shape[:dim] + [1] + shape[dim + 1:])
    piece = w.emit("aten.slice_copy.Tensor", [x],
                   {"dim": dim, "start": index, "end": index + 1, "step": 1}, sliced)
    return w.emit("aten.view_copy", [piece.name], {"size": out.shape}, out)


@handles(operator.getitem)
def _getitem(w, node):
    """A piece of a split (or of another op with several results)."""
    source, index = node.args[0], node.args[1]
    if not w.is_pieces(source):
        raise w.fail("indexes a value that is not a sequence of tensors")
    names = w.ref(source).names
    name = names[w.literal(index) % len(names)]
    if name is None:
        raise w.fail(f"reads result {index} of '{source.name}', which the graph IR leaves out")
    return Tensor(name)


# ---- everything else --------------------------------------------------------------------------

def _flat(value):
    return [v for item in value for v in _flat(item)] if isinstance(value, (list, tuple)) \
        else [value]


def _split(w, pairs, out, op):
    """Emits `op` with the tensors among `pairs` (name, value) as inputs, the rest as args;
    `out` one Out, or a list of them (several results)."""
    inputs, args = [], {}
    for name, value in pairs:
        values = _flat(value)
        if values and all(w.is_tensor(v) for v in values):
            inputs.extend(w.input(v) for v in values)
        else:
            args[name] = _non_finite_as_text(w.literal(value))
    if isinstance(out, list):
        return w.emit_pieces(op, inputs, args, out)
    return w.emit(op, inputs, args, out)


def _non_finite_as_text(value):
    """An op without a handler is only named by the compiler (or run by the host's reference
    interpreter, which reads its arguments by name): an infinite or NaN float argument (a
    decomposed softmax's masked fill with -inf) is written as the text "inf" / "-inf" / "nan",
    JSON having no number for it."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_non_finite_as_text(v) for v in value)
    return value


_ABSENT = object()


def _schema_pairs(node):
    """(op name, [(argument name, value)]) of a node without a handler: the OpOverload's schema
    names (the overload kept unless it is .default), else arg0, arg1, ..."""
    target = aten_overload(node.target) or node.target
    if isinstance(target, torch._ops.OpOverload):
        namespace, name = op_namespace_name(target)
        overload = "" if target._overloadname == "default" else "." + target._overloadname
        pairs = []
        for i, a in enumerate(target._schema.arguments):
            value = node.args[i] if i < len(node.args) else node.kwargs.get(a.name, _ABSENT)
            # torchao's ops: a None zero point is an absent input (their last tensor)
            if value is _ABSENT or namespace == "torchao" and value is None and \
                    isinstance(a.type, torch.OptionalType) and \
                    a.type.getElementType().isSubtypeOf(torch.TensorType.get()):
                continue
            pairs.append((a.name, value))
        return f"{namespace}.{name}{overload}", pairs
    name = getattr(target, "__name__", str(target)).strip("_")
    pairs = [(f"arg{i}", a) for i, a in enumerate(node.args)] + list(node.kwargs.items())
    return f"{getattr(target, '__module__', None) or 'python'}.{name}", pairs


def generic(w, node, out=None):
    """`<namespace>.<name>` with the node's arguments by name: for ops the compiler passes
    through with the declared output dtype and shape, or leaves to the host. `out`: the node's
    Out when already claimed."""
    op, pairs = _schema_pairs(node)
    if out is None:  # several results (torchao.choose_qparams_affine): pieces, as a split's
        meta = node.meta.get("tensor_meta")
        out = w.outs() if isinstance(meta, (list, tuple)) and not hasattr(meta, "shape") \
            else w.out()
    return _split(w, pairs, out, op)


@handles("aten.scaled_dot_product_attention.default")
def scaled_dot_product_attention(w, node):
    """The generic node without an attn_mask of None: torch.export writes one positionally
    where is_causal follows it, and the graph IR leaves a missing optional input out."""
    op, pairs = _schema_pairs(node)
    pairs = [(name, v) for name, v in pairs if not (name == "attn_mask" and v is None)]
    return _split(w, pairs, w.out(), op)


@handles("torchao.choose_qparams_affine.default")
def choose_qparams_affine(w, node):
    """The generic node, its zero point declared int32: the graph IR keeps a zero point as int32
    whatever integer dtype torchao picked (int8 since torchao 0.18; the values are the same)."""
    outs = w.outs()
    outs[1].dtype = "int32"
    return generic(w, node, outs)


from . import ops_transformer  # noqa: E402,F401  (registers its handlers; it imports this module)
