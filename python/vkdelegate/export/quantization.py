"""Static int8 quantization of a float model through PyTorch's FX graph mode.

prepare_fx with qnnpack's backend config (plus nn.Upsample, observed as F.interpolate is: PyTorch
1.13's config lists the function but not the module, whose output would stay float) and a qconfig
mapping equal to qnnpack's default except
for the observers: activations quint8 affine per tensor (HistogramObserver as qnnpack, or
MinMaxObserver, which is faster), weights qint8 symmetric restricted to [-127, 127], per output
channel or per tensor. Then calibration on the given samples and convert_to_reference_fx: the
reference graph keeps float ops between explicit quantize / dequantize nodes, which is what the
graph IR's decomposed q/dq form says too.
"""
import copy
from time import perf_counter

import torch
from torch.ao.quantization import (HistogramObserver, MinMaxObserver, PerChannelMinMaxObserver,
                                   QConfig, QConfigMapping, get_default_qconfig_mapping)
from torch.ao.quantization.backend_config import (BackendPatternConfig,
                                                  get_qnnpack_backend_config)
from torch.ao.quantization.observer import ObserverBase
from torch.ao.quantization.quantize_fx import convert_to_reference_fx, prepare_fx

from .errors import ExportError
from .torch_compat import fx_tuple_unpacking

OBSERVERS = {"histogram": HistogramObserver, "minmax": MinMaxObserver}


def qconfig(per_channel=True, observer="histogram"):
    """The activation / weight observers: quint8 affine activations over the full range, qint8
    symmetric weights in [-127, 127] (qnnpack's own symmetric weight range)."""
    if observer not in OBSERVERS:
        raise ExportError(f"unknown observer '{observer}' (accepted: {', '.join(OBSERVERS)})")
    activation = OBSERVERS[observer].with_args(dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                                               reduce_range=False)
    if per_channel:
        weight = PerChannelMinMaxObserver.with_args(
            dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-127, quant_max=127)
    else:
        weight = MinMaxObserver.with_args(
            dtype=torch.qint8, qscheme=torch.per_tensor_symmetric, quant_min=-127, quant_max=127)
    return QConfig(activation=activation, weight=weight)


TRANSPOSED_CONVS = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d,
                    torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
                    torch.nn.functional.conv_transpose3d)


def qconfig_mapping(per_channel=True, observer="histogram"):
    """qnnpack's default mapping with our observers wherever it uses its default ones; the ops
    with fixed quantization parameters (sigmoid, tanh, ...) and the reshapes that reuse their
    input's parameters keep theirs. Transposed convs get per-tensor weights."""
    base = get_default_qconfig_mapping("qnnpack")
    default, ours = base.global_qconfig, qconfig(per_channel, observer)

    def replace(qc):
        if qc is None:
            return None
        return QConfig(
            activation=ours.activation if qc.activation is default.activation else qc.activation,
            weight=ours.weight if qc.weight is default.weight else qc.weight)

    mapping = QConfigMapping().set_global(ours)
    for obj, qc in base.object_type_qconfigs.items():
        mapping.set_object_type(obj, replace(qc))
    # PyTorch 1.13 refuses per-channel weights for transposed convs: per tensor for those.
    per_tensor = qconfig(False, observer)
    for obj in TRANSPOSED_CONVS:
        mapping.set_object_type(obj, per_tensor)
    return mapping


def backend_config():
    """qnnpack's backend config, with nn.Upsample and its subclasses configured as
    F.interpolate is (the output shares the input's observer, so a nearest upsample moves int8
    values unchanged)."""
    config = get_qnnpack_backend_config()
    interpolate = config.configs[torch.nn.functional.interpolate]
    for module in (torch.nn.Upsample, torch.nn.UpsamplingNearest2d,
                   torch.nn.UpsamplingBilinear2d):
        config.set_backend_pattern_config(
            BackendPatternConfig(module)
            .set_observation_type(interpolate.observation_type)
            .set_dtype_configs(interpolate.dtype_configs))
    return config


def as_args(sample):
    """A calibration sample as the positional arguments of the model."""
    return tuple(sample) if isinstance(sample, (tuple, list)) else (sample,)


def quantize(model, example_inputs, calibration, per_channel=True, observer="histogram",
             log=None):
    """The quantized reference GraphModule of `model` (left untouched: a copy is prepared).

    example_inputs: a tuple of tensors (what FX traces with); calibration: an iterable of samples
    (a tensor or a tuple of tensors each). The observed ranges are kept on the result as
    `gm.vkd_calibration` (value name -> summary), as the observers are gone after convert.
    `log(step, seconds, detail)` is called after each step when given.
    """
    check_finite_weights(model)
    backend = backend_config()
    model = copy.deepcopy(model).eval()
    t = perf_counter()
    try:
        with fx_tuple_unpacking():
            prepared = prepare_fx(model, qconfig_mapping(per_channel, observer),
                                  tuple(example_inputs), backend_config=backend)
    except ExportError:
        raise
    except Exception as e:  # symbolic tracing failed on the model's code, or PyTorch refused it
        raise ExportError(f"prepare_fx failed on the model: {type(e).__name__}: {e}") from e
    _log(log, "prepare_fx", t, "")
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
    gm = convert_to_reference_fx(prepared, backend_config=backend)
    gm.vkd_calibration = summary
    _log(log, "convert_to_reference_fx", t, "")
    return gm


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
        if scale.numel() != 1:
            continue  # a per-channel observer in the graph: a weight, reported with its op
        shift = 128 if obs.dtype == torch.quint8 else 0
        summary[node.args[0].name] = {
            "observer": type(obs).__name__, "dtype": str(obs.dtype).replace("torch.", ""),
            "min": float(obs.min_val), "max": float(obs.max_val),
            "scale": float(scale), "zero_point": int(zero_point),
            "int8_zero_point": int(zero_point) - shift}
    return summary
