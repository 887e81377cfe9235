"""The handlers: which graph IR op each FX node target becomes (walk.py drives them).

Keys: a call_function's target object (torch.add, F.relu, ...), "Tensor.<name>" for a
call_method, "<namespace>.<op>.<overload>" for an OpOverload (the PT2E / torch.export form, e.g.
"aten.add.Tensor", "quantized_decomposed.quantize_per_tensor.default") and, for call_module, the
module's class (looked up along its MRO). A node whose tensor inputs are all constants is
folded in PyTorch (weights quantized in the graph), dequantizes excepted: the weight dequantize
stays in the IR for the compiler to fold. Anything else without a handler is written as
`aten.<name>` with its arguments under its schema's names (`generic`).
"""
import operator
import re

import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.nn.intrinsic import _FusedModule
from torch.ao.nn.quantized import reference as ref_nn
from torch.fx.operator_schemas import normalize_function

from .walk import (DQ_PER_CHANNEL, DQ_PER_TENSOR, Literal, Param, Pieces, Tensor, int8_data,
                   int8_qargs)

_HANDLERS = {}         # node key -> fn(walker, node) -> ref
_MODULE_HANDLERS = {}  # module class -> fn(walker, module, path, x, out) -> Tensor
_MODULE_CALL_HANDLERS = {}  # module class -> fn(walker, node, module) -> ref (any arguments)
_REQUIRED = object()


def handles(*keys):
    """Registers a node handler under each key."""
    def register(fn):
        for key in keys:
            _HANDLERS[key] = fn
        return fn
    return register


def handles_module(*classes):
    """Registers a module handler for each class (and, through the MRO, its subclasses)."""
    def register(fn):
        for cls in classes:
            _MODULE_HANDLERS[cls] = fn
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


def node_key(node):
    if node.op == "call_method":
        return "Tensor." + node.target
    if isinstance(node.target, torch._ops.OpOverload):
        return overload_name(node.target)
    return node.target


def find_handler(w, node):
    """Dispatches one call node (Walker's hook)."""
    if node.op == "call_module":
        return _call_module(w, node)
    if is_namedtuple_class(node.target):
        return _namedtuple(w, node)
    key = node_key(node)
    if "dequantize" not in str(key) and _only_constants(w, node):
        return _fold(w, node)
    return _HANDLERS.get(key, generic)(w, node)


def is_namedtuple_class(target):
    return isinstance(target, type) and issubclass(target, tuple) and hasattr(target, "_fields")


def _namedtuple(w, node):
    """`return Out(a, b)` (FX traces a namedtuple as a call of its class): its tensors in field
    order, as the pieces of a split are (the graph's outputs are named after the fields)."""
    names = []
    for item in node.target(*node.args, **node.kwargs):
        names += w.ref(item).names if w.is_pieces(item) else [w.input(item)]
    return Pieces(names)


def arg(node, index, names, default=_REQUIRED):
    """Argument `index` of `node`, positional or by keyword (`names`: one name or aliases, as
    PyTorch's Python and ATen signatures name some differently: input / self)."""
    if index < len(node.args):
        return node.args[index]
    for name in (names,) if isinstance(names, str) else names:
        if name in node.kwargs:
            return node.kwargs[name]
    if default is _REQUIRED:
        raise ValueError(f"node '{node.name}' lacks argument '{names}'")
    return default


# ---- folding constants ------------------------------------------------------------------------

def _node_args(node):
    found = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


def _only_constants(w, node):
    return all(isinstance(w.env[a], (Param, Literal)) for a in _node_args(node))


def _fold(w, node):
    """Evaluates a node that reads only constants (a weight quantized in the graph)."""
    args = torch.fx.node.map_arg(node.args, w.literal)
    kwargs = torch.fx.node.map_arg(node.kwargs, w.literal)
    with torch.no_grad():
        if node.op == "call_method":
            result = getattr(args[0], node.target)(*args[1:], **kwargs)
        else:
            result = node.target(*args, **kwargs)
    return Param(result, node.name) if isinstance(result, torch.Tensor) else Literal(result)


# ---- quantize / dequantize --------------------------------------------------------------------

@handles(torch.quantize_per_tensor)
def _quantize_fx(w, node):
    """torch.quantize_per_tensor(input, scale, zero_point, dtype): the reference graph's q."""
    qargs = int8_qargs(w.scalar(arg(node, 1, "scale")), w.scalar(arg(node, 2, "zero_point")),
                       w.literal(arg(node, 3, "dtype")))
    return w.quantize(w.input(node.args[0]), qargs, w.out())


@handles("quantized_decomposed.quantize_per_tensor.default",
         "quantized_decomposed.quantize_per_tensor.tensor")
def _quantize_decomposed(w, node):
    """quantized_decomposed.quantize_per_tensor(input, scale, zero_point, quant_min, quant_max,
    dtype): PT2E's q, already with an explicit range."""
    return w.quantize(w.input(node.args[0]), _decomposed_qargs(w, node), w.out())


def _decomposed_qargs(w, node):
    return int8_qargs(w.scalar(arg(node, 1, "scale")), w.scalar(arg(node, 2, "zero_point")),
                      w.literal(arg(node, 5, "dtype")), w.scalar(arg(node, 3, "quant_min")),
                      w.scalar(arg(node, 4, "quant_max")))


@handles("Tensor.dequantize", torch.dequantize)
def _dequantize_fx(w, node):
    """x.dequantize(): of an activation, a per-consumer dq with its quantize's parameters; of a
    quantized constant (a weight quantized in the graph), the weight dequantize."""
    source = node.args[0]
    ref = w.ref(source)
    if isinstance(ref, Param):
        return Tensor(w.weight_dequantize(ref.tensor, ref.data_name))
    name = w.input(source)
    if name not in w.qparams:
        raise w.fail(f"dequantizes '{name}', which no quantize_per_tensor produced")
    return w.dequantize_later(name, w.qparams[name], node)


@handles("quantized_decomposed.dequantize_per_tensor.default",
         "quantized_decomposed.dequantize_per_tensor.tensor")
def _dequantize_decomposed(w, node):
    """PT2E's dq: deferred per consumer for activations, emitted at once for a constant."""
    source, qargs = node.args[0], _decomposed_qargs(w, node)
    ref = w.ref(source)
    if not isinstance(ref, Param):
        return w.dequantize_later(w.input(source), qargs, node)
    data = int8_data(ref.tensor.numpy(), w.literal(arg(node, 5, "dtype")))
    const = w.ir.add_constant(ref.data_name.replace(".", "_"), data, ref.data_name)
    return w.emit(DQ_PER_TENSOR, [const], qargs, w.out())


@handles("quantized_decomposed.dequantize_per_channel.default")
def _dequantize_per_channel(w, node):
    """dequantize_per_channel(input, scales, zero_points, axis, quant_min, quant_max, dtype) of
    an int8 constant weight (PT2E)."""
    if w.literal(arg(node, 6, "dtype")) != torch.int8:
        raise w.fail("per-channel dequantize of a non-int8 tensor")
    zero_points = arg(node, 2, "zero_points")
    inputs = [w.input(node.args[0]), w.input(arg(node, 1, "scales"))]
    if zero_points is not None and torch.any(w.literal(zero_points) != 0):
        inputs.append(w.input(zero_points))
    args = {"axis": w.literal(arg(node, 3, "axis")),
            "quant_min": w.scalar(arg(node, 4, "quant_min")),
            "quant_max": w.scalar(arg(node, 5, "quant_max")), "dtype": "int8"}
    return w.emit(DQ_PER_CHANNEL, inputs, args, w.out())


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


@handles_module(ref_nn.Conv1d, ref_nn.Conv2d, ref_nn.Conv3d, ref_nn.ConvTranspose1d,
                ref_nn.ConvTranspose2d, ref_nn.ConvTranspose3d)
def _ref_conv(w, m, path, x, out):
    """A reference conv module: its int8 weight behind a dequantize, float bias."""
    if m.padding_mode != "zeros":
        raise w.fail(f"padding_mode '{m.padding_mode}' (only zero padding exports)")
    transposed = isinstance(m, nn.modules.conv._ConvTransposeNd)
    weight = w.weight_dequantize(m.get_quantized_weight(), path)
    bias = w.constant(m.bias, f"{path}.bias") if m.bias is not None else ""
    params = {"kernel": m.kernel_size, "stride": m.stride, "padding": m.padding,
              "dilation": m.dilation, "transposed": transposed,
              "output_padding": m.output_padding if transposed else 0, "groups": m.groups}
    return emit_convolution(w, x, weight, bias, params, out)


@handles_module(ref_nn.Linear)
def _ref_linear(w, m, path, x, out):
    weight = w.weight_dequantize(m.get_quantized_weight(), path)
    bias = w.constant(m.bias, f"{path}.bias") if m.bias is not None else ""
    return w.emit("aten.linear", [x, weight, bias], {}, out)


@handles(F.conv1d, F.conv2d, F.conv3d, "aten.conv1d.default", "aten.conv2d.default",
         "aten.conv3d.default")
def _conv_function(w, node):
    """conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)."""
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


@handles(F.linear, "aten.linear.default")
def _linear_function(w, node):
    bias = arg(node, 2, "bias", None)
    inputs = [w.input(node.args[0]), w.input(arg(node, 1, "weight")),
              "" if bias is None else w.input(bias)]
    return w.emit("aten.linear", inputs, {}, w.out())


# ---- element-wise -----------------------------------------------------------------------------

@handles(torch.add, operator.add, operator.iadd, "Tensor.add", "Tensor.add_", "aten.add.Tensor")
def _add(w, node):
    a, b = arg(node, 0, ("input", "self")), arg(node, 1, "other")
    if not (w.is_tensor(a) and w.is_tensor(b)):
        return generic(w, node)
    alpha = w.literal(arg(node, 2, "alpha", 1))
    args = {} if alpha == 1 else {"alpha": alpha}
    return w.emit("aten.add.Tensor", [w.input(a), w.input(b)], args, w.out())


@handles(torch.mul, operator.mul, operator.imul, "Tensor.mul", "Tensor.mul_", "aten.mul.Tensor",
         "aten.mul.Scalar")
def _mul(w, node):
    """A product of two tensors is aten.mul.Tensor; of a tensor and a number (either first:
    multiplication commutes) aten.mul.Scalar(self, other)."""
    a, b = arg(node, 0, ("input", "self")), arg(node, 1, "other")
    if w.is_tensor(a) and w.is_tensor(b):
        return w.emit("aten.mul.Tensor", [w.input(a), w.input(b)], {}, w.out())
    if w.is_tensor(b):
        a, b = b, a
    value = None if not w.is_tensor(a) else w.literal(b)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return generic(w, node)
    return w.emit("aten.mul.Scalar", [w.input(a)], {"other": value}, w.out())


@handles(F.relu, torch.relu, torch.relu_, "Tensor.relu", "Tensor.relu_", "aten.relu.default",
         "aten.relu_.default")
def _relu(w, node):
    return w.emit("aten.relu", [w.input(node.args[0])], {}, w.out())


@handles(F.hardtanh, F.hardtanh_, "aten.hardtanh.default", "aten.hardtanh_.default")
def _hardtanh(w, node):
    args = {"min_val": float(w.literal(arg(node, 1, "min_val", -1.0))),
            "max_val": float(w.literal(arg(node, 2, "max_val", 1.0)))}
    return w.emit("aten.hardtanh", [w.input(node.args[0])], args, w.out())


@handles(F.relu6)
def _relu6(w, node):
    """relu6 is hardtanh(0, 6) in ATen."""
    args = {"min_val": 0.0, "max_val": 6.0}
    return w.emit("aten.hardtanh", [w.input(node.args[0])], args, w.out())


@handles(torch.clamp, torch.clip, "Tensor.clamp", "Tensor.clamp_", "Tensor.clip",
         "aten.clamp.default")
def _clamp(w, node):
    bounds = [arg(node, 1, "min", None), arg(node, 2, "max", None)]
    if any(w.is_tensor(b) for b in bounds):
        return generic(w, node)
    args = {k: w.literal(b) for k, b in zip(("min", "max"), bounds) if b is not None}
    return w.emit("aten.clamp", [w.input(node.args[0])], args, w.out())


_SOFTMAX_TARGETS = {F.softmax: 3, F.log_softmax: 3, torch.softmax: 2, torch.log_softmax: 2}


@handles(F.softmax, F.log_softmax, torch.softmax, torch.log_softmax, "Tensor.softmax",
         "Tensor.log_softmax", "aten.softmax.int", "aten.log_softmax.int",
         "aten._softmax.default", "aten._log_softmax.default")
def _softmax(w, node):
    """softmax / log_softmax(input, dim, dtype=None) in every spelling -> core ATen's
    aten._softmax / aten._log_softmax(self, dim, half_to_float=False) (F.softmax's _stacklevel
    dropped). An implicit dim (None) or a dtype conversion stays generic."""
    key = str(node_key(node))
    log = "log_softmax" in key or getattr(node.target, "__name__", "") == "log_softmax"
    dim = w.literal(arg(node, 1, "dim", None))
    if key.startswith("aten._"):
        converts = bool(w.literal(arg(node, 2, "half_to_float", False)))
    else:
        converts = w.literal(arg(node, _SOFTMAX_TARGETS.get(node.target, 2), "dtype", None)) \
            is not None
    if dim is None or converts:
        return generic(w, node)
    return emit_softmax(w, w.input(node.args[0]), dim, log, w.out())


def emit_softmax(w, x, dim, log, out):
    op = "aten._log_softmax" if log else "aten._softmax"
    return w.emit(op, [x], {"dim": dim, "half_to_float": False}, out)


# ---- pooling, reductions, data movement -------------------------------------------------------

def emit_max_pool2d(w, x, kernel, stride, padding, dilation, ceil_mode, out):
    stride = stride if stride not in (None, [], ()) else kernel
    args = {"kernel_size": _ntuple(kernel, 2), "stride": _ntuple(stride, 2),
            "padding": _ntuple(padding, 2), "dilation": _ntuple(dilation, 2),
            "ceil_mode": bool(ceil_mode)}
    return w.emit("aten.max_pool2d", [x], args, out)


@handles(F.max_pool2d, torch.max_pool2d, "aten.max_pool2d.default")
def _max_pool2d(w, node):
    """max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)."""
    if w.literal(arg(node, 6, "return_indices", False)):
        raise w.fail("max_pool2d with return_indices")
    values = [w.literal(arg(node, i, k, d)) for i, (k, d) in enumerate(
        [("kernel_size", _REQUIRED), ("stride", None), ("padding", 0), ("dilation", 1),
         ("ceil_mode", False)], start=1)]
    return emit_max_pool2d(w, w.input(node.args[0]), *values, w.out())


def emit_avg_pool2d(w, x, params, out):
    """aten.avg_pool2d with every argument explicit: ints expanded to pairs, an absent or empty
    stride the kernel size, divisor_override None left out."""
    kernel = _ntuple(params["kernel_size"], 2)
    stride = params["stride"]
    args = {"kernel_size": kernel,
            "stride": kernel if stride in (None, [], ()) else _ntuple(stride, 2),
            "padding": _ntuple(params["padding"], 2), "ceil_mode": bool(params["ceil_mode"]),
            "count_include_pad": bool(params["count_include_pad"])}
    if params["divisor_override"] is not None:
        args["divisor_override"] = int(params["divisor_override"])
    return w.emit("aten.avg_pool2d", [x], args, out)


_AVG_POOL_ARGS = [("kernel_size", _REQUIRED), ("stride", None), ("padding", 0),
                  ("ceil_mode", False), ("count_include_pad", True), ("divisor_override", None)]


@handles(F.avg_pool2d, "aten.avg_pool2d.default")
def _avg_pool2d(w, node):
    """avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)."""
    params = {k: w.literal(arg(node, i, k, d)) for i, (k, d) in enumerate(_AVG_POOL_ARGS, 1)}
    return emit_avg_pool2d(w, w.input(node.args[0]), params, w.out())


def emit_adaptive_avg_pool2d(w, x, output_size, out):
    """output_size with None entries (keep that dim) made concrete."""
    size = _ntuple(output_size, 2)
    shape = w.value_type(x)[1]
    size = [shape[-2 + i] if s is None else s for i, s in enumerate(size)]
    return w.emit("aten.adaptive_avg_pool2d", [x], {"output_size": size}, out)


@handles(F.adaptive_avg_pool2d, torch._C._nn.adaptive_avg_pool2d,
         "aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(w, node):
    return emit_adaptive_avg_pool2d(w, w.input(node.args[0]),
                                    w.literal(arg(node, 1, "output_size")), w.out())


@handles(torch.mean, "Tensor.mean", "aten.mean.dim")
def _mean(w, node):
    dim = arg(node, 1, "dim", None)
    if dim is None or w.literal(arg(node, 3, "dtype", None)) is not None:
        return generic(w, node)
    dim = w.literal(dim)
    args = {"dim": list(dim) if isinstance(dim, (list, tuple)) else [dim],
            "keepdim": bool(w.literal(arg(node, 2, "keepdim", False)))}
    return w.emit("aten.mean.dim", [w.input(node.args[0])], args, w.out())


@handles(torch.flatten, torch.reshape, torch.squeeze, torch.unsqueeze, "Tensor.view",
         "Tensor.reshape", "Tensor.flatten", "Tensor.squeeze", "Tensor.unsqueeze",
         "aten.view.default", "aten.view_copy.default", "aten.reshape.default",
         "aten._unsafe_view.default", "aten.flatten.using_ints", "aten.squeeze.dim",
         "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default")
def _view(w, node):
    """Every reshape is a view_copy to the concrete output shape (the IR has no -1 or dims)."""
    out = w.out()
    return w.emit("aten.view_copy", [w.input(node.args[0])], {"size": out.shape}, out)


@handles(torch.transpose, torch.swapaxes, torch.swapdims, "Tensor.transpose", "Tensor.swapaxes",
         "Tensor.swapdims", "aten.transpose.int", "aten.transpose_copy.int")
def _transpose(w, node):
    """Every transpose is aten.transpose_copy.int (the edge dialect's copy form, as reshapes are
    view_copy): transpose(input, dim0, dim1), swapaxes / swapdims(axis0 / dim0, axis1 / dim1)."""
    args = {"dim0": w.literal(arg(node, 1, ("dim0", "axis0"))),
            "dim1": w.literal(arg(node, 2, ("dim1", "axis1")))}
    return w.emit("aten.transpose_copy.int", [w.input(node.args[0])], args, w.out())


@handles(torch.permute, "Tensor.permute", "aten.permute.default", "aten.permute_copy.default")
def _permute(w, node):
    """aten.permute_copy(dims): torch.permute(x, dims), x.permute(dims) or x.permute(*dims)."""
    rest = [w.literal(a) for a in node.args[1:]]
    if len(rest) == 1 and isinstance(rest[0], (list, tuple)):
        rest = list(rest[0])
    dims = rest or list(w.literal(node.kwargs["dims"]))
    return w.emit("aten.permute_copy", [w.input(node.args[0])], {"dims": dims}, w.out())


@handles(F.pixel_shuffle, "aten.pixel_shuffle.default")
def _pixel_shuffle(w, node):
    factor = w.literal(arg(node, 1, "upscale_factor"))
    return w.emit("aten.pixel_shuffle", [w.input(node.args[0])], {"upscale_factor": factor},
                  w.out())


def emit_interpolate(w, x, params, out):
    """F.interpolate / nn.Upsample as ATen's upsample_nearest2d.vec / upsample_bilinear2d.vec
    (what F.interpolate calls for a 4-D input): output_size or scale_factors, exactly as
    F.interpolate passes them (recompute_scale_factor: the computed size, no scales). Other modes,
    ranks and antialias stay generic (None returned)."""
    mode, size, scale = params["mode"], params["size"], params["scale_factor"]
    if mode not in ("nearest", "bilinear") or len(w.value_type(x)[1]) != 4 or \
            params["antialias"] or (size is None) == (scale is None):
        return None
    if scale is not None and params["recompute_scale_factor"]:
        size, scale = list(out.shape[2:]), None
    args = {"output_size": None if size is None else _ntuple(size, 2)}
    if mode == "bilinear":
        args["align_corners"] = bool(params["align_corners"])
    args["scale_factors"] = None if scale is None else [float(s) for s in _ntuple(scale, 2)]
    return w.emit(f"aten.upsample_{mode}2d.vec", [x], args, out)


_INTERPOLATE_ARGS = [("size", None), ("scale_factor", None), ("mode", "nearest"),
                     ("align_corners", None), ("recompute_scale_factor", None),
                     ("antialias", False)]


@handles(F.interpolate)
def _interpolate(w, node):
    params = {k: w.literal(arg(node, i, k, d)) for i, (k, d) in enumerate(_INTERPOLATE_ARGS, 1)}
    out = w.out()
    return emit_interpolate(w, w.input(node.args[0]), params, out) or generic(w, node, out)


@handles_module(nn.Upsample)
def _upsample_module(w, m, path, x, out):
    """nn.Upsample and its subclasses UpsamplingNearest2d / UpsamplingBilinear2d (whose forward
    is F.interpolate with the module's attributes); other modes and ranks generically."""
    params = {"size": m.size, "scale_factor": m.scale_factor, "mode": m.mode,
              "align_corners": m.align_corners,
              "recompute_scale_factor": getattr(m, "recompute_scale_factor", None),
              "antialias": False}
    return emit_interpolate(w, x, params, out)  # None: exported generically


@handles(torch.clone, "Tensor.clone", "Tensor.contiguous", "aten.clone.default",
         "aten.contiguous.default")
def _clone(w, node):
    """clone / contiguous: a copy of the values (the graph IR has no memory formats)."""
    fmt = node.kwargs.get("memory_format")
    contiguous = node.target == "contiguous" or node_key(node) == "aten.contiguous.default"
    args = {} if fmt is None or contiguous else {"memory_format": fmt}
    return w.emit("aten.clone", [w.input(node.args[0])], args, w.out())


# Every dropout spelling, with its default for training: F.alpha_dropout and
# F.feature_alpha_dropout do not train unless told to; the ATen ops name the flag `train`.
_DROPOUTS = {F.dropout: True, F.dropout1d: True, F.dropout2d: True, F.dropout3d: True,
             F.alpha_dropout: False, F.feature_alpha_dropout: False, torch.dropout: True,
             torch.alpha_dropout: True, torch.feature_dropout: True,
             torch.feature_alpha_dropout: True, "aten.dropout.default": True,
             "aten.alpha_dropout.default": True, "aten.feature_dropout.default": True,
             "aten.feature_alpha_dropout.default": True}


@handles(*_DROPOUTS)
def _dropout(w, node):
    """Dropout (any variant: alpha, feature, 1d / 2d / 3d) outside training is the identity: a
    clone, as torch.export writes it. In training it zeroes random elements (p = 0 drops none)."""
    training = w.literal(arg(node, 2, ("training", "train"), _DROPOUTS[node_key(node)]))
    if training and w.literal(arg(node, 1, "p", 0.5)) != 0:
        raise w.fail("dropout in training mode (call model.eval() first)")
    return w.emit("aten.clone", [w.input(node.args[0])], {}, w.out())


def _stochastic_depth_fn():
    """torchvision.ops.stochastic_depth (the function FX keeps as a call), or None."""
    try:
        from torchvision.ops import stochastic_depth
    except ImportError:
        return None
    return stochastic_depth


@handles(*[fn for fn in (_stochastic_depth_fn(),) if fn is not None])
def _stochastic_depth(w, node):
    """stochastic_depth(input, p, mode, training=True) outside training (or with p = 0) is the
    identity: a clone, as dropout."""
    if w.literal(arg(node, 3, "training", True)) and w.literal(arg(node, 1, "p")) != 0:
        raise w.fail("stochastic_depth in training mode (call model.eval() first)")
    return w.emit("aten.clone", [w.input(node.args[0])], {}, w.out())


# ---- batch norm -----------------------------------------------------------------------------

def emit_batch_norm(w, x, params, out):
    """aten.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
    cudnn_enabled) outside training: `params` holds the tensors (IR names, "" when absent) and
    eps / momentum. Training normalizes with the batch's own statistics: refused."""
    if params["training"]:
        raise w.fail("batch norm in training mode (call model.eval() first)")
    if not params["running_mean"] or not params["running_var"]:
        raise w.fail("batch norm without running statistics (track_running_stats=False) "
                     "normalizes with the batch's own statistics, in eval mode too")
    inputs = [x] + [params[k] for k in ("weight", "bias", "running_mean", "running_var")]
    momentum = params["momentum"]
    args = {"training": False, "momentum": 0.0 if momentum is None else float(momentum),
            "eps": float(params["eps"]), "cudnn_enabled": True}
    return w.emit("aten.batch_norm", inputs, args, out)


@handles_module(nn.modules.batchnorm._BatchNorm)
def _batch_norm_module(w, m, path, x, out):
    """BatchNorm1d / 2d / 3d in eval mode (one FX did not fold into a convolution: after a
    concatenation, at the start of a pre-activation block; also BNReLU2d's first child): its
    affine parameters and running statistics as constants."""
    def tensor(t, name):
        return "" if t is None else w.constant(t, f"{path}.{name}")
    params = {"weight": tensor(m.weight, "weight"), "bias": tensor(m.bias, "bias"),
              "running_mean": tensor(m.running_mean, "running_mean"),
              "running_var": tensor(m.running_var, "running_var"),
              "training": m.training, "momentum": m.momentum, "eps": m.eps}
    return emit_batch_norm(w, x, params, out)


@handles(F.batch_norm, torch.batch_norm, "aten.batch_norm.default")
def _batch_norm_function(w, node):
    """F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
    momentum=0.1, eps=1e-5) and ATen's batch_norm(input, weight, bias, running_mean,
    running_var, training, momentum, eps, cudnn_enabled)."""
    if node_key(node) is F.batch_norm:
        order = [("running_mean", None), ("running_var", None), ("weight", None),
                 ("bias", None), ("training", False), ("momentum", 0.1), ("eps", 1e-5)]
    else:
        order = [("weight", None), ("bias", None), ("running_mean", None),
                 ("running_var", None), ("training", False), ("momentum", 0.1), ("eps", 1e-5)]
    params = {}
    for i, (name, default) in enumerate(order, start=1):
        value = arg(node, i, name, default)
        if name in ("training", "momentum", "eps"):
            params[name] = w.literal(value)
        else:
            params[name] = "" if value is None else w.input(value)
    return emit_batch_norm(w, w.input(node.args[0]), params, w.out())


# ---- joining and cutting along one dim --------------------------------------------------------

@handles(torch.cat, torch.concat, "aten.cat.default", "aten.concat.default")
def _cat(w, node):
    """cat(tensors, dim=0): aten.cat with one input per tensor of the list."""
    tensors = arg(node, 0, "tensors")
    dim = w.literal(arg(node, 1, "dim", 0))
    return w.emit("aten.cat", [w.input(t) for t in tensors], {"dim": dim}, w.out())


@handles(torch.split, torch.chunk, "Tensor.split", "Tensor.chunk", "Tensor.split_with_sizes",
         "aten.split.Tensor", "aten.split_with_sizes.default", "aten.split_copy.Tensor",
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


@handles(torch.narrow, "Tensor.narrow", "aten.narrow.default", "aten.slice.Tensor",
         "aten.slice_copy.Tensor")
def _slice(w, node):
    """narrow(input, dim, start, length) and ATen's slice(self, dim=0, start=None, end=None,
    step=1): aten.slice_copy.Tensor."""
    x = w.input(node.args[0])
    dim = w.literal(arg(node, 1, "dim", 0))
    if node_key(node) in (torch.narrow, "Tensor.narrow", "aten.narrow.default"):
        start = w.literal(arg(node, 2, "start"))
        args = {"start": start, "end": start + w.literal(arg(node, 3, "length")), "step": 1}
    else:
        args = {"start": w.literal(arg(node, 2, "start", None)),
                "end": w.literal(arg(node, 3, "end", None)),
                "step": w.literal(arg(node, 4, "step", 1))}
    return w.emit("aten.slice_copy.Tensor", [x], dict(dim=dim, **args), w.out())


@handles(operator.getitem)
def _getitem(w, node):
    """A piece of a split; or basic slicing of a tensor, x[a:b, ..., ::s] (slices and one
    Ellipsis), as one aten.slice_copy.Tensor per sliced dim; other indexing generically."""
    source, index = node.args[0], node.args[1]
    if w.is_pieces(source):
        names = w.ref(source).names
        return Tensor(names[w.literal(index) % len(names)])
    index = index if isinstance(index, tuple) else (index,)
    if not w.is_tensor(source) or not all(i is Ellipsis or isinstance(i, slice) for i in index) \
            or sum(i is Ellipsis for i in index) > 1:
        return generic(w, node)
    return _slice_dims(w, w.input(source), index, w.out())


def _slice_dims(w, x, index, out):
    """x[index] for slices and at most one Ellipsis: each non-trivial slice one slice_copy."""
    dtype, shape = w.value_type(x)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (len(shape) - len(index) + 1) + index[at + 1:]
    steps = [(d, s) for d, s in enumerate(index) if s != slice(None)]
    if not steps:
        return w.emit("aten.clone", [x], {}, out)
    for k, (d, s) in enumerate(steps):
        lit = [w.literal(v) for v in (s.start, s.stop, s.step)]
        shape = list(shape)
        shape[d] = len(range(*slice(*lit).indices(shape[d])))
        target = out if k + 1 == len(steps) else w.temp(f"{out.name}_dim{d}", dtype, shape)
        args = {"dim": d, "start": lit[0], "end": lit[1], "step": 1 if lit[2] is None else lit[2]}
        x = w.emit("aten.slice_copy.Tensor", [x], args, target).name
    return Tensor(x)


# ---- modules ----------------------------------------------------------------------------------

def handles_module_call(*classes):
    """Registers a handler of the whole call_module node (several arguments, keywords, a tuple
    result) for each class and its subclasses: fn(walker, node, module) -> ref."""
    def register(fn):
        for cls in classes:
            _MODULE_CALL_HANDLERS[cls] = fn
        return fn
    return register


def _module_handler(cls, table=None):
    table = _MODULE_HANDLERS if table is None else table
    for klass in cls.__mro__:
        if klass in table:
            return table[klass]
    return None


def _call_module(w, node):
    module = w.gm.get_submodule(node.target)
    call_handler = _module_handler(type(module), _MODULE_CALL_HANDLERS)
    if call_handler is not None:
        return call_handler(w, node, module)
    handler = _module_handler(type(module))
    if handler is None or len(node.args) != 1 or node.kwargs:
        return generic_module(w, node, module)
    # A handler returns None for a configuration it leaves to the generic form.
    out = w.out()
    result = handler(w, module, node.target, w.input(node.args[0]), out)
    return generic_module(w, node, module, out) if result is None else result


@handles_module(_FusedModule)
def _fused(w, m, path, x, out):
    """A module PyTorch fused (conv + relu, linear + relu): its children in order, the inner
    results named after them. Their shapes come from running the children on zeros."""
    children = list(m.named_children())
    probe = torch.zeros(w.value_type(x)[1])
    for i, (name, child) in enumerate(children):
        handler = _module_handler(type(child))
        if handler is None:
            raise w.fail(f"fused module child '{name}' ({type(child).__name__}) has no handler")
        target = out
        if i + 1 < len(children):
            with torch.no_grad():
                probe = child(probe)
            target = w.temp(f"{out.name}_{name}", "float32", probe.shape)
        x = handler(w, child, f"{path}.{name}", x, target).name
    return Tensor(x)


@handles_module(nn.ReLU)
def _relu_module(w, m, path, x, out):
    return w.emit("aten.relu", [x], {}, out)


@handles_module(nn.Hardtanh)
def _hardtanh_module(w, m, path, x, out):
    """nn.Hardtanh and its subclass nn.ReLU6 (min 0, max 6)."""
    return w.emit("aten.hardtanh", [x], {"min_val": float(m.min_val),
                                         "max_val": float(m.max_val)}, out)


@handles_module(nn.SiLU)
def _silu_module(w, m, path, x, out):
    """nn.SiLU (the generic path would spell its class 'si_lu')."""
    return w.emit("aten.silu", [x], {}, out)


@handles_module(nn.Softmax, nn.LogSoftmax)
def _softmax_module(w, m, path, x, out):
    if m.dim is None:
        raise w.fail(f"{type(m).__name__} without a dim (PyTorch's implicit choice is deprecated)")
    return emit_softmax(w, x, m.dim, isinstance(m, nn.LogSoftmax), out)


@handles_module(nn.MaxPool2d)
def _max_pool2d_module(w, m, path, x, out):
    if m.return_indices:
        raise w.fail("MaxPool2d with return_indices")
    return emit_max_pool2d(w, x, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode,
                           out)


@handles_module(nn.AvgPool2d)
def _avg_pool2d_module(w, m, path, x, out):
    return emit_avg_pool2d(w, x, {k: getattr(m, k) for k, _ in _AVG_POOL_ARGS}, out)


@handles_module(nn.AdaptiveAvgPool2d)
def _adaptive_avg_pool2d_module(w, m, path, x, out):
    return emit_adaptive_avg_pool2d(w, x, m.output_size, out)


@handles_module(nn.PixelShuffle)
def _pixel_shuffle_module(w, m, path, x, out):
    return w.emit("aten.pixel_shuffle", [x], {"upscale_factor": m.upscale_factor}, out)


@handles_module(nn.Flatten, nn.Unflatten)
def _flatten_module(w, m, path, x, out):
    return w.emit("aten.view_copy", [x], {"size": out.shape}, out)


@handles_module(nn.modules.dropout._DropoutNd, nn.Identity)
def _identity_module(w, m, path, x, out):
    """Dropout (eval) and Identity: a clone, as torch.export writes them."""
    if m.training and not isinstance(m, nn.Identity):
        raise w.fail("dropout in training mode (call model.eval() first)")
    return w.emit("aten.clone", [x], {}, out)


# ---- everything else --------------------------------------------------------------------------

def _flat(value):
    return [v for item in value for v in _flat(item)] if isinstance(value, (list, tuple)) \
        else [value]


def _split(w, pairs, out, op):
    """Emits `op` with the tensors among `pairs` (name, value) as inputs, the rest as args.
    `inplace` is dropped: ATen spells in-place as another op, never as an argument."""
    inputs, args = [], {}
    for name, value in pairs:
        if name == "inplace":
            continue
        values = _flat(value)
        if values and all(w.is_tensor(v) for v in values):
            inputs.extend(w.input(v) for v in values)
        else:
            args[name] = w.literal(value)
    return w.emit(op, inputs, args, out)


def _schema_pairs(w, node):
    """(op name, [(argument name, value)]) of a node without a handler."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        namespace, name = op_namespace_name(target)
        overload = "" if target._overloadname == "default" else "." + target._overloadname
        pairs = []
        for i, a in enumerate(target._schema.arguments):
            if i < len(node.args):
                pairs.append((a.name, node.args[i]))
            elif a.name in node.kwargs:
                pairs.append((a.name, node.kwargs[a.name]))
        return f"{namespace}.{name}{overload}", pairs
    if node.op == "call_method":
        name, fn, args = node.target, getattr(torch, node.target, None), node.args
    else:
        name, fn, args = getattr(target, "__name__", str(target)), target, node.args
    op = "aten." + name.strip("_") if name.startswith("__") else "aten." + name.rstrip("_")
    return op, _named(w, fn, args, node.kwargs)


def _named(w, fn, args, kwargs):
    """Arguments by their names in `fn`'s signature (torch's schemas for builtins), falling
    back to arg0, arg1, ... where PyTorch cannot tell."""
    if fn is not None:
        types = tuple(torch.Tensor if w.is_tensor(a) else type(w.literal(a)) for a in args)
        for arg_types in (None, types):
            try:
                found = normalize_function(fn, tuple(args), dict(kwargs), arg_types=arg_types,
                                           normalize_to_only_use_kwargs=True)
            except Exception:  # PyTorch's matcher raises on some signatures; try the next way
                found = None
            if found is not None:
                return list(found.kwargs.items())
    return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def generic(w, node, out=None):
    """`aten.<name>` with the node's arguments by name: for ops the compiler passes through
    with the declared output dtype and shape. `out`: the node's Out when already claimed."""
    op, pairs = _schema_pairs(w, node)
    return _split(w, pairs, out or w.out(), op)


def _snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("re_lu", "relu")


def generic_module(w, node, module, out=None):
    """A module without a handler: `aten.<snake_case class name>` with the module's constants
    (`__constants__`, what PyTorch lists as its hyperparameters) as args. `out`: the node's Out
    when already claimed."""
    pairs = [(f"arg{i}", a) for i, a in enumerate(node.args)] + list(node.kwargs.items())
    pairs += [(k, getattr(module, k)) for k in getattr(module, "__constants__", [])
              if hasattr(module, k)]
    return _split(w, pairs, out or w.out(), "aten." + _snake(type(module).__name__))


from . import ops_transformer  # noqa: E402,F401  (registers its handlers; it imports this module)
