"""The export's accuracy report: PyTorch's reference-quantized model (Quantized.converted: float
ATen ops between quantize / dequantize, what the graph IR is walked from) against the float
model it was made from (Quantized.float_module), through vkdelegate.accuracy.

- Outputs: both models run on the sample input and the first calibration inputs (at most
  MAX_INPUTS in all); each output's arrays are concatenated over the inputs and compared once.
- Per layer (optional), on the sample input: every compute node of the converted graph is
  matched by name with the float graph's (prepare_pt2e and convert_pt2e keep the node names)
  and its value compared in float: the value the next layer reads, i.e. after its
  quantize / dequantize when it has one. The float graph gets the folding prepare_pt2e does
  first (batch norms into the convs and linears before them), so a conv's name stands for the
  same value in both.
"""
import copy
import itertools

import numpy as np
import torch
from torchao.quantization.pt2e.utils import _fuse_conv_bn_, _fuse_linear_bn_

from .. import accuracy
from .ir import named_leaves, unique_names
from .quantization import as_args

MAX_INPUTS = 16  # the report's inputs: the sample input and up to 15 calibration inputs


def model_agreement(quantized, sample, calibration, per_layer=False):
    """accuracy.report() of the converted model against the float one (see the module's text),
    with "per_layer" {"input", "layers"} when `per_layer`; `sample`: the sample input (a
    tuple of tensors), `calibration`: the calibration samples (read again)."""
    calibration = list(itertools.islice(iter(calibration), MAX_INPUTS - 1))
    # A model with a dynamic length is calibrated at several lengths: the report compares its
    # outputs over the inputs of the sample's shapes only (outputs of two lengths do not join).
    calibration = [s for s in calibration if _shapes(as_args(s)) == _shapes(tuple(sample))]
    inputs = [tuple(sample)] + [as_args(s) for s in calibration]
    reference, quantized_outputs = [], []
    with torch.no_grad():
        for args in inputs:
            names, ref = _outputs(quantized.float_module, args)
            reference.append(ref)
            quantized_outputs.append(_outputs(quantized.converted, args)[1])
    what = "the sample input" + (f" and {len(calibration)} calibration input(s)"
                                 if calibration else "")
    result = accuracy.report(
        [_join([r[k] for r in reference]) for k in range(len(names))],
        [_join([q[k] for q in quantized_outputs]) for k in range(len(names))], names,
        title=f"int8 model (PyTorch's reference-quantized, convert_pt2e) against the float "
              f"model, on {what}")
    for entry, array in zip(result["outputs"], reference[0]):
        entry["shape"] = list(array.shape)  # the model's, not the inputs' concatenation
    result["inputs"] = len(inputs)
    if per_layer:
        result["per_layer"] = {"input": "the sample input",
                               "layers": layer_agreement(quantized, inputs[0])}
    return result


def _outputs(gm, args):
    """(names, numpy arrays) of what `gm` returns, named as the graph IR names its outputs."""
    leaves = named_leaves(gm(*args))
    return unique_names([n for n, _ in leaves]), [_numpy(v) for _, v in leaves]


def _shapes(args):
    return [tuple(a.shape) if isinstance(a, torch.Tensor) else None for a in args]


def _numpy(tensor):
    return tensor.detach().float().numpy() if tensor.is_floating_point() else \
        tensor.detach().numpy()


def _join(arrays):
    """One output's arrays over several inputs, joined along the first axis."""
    return np.concatenate(arrays) if arrays[0].ndim else np.stack(arrays)


# ---- per layer --------------------------------------------------------------------------------

def _is_qdq(node):
    return "quantize" in str(node.target)  # quantize_per_tensor, dequantize_per_channel, ...


def _op_name(node):
    """'conv2d', 'add.Tensor', '_native_batch_norm_legit_no_training[0]' for a getitem."""
    if node.target.__name__ == "getitem" and isinstance(node.args[0], torch.fx.Node):
        return f"{_op_name(node.args[0])}[{node.args[1]}]"
    return str(node.target).replace("aten.", "", 1).removesuffix(".default")


def compute_layers(converted):
    """{node name: (name of the node holding its value as the next layer reads it, op name)}
    for the converted graph's compute nodes (call_function, no quantize / dequantize)."""
    layers = {}
    for node in converted.graph.nodes:
        if node.op != "call_function" or _is_qdq(node):
            continue
        value = node
        quantize = next((u for u in node.users if _is_qdq(u) and
                         "dequantize" not in str(u.target)), None)
        if quantize is not None:
            value = next((u for u in quantize.users if "dequantize" in str(u.target)), node)
        layers[node.name] = (value.name, _op_name(node))
    return layers


class _Recorder(torch.fx.Interpreter):
    """Runs a GraphModule node by node, keeping the float tensor values of the nodes named in
    `wanted` as numpy arrays."""

    def __init__(self, gm, wanted):
        super().__init__(gm)
        self.wanted, self.values = set(wanted), {}

    def run_node(self, n):
        result = super().run_node(n)
        if n.name in self.wanted and isinstance(result, torch.Tensor) and \
                result.is_floating_point():
            self.values[n.name] = result.detach().numpy().copy()
        return result


def node_values(gm, args, wanted):
    """{node name: numpy array} of the float tensors the nodes named in `wanted` compute."""
    recorder = _Recorder(gm, wanted)
    with torch.no_grad():
        recorder.run(*args)
    return recorder.values


def layer_agreement(quantized, args):
    """accuracy.per_layer_sqnr of each compute node of the converted graph against the float
    graph's node of its name, on the input `args`."""
    layers = compute_layers(quantized.converted)
    reference_gm = copy.deepcopy(quantized.float_module)
    _fuse_conv_bn_(reference_gm)  # as prepare_pt2e does: a conv's value includes its batch norm
    _fuse_linear_bn_(reference_gm)
    reference = node_values(reference_gm, args, layers)
    got = node_values(quantized.converted, args, {v for v, _ in layers.values()})
    quantized_values = {name: got[v] for name, (v, _) in layers.items() if v in got}
    return accuracy.per_layer_sqnr(reference, quantized_values,
                                   {name: op for name, (_, op) in layers.items()})
