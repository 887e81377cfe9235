"""Per-layer comparison of a vkd run with PyTorch's reference-quantized model.

`vkd run MODEL.vkd --intermediates` writes every int8 tensor the blob keeps, named after the
graph IR values, which the exporter names after the FX nodes (the quantize that produced the
tensor). This module runs PyTorch's reference model (convert_to_reference_fx, or a PT2E graph:
float ops between quantize / dequantize) node by node and, at each quantize whose tensor the
device also wrote:
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
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.fx

# A difference 1 LSB apart where PyTorch's pre-rounding value is this close to x.5 counts as a
# rounding tie: room for float32 accumulation and the int32 bias rounding. Measured on the
# example models (examples/torchvision): every 1-LSB difference lies within 1e-4 of a tie, and
# none of the others comes within 0.02.
TIE_TOLERANCE = 1e-3

_QUANTIZE_TARGETS = {torch.quantize_per_tensor}
try:  # PT2E graphs (torch >= 2): quantized_decomposed.quantize_per_tensor
    _QUANTIZE_TARGETS.add(torch.ops.quantized_decomposed.quantize_per_tensor.default)
except (AttributeError, RuntimeError):
    pass


@dataclass
class LayerResult:
    """One compared int8 tensor."""
    name: str
    elements: int
    ties: int = 0            # 1 LSB apart at a rounding tie
    real: int = 0            # any other difference
    max_abs_diff: int = 0
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

    def summary(self):
        first = self.first_real
        text = (f"{len(self.layers)} int8 tensors compared with PyTorch's reference model, "
                f"each fed the device's inputs: {self.ties} element(s) 1 LSB apart at rounding "
                f"ties, ")
        if first is None:
            return text + "no other difference"
        return text + (f"{sum(r.real for r in self.layers)} real difference(s); first at "
                       f"'{first.name}' ({first.worst_real})")


def _quantize_args(node, values):
    """(input, scale, zero_point, int8 shift) of a quantize node."""
    args = [values(a) for a in node.args]
    if node.target is torch.quantize_per_tensor:
        x, scale, zp, dtype = args[:4]
    else:
        x, scale, zp, dtype = args[0], args[1], args[2], args[5]
    shift = 128 if dtype in (torch.quint8, torch.uint8) else 0
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
    real = (diff != 0) & ~at_tie
    result.real = int(real.sum())
    result.max_abs_diff = int(np.abs(diff).max())
    if result.real:
        i = tuple(int(k) for k in np.argwhere(real)[0])
        result.worst_real = (f"at {list(i)}: device {int(device[i])}, PyTorch {int(reference[i])}, "
                             f"pre-rounding {float(pre_rounding[i]):.4f}")
    return result


# Ops that only move int8 values: a quantize of dequantize -> these -> of an earlier quantize
# with the same parameters rounds nothing new, it inherits that quantize's ties.
_VIEW_NAMES = {"flatten", "view", "reshape", "squeeze", "unsqueeze", "contiguous", "clone"}


def _is_dequantize(node):
    return node.op in ("call_method", "call_function") and getattr(
        node.target, "__name__", node.target) in ("dequantize", "dequantize_per_tensor")


def _through_views(module, node):
    """The node `node` reads through view-like ops (and Flatten modules)."""
    while isinstance(node, torch.fx.Node) and node.args:
        name = getattr(node.target, "__name__", node.target)
        if node.op == "call_module":
            if not isinstance(module.get_submodule(node.target), torch.nn.Flatten):
                break
        elif node.op not in ("call_method", "call_function") or name not in _VIEW_NAMES:
            break
        node = node.args[0]
    return node


class _Replay(torch.fx.Interpreter):
    """The reference graph run with each kept quantize output replaced by the device's."""

    def __init__(self, module, device_tensors, tol):
        super().__init__(module)
        self.device_tensors, self.tol, self.report = device_tensors, tol, PerLayerReport()
        self.rounded = {}  # quantize node -> (scale, zero point, pre-rounding values)

    def _pre_rounding(self, n, x, scale, zp):
        """What quantize `n` rounded: x / scale + zp, or, when it only requantizes an earlier
        quantize (same parameters) through views, what that one rounded."""
        source = _through_views(self.module, n.args[0])
        if isinstance(source, torch.fx.Node) and _is_dequantize(source):
            earlier = self.rounded.get(source.args[0])
            if earlier is not None and earlier[:2] == (scale, zp) and \
                    earlier[2].size == x.numel():
                return earlier[2].reshape(tuple(x.shape))
        return x.detach().double().numpy() / scale + zp

    def run_node(self, n):
        result = super().run_node(n)
        if n.op != "call_function" or n.target not in _QUANTIZE_TARGETS:
            return result
        x, scale, zp, shift = _quantize_args(n, lambda a: self.env[a] if isinstance(
            a, torch.fx.Node) else a)
        pre = self._pre_rounding(n, x, scale, zp)
        self.rounded[n] = (scale, zp, pre)
        device = self.device_tensors.get(n.name)
        if device is None:
            self.report.missing.append(n.name)
            return result
        raw = result.int_repr() if result.is_quantized else result
        reference = raw.numpy().astype(np.int32) - shift
        device = np.asarray(device)
        if device.shape != reference.shape:
            raise ValueError(f"'{n.name}': the device wrote shape {list(device.shape)}, PyTorch "
                             f"computes {list(reference.shape)}")
        self.report.layers.append(_compare(n.name, pre - shift, reference, device, self.tol))
        return _as_result(device + shift, scale, zp, result)


def _as_result(data, scale, zp, like):
    """The device's tensor in the form the reference graph's quantize returns."""
    if like.is_quantized:
        return torch._make_per_tensor_quantized_tensor(
            torch.from_numpy(data.astype(np.uint8 if like.dtype == torch.quint8 else np.int8)),
            scale, zp)
    return torch.from_numpy(data.astype(np.int8 if like.dtype == torch.int8 else np.uint8))


def compare(reference_module, inputs, device_tensors, tol=TIE_TOLERANCE):
    """PerLayerReport of `device_tensors` ({IR value name: int8 array}, as `vkd run
    --intermediates` writes them) against `reference_module` (a reference-quantized FX
    GraphModule) run on `inputs` (a tuple of tensors)."""
    with torch.no_grad():
        replay = _Replay(reference_module, device_tensors, tol)
        replay.run(*inputs)
    return replay.report


def load_intermediates(directory):
    """{name: int8 array} of every int8 .npy file in `directory`."""
    import os
    tensors = {}
    for entry in sorted(os.listdir(directory)):
        if entry.endswith(".npy"):
            a = np.load(os.path.join(directory, entry))
            if a.dtype == np.int8:
                tensors[entry[:-4]] = a
    return tensors
