"""Static int8 quantization of a float model through torch.export and PT2E.

torch.export.export captures the model as ATen ops; prepare_pt2e with vkdelegate's own
Quantizer (vkdelegate.quantizer.VkdQuantizer, or any PT2E quantizer the caller gives) inserts
observers; calibration runs the samples through it; convert_pt2e replaces the observers with
quantized_decomposed quantize / dequantize ops around float ATen ops (weights folded to int8
constants): the decomposed q/dq form the graph IR says too.
"""
import copy
from time import perf_counter

import torch
from torchao.quantization.pt2e import quantize_pt2e
from torchao.quantization.pt2e.observer import ObserverBase
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from ..quantizer import ACTIVATION_OBSERVERS, VkdQuantizer
from .attention_sdpa import attention_as_sdpa, drop_unread_weights
from .errors import ExportError
from .ops_transformer import attention_as_one_op


class Quantized:
    """What quantize() made: `converted` (the PT2E reference model the graph IR is walked from:
    float ATen ops between quantize / dequantize), `float_module` (the exported float model,
    the accuracy report's reference), `calibration` (observed value name -> range and
    parameters, as the observers are gone after convert) and `samples` (how many)."""

    def __init__(self, converted, float_module, calibration, samples):
        self.converted = converted
        self.float_module = float_module
        self.calibration = calibration
        self.samples = samples


def capture(model, example_inputs, dynamic_shapes=None):
    """torch.export.export of `model` in eval mode: its ATen graph as a GraphModule. Each
    nn.MultiheadAttention is made the ops of a BERT attention block first where they express it
    (attention_sdpa), else one op (ops_transformer): changes `model`, a copy."""
    try:
        model = attention_as_sdpa(attention_as_one_op(model.eval()))
        program = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes)
        return keep_shared_batch_norms(drop_unread_weights(program.module()))
    except ExportError:
        raise
    except Exception as e:  # the model's code cannot be captured, or PyTorch refused it
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ExportError(f"torch.export failed on the model: {type(e).__name__}: {first}") from e


_BATCH_NORMS = (torch.ops.aten.batch_norm.default,
                torch.ops.aten._native_batch_norm_legit_no_training.default)
_FOLDED_INTO = ("conv", "linear")  # the producers prepare_pt2e folds a batch norm into


def keep_shared_batch_norms(gm):
    """`gm` with a clone between a batch norm and its conv / linear where that conv's result
    has other readers too (a pre-activation block: the stem conv feeds bn1 and the residual
    add; a DenseNet layer: norm1 and the cat). prepare_pt2e folds every batch norm into the
    conv before it (torchao's _fuse_conv_bn_ / _fuse_linear_bn_) without looking at the conv's
    other readers, which then see normalized values: a wrong model. Behind the clone the batch
    norm stays standalone (q8ta_batch_norm), as the model computes it; the clone shares its
    input's quantization and folds away in the compiler."""
    for bn in [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _BATCH_NORMS]:
        producer = bn.args[0]
        if not isinstance(producer, torch.fx.Node) or producer.op != "call_function" or \
                not any(k in str(producer.target) for k in _FOLDED_INTO) or \
                len(producer.users) == 1:
            continue
        with gm.graph.inserting_before(bn):
            clone = gm.graph.call_function(torch.ops.aten.clone.default, (producer,))
        clone.meta["val"] = producer.meta.get("val")
        bn.replace_input_with(producer, clone)
    gm.recompile()
    return gm


def quantize(model, example_inputs, calibration, per_channel=True, observer="histogram",
             log=None, quantizer=None, dynamic_shapes=None):
    """A Quantized of `model` (left untouched: a copy is exported).

    example_inputs: a tuple of tensors (what torch.export captures with); calibration: an
    iterable of samples (a tensor or a tuple of tensors each); quantizer: a PT2E Quantizer
    (default VkdQuantizer(per_channel, observer)). `log(step, seconds, detail)` is called after
    each step when given. `dynamic_shapes`: torch.export's (a sequence length as a Dim with a
    maximum); the calibration samples may then have any length in its range, and to_graph_ir
    takes the same dynamic_shapes.
    """
    if observer not in ACTIVATION_OBSERVERS:
        raise ExportError(f"unknown observer '{observer}' (accepted: "
                          f"{', '.join(ACTIVATION_OBSERVERS)})")
    check_finite_weights(model)
    t = perf_counter()
    float_module = capture(copy.deepcopy(model), example_inputs, dynamic_shapes)
    _log(log, "torch.export", t, "")
    t = perf_counter()
    quantizer = quantizer or VkdQuantizer(per_channel, observer)
    try:
        prepared = prepare_pt2e(copy.deepcopy(float_module), quantizer)
    except Exception as e:  # the quantizer refused the graph
        raise ExportError(f"prepare_pt2e failed on the model: {type(e).__name__}: {e}") from e
    _log(log, "prepare_pt2e", t, type(quantizer).__name__)
    t, count = perf_counter(), 0
    watch = ActivationWatch(prepared)
    try:
        with torch.no_grad():
            for sample in calibration:
                count += 1
                watch.sample = count
                run_model(prepared, as_args(sample))
    finally:
        watch.remove()
    if count == 0:
        raise ExportError("calibration needs at least one sample")
    _log(log, "calibrate", t, f"{count} sample(s), {observer} observers")
    t = perf_counter()
    summary = observed_ranges(prepared)
    converted = convert_ptq(prepared)
    _log(log, "convert_pt2e", t, "")
    return Quantized(converted, float_module, summary, count)


def convert_ptq(prepared):
    """convert_pt2e of a graph prepare_pt2e made, without the folding of QAT's conv + batch
    norm pairs: it exports 96 pattern graphs (~20 s) wherever a batch norm is left, and finds
    nothing, as prepare_pt2e folded every batch norm that follows a conv already."""
    fold = quantize_pt2e._fold_conv_bn_qat
    quantize_pt2e._fold_conv_bn_qat = lambda model: model
    try:
        return convert_pt2e(prepared)
    finally:
        quantize_pt2e._fold_conv_bn_qat = fold


def as_args(sample):
    """A calibration sample as the positional arguments of the model."""
    return tuple(sample) if isinstance(sample, (tuple, list)) else (sample,)


def run_model(prepared, args):
    """One calibration forward pass; the model failing on the input is the user's problem."""
    try:
        prepared(*args)
    except ExportError:
        raise
    except Exception as e:  # e.g. an input shape the model cannot take
        shapes = ", ".join(str(list(a.shape)) for a in args if isinstance(a, torch.Tensor))
        raise ExportError(f"the model failed on a calibration input of shape {shapes}: "
                          f"{type(e).__name__}: {e}") from e


def check_finite_weights(model):
    """Refuses NaN or infinity in the model's float parameters and buffers: no int8 scale holds
    them, and PyTorch's observers would stop on an assertion far from the cause."""
    for kind, named in (("parameter", model.named_parameters()),
                        ("buffer", model.named_buffers())):
        for name, tensor in named:
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise ExportError(f"the model's {kind} '{name}' holds {_non_finite(tensor)}; "
                                  "quantization needs finite weights")


class ActivationWatch:
    """Forward pre-hooks on the prepared graph's observers: an observed value holding NaN or
    infinity (the model's own arithmetic on a calibration input: a log of a negative, a
    division by zero) is named, with the sample, before the observer fails on it."""

    def __init__(self, prepared):
        self.sample = 0
        self.handles = []
        for node in prepared.graph.nodes:
            if node.op == "call_module" and \
                    isinstance(prepared.get_submodule(node.target), ObserverBase):
                hook = self._check(node.args[0].name if node.args else node.name)
                self.handles.append(
                    prepared.get_submodule(node.target).register_forward_pre_hook(hook))

    def _check(self, value):
        def check(module, args):
            x = args[0] if args else None
            if isinstance(x, torch.Tensor) and x.is_floating_point() and \
                    not bool(torch.isfinite(x).all()):
                raise ExportError(f"calibration sample {self.sample}: the value '{value}' holds "
                                  f"{_non_finite(x)}; quantization needs finite activations")
        return check

    def remove(self):
        for handle in self.handles:
            handle.remove()


def _non_finite(tensor):
    """'3 NaN and 1 infinite value(s) of 48'."""
    nan = int(torch.isnan(tensor).sum())
    inf = int(torch.isinf(tensor).sum())
    return f"{nan} NaN and {inf} infinite value(s) of {tensor.numel()}"


def _log(log, step, start, detail):
    if log is not None:
        log(step, perf_counter() - start, detail)


def observed_ranges(prepared):
    """Each observer of the prepared graph, keyed by the name of the value it watches (the same
    name the value keeps in the converted graph): its observed range and chosen parameters,
    the zero point also on the int8 scale the graph IR uses."""
    summary = {}
    for node in prepared.graph.nodes:
        if node.op != "call_module":
            continue
        obs = prepared.get_submodule(node.target)
        if not isinstance(obs, ObserverBase) or not hasattr(obs, "min_val"):
            continue
        scale, zero_point = obs.calculate_qparams()
        if scale.numel() != 1 or node.args[0].op == "get_attr":
            continue  # a weight's observer: reported with its op
        shift = 128 if obs.dtype in (torch.quint8, torch.uint8) else 0
        summary[node.args[0].name] = {
            "observer": type(obs).__name__, "dtype": str(obs.dtype).replace("torch.", ""),
            "min": float(obs.min_val), "max": float(obs.max_val),
            "scale": float(scale), "zero_point": int(zero_point),
            "int8_zero_point": int(zero_point) - shift}
    return summary
