"""Per-layer comparison of a vkd run with PyTorch's reference-quantized model.

`vkd run MODEL.vkd --intermediates` writes every int8 tensor the blob keeps, named after the
graph IR values; the exporter's walk records on each node of the converted PT2E graph the IR
value it became (node.meta["vkd_value"]: `conv2d_3_q` for the quantize of `conv2d_3`). This
module runs that reference model (convert_pt2e's
GraphModule: float ATen ops between quantized_decomposed quantize / dequantize ops) node by
node and, at each quantize whose tensor the device also wrote:
- computes PyTorch's int8 result from the DEVICE's tensors upstream (each earlier quantize's
  output is replaced by the device's), so a rounding tie early in a deep network is not counted
  again at every later layer: each layer is judged on its own inputs;
- compares it with the device's int8 tensor: a difference is "at a tie" when it is 1 LSB and
  the value PyTorch rounded lies within `tie_tolerance` LSB of a half-integer (the reference
  computes in float32 with a float bias; the device in int32 with an int32 bias and a
  fixed-point requantization, so an exact tie of one is a near tie of the other); any other
  difference is real.
Tensors the device does not keep (fused away) are left to PyTorch's own values.
"""
import os
import re
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.fx

# A difference 1 LSB apart where PyTorch's pre-rounding value is this close to x.5 counts as a
# rounding tie: room for float32 accumulation and the int32 bias rounding. Measured on the
# example models (examples/torchvision): every 1-LSB difference lies within 1e-4 of a tie, and
# none of the others comes within 0.02.
TIE_TOLERANCE = 1e-3


def _op_name(node):
    """The name of what a call_function node calls: 'view' for aten.view.default,
    'quantize_per_tensor' for quantized_decomposed.quantize_per_tensor.tensor."""
    packet = getattr(node.target, "overloadpacket", None)
    return packet.__name__ if packet is not None else getattr(node.target, "__name__", "")


def _is_decomposed(node, name):
    """Whether `node` calls quantized_decomposed.<name> (any overload). By name: the ops are
    registered only once torchao (or PyTorch's decomposed module) is imported."""
    return node.op == "call_function" and _op_name(node) == name and \
        str(node.target).startswith("quantized_decomposed.")


@dataclass
class LayerResult:
    """One compared int8 tensor."""
    name: str
    elements: int
    ties: int = 0            # 1 LSB apart at a rounding tie
    real: int = 0            # any other difference
    max_abs_diff: int = 0
    tie_distance: float = 0.0  # the farthest a tie's pre-rounding value lies from x.5 (LSB)
    worst_real: str = ""     # where the first real difference is, when there is one


@dataclass
class PerLayerReport:
    """Every compared tensor in graph order; `missing` lists the quantize nodes the device did
    not keep (fused into a kernel)."""
    layers: list = field(default_factory=list)
    missing: list = field(default_factory=list)

    @property
    def first_real(self):
        return next((r for r in self.layers if r.real), None)

    @property
    def ties(self):
        return sum(r.ties for r in self.layers)

    @property
    def tie_distance(self):
        """How far from x.5 (LSB) the farthest rounding tie's pre-rounding value lies."""
        return max((r.tie_distance for r in self.layers), default=0.0)

    def summary(self, engine="the device"):
        """One line; `engine` names whose tensors were compared (and fed)."""
        first = self.first_real
        text = (f"{len(self.layers)} int8 tensors compared with PyTorch's reference model, "
                f"each fed {engine}'s inputs: {self.ties} element(s) 1 LSB apart at rounding "
                f"ties")
        if self.ties:
            text += f" (within {self.tie_distance:.1e} LSB of x.5)"
        text += ", "
        if first is None:
            return text + "no other difference"
        return text + (f"{sum(r.real for r in self.layers)} real difference(s); first at "
                       f"'{first.name}' ({first.worst_real})")


def _quantize_args(node, values):
    """(input, scale, zero_point, int8 shift) of a quantize_per_tensor(input, scale, zero_point,
    quant_min, quant_max, dtype) node (scale and zero point numbers or one-element tensors)."""
    x, scale, zp, _, _, dtype = [values(a) for a in node.args[:6]]
    shift = 128 if dtype == torch.uint8 else 0
    return x, float(scale), int(zp), shift


def _compare(name, pre_rounding, reference, device, tol):
    """LayerResult of one tensor: `reference`/`device` int8 arrays, `pre_rounding` the value
    (in LSB, zero point included) that PyTorch rounded."""
    diff = device.astype(np.int32) - reference.astype(np.int32)
    result = LayerResult(name, int(diff.size))
    if not diff.any():
        return result
    tie_distance = np.abs(np.abs(pre_rounding - np.floor(pre_rounding)) - 0.5)
    at_tie = (np.abs(diff) == 1) & (tie_distance <= tol)
    result.ties = int(at_tie.sum())
    result.tie_distance = float(tie_distance[at_tie].max()) if result.ties else 0.0
    real = (diff != 0) & ~at_tie
    result.real = int(real.sum())
    result.max_abs_diff = int(np.abs(diff).max())
    if result.real:
        i = tuple(int(k) for k in np.argwhere(real)[0])
        result.worst_real = (f"at {list(i)}: device {int(device[i])}, PyTorch {int(reference[i])}, "
                             f"pre-rounding {float(pre_rounding[i]):.4f}")
    return result


# Ops that pass int8 values on in their order: a quantize of dequantize -> these -> of an
# earlier quantize with the same parameters rounds nothing new, it inherits that quantize's
# ties (a pool the device fused into the conv before it, then a flatten whose tensor it keeps).
_VIEW_NAMES = {"flatten", "view", "_unsafe_view", "reshape", "squeeze", "unsqueeze",
               "contiguous", "clone", "dropout", "feature_dropout", "alpha_dropout",
               "feature_alpha_dropout"}


def _through_views(node):
    """The node `node` reads through view-like ops."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and node.args and \
            _op_name(node) in _VIEW_NAMES:
        node = node.args[0]
    return node


class _Replay(torch.fx.Interpreter):
    """The reference graph run with each kept quantize output replaced by the device's."""

    def __init__(self, module, device_tensors, tol, names):
        super().__init__(module)
        self.device_tensors, self.tol, self.report = device_tensors, tol, PerLayerReport()
        self.names = names
        self.rounded = {}  # quantize node -> (scale, zero point, pre-rounding values)

    def _pre_rounding(self, n, x, scale, zp):
        """What quantize `n` rounded: x / scale + zp, or, when it only requantizes an earlier
        quantize (same parameters) through views, what that one rounded."""
        source = _through_views(n.args[0])
        if isinstance(source, torch.fx.Node) and _is_decomposed(source, "dequantize_per_tensor"):
            earlier = self.rounded.get(source.args[0])
            if earlier is not None and earlier[:2] == (scale, zp) and \
                    earlier[2].size == x.numel():
                return earlier[2].reshape(tuple(x.shape))
        return x.detach().double().numpy() / scale + zp

    def run_node(self, n):
        result = super().run_node(n)
        if not _is_decomposed(n, "quantize_per_tensor"):
            return result
        x, scale, zp, shift = _quantize_args(n, lambda a: self.env[a] if isinstance(
            a, torch.fx.Node) else a)
        pre = self._pre_rounding(n, x, scale, zp)
        self.rounded[n] = (scale, zp, pre)
        device = self.device_tensors.get(self.names.get(n.name) or
                                         n.meta.get("vkd_value") or n.name)
        if device is None:
            self.report.missing.append(n.name)
            return result
        reference = result.numpy().astype(np.int32) - shift
        device = np.asarray(device)
        if device.shape != reference.shape:
            raise ValueError(f"'{n.name}': the device wrote shape {list(device.shape)}, PyTorch "
                             f"computes {list(reference.shape)}")
        self.report.layers.append(_compare(n.name, pre - shift, reference, device, self.tol))
        # the device's tensor in the quantize's own dtype (uint8 ones shifted back)
        return torch.from_numpy((device.astype(np.int32) + shift).astype(
            np.uint8 if shift else np.int8))


def compare(reference_module, inputs, device_tensors, tol=TIE_TOLERANCE, names=None):
    """PerLayerReport of `device_tensors` ({IR value name: int8 array}, as `vkd run
    --intermediates` writes them) against `reference_module` (the converted PT2E GraphModule
    the graph IR was walked from) run on `inputs` (a tuple of tensors). Each quantize node's
    tensor is looked up by `names[node name]` when given (vkdelegate.export.walk's
    ir_value_names of the walk), else by the IR value the walk recorded on the node, else by
    the node's own name."""
    if isinstance(reference_module, torch.export.ExportedProgram):
        reference_module = reference_module.module()
    with torch.no_grad():
        replay = _Replay(reference_module, device_tensors, tol, names or {})
        replay.run(*inputs)
    return replay.report


# `vkd compile --report`'s line for an attention's Q, K and V linears merged into one
# q8ta_linear_qkv (compiler/fusion/QkvLinear.cpp).
_MERGED_QKV = re.compile(r"merged 3 linears \(q, k, v\) '([^']+)' \([^)]*\), '([^']+)' "
                         r"\([^)]*\), '([^']+)' \([^)]*\) into one q8ta_linear_qkv .* reads "
                         r"'([^']+)''s column blocks 0, (\d+), (\d+)")


def split_merged_qkv(report, device_tensors):
    """Adds to `device_tensors` ({IR value name: int8 array}) the three linears' values each
    q8ta_linear_qkv output the compiler `report` names holds (its column blocks 0, C, 2C), so
    compare() finds them as written; returns how many merged outputs it split."""
    merged = _MERGED_QKV.findall(report)
    for q, k, v, qkv, c, c2 in merged:
        width = int(c)
        if int(c2) != 2 * width:
            raise ValueError(f"'{qkv}': column blocks 0, {c}, {c2} are not three of one width")
        if qkv in device_tensors:
            for i, name in enumerate((q, k, v)):
                device_tensors[name] = device_tensors[qkv][..., i * width:(i + 1) * width]
    return len(merged)


def load_intermediates(directory):
    """{name: int8 array} of every int8 .npy file in `directory`."""
    tensors = {}
    for entry in sorted(os.listdir(directory)):
        if entry.endswith(".npy"):
            a = np.load(os.path.join(directory, entry))
            if a.dtype == np.int8:
                tensors[entry[:-4]] = a
    return tensors
