"""How closely one model's outputs follow another's: cosine, SQNR and top-1 agreement.

Pure numpy, for any arrays (numpy arrays, or torch tensors, read as numpy): the exporter's
report compares PyTorch's reference-quantized model with the float model, and a `vkd run`
(or vkdelegate.runtime) result is compared with a PyTorch reference the same way:

    from vkdelegate import accuracy
    print(accuracy.format_report(accuracy.report(reference_outputs, device_outputs)))

- cosine(a, b): the cosine of the angle between the flattened arrays (1: same direction).
- sqnr_db(reference, other): 10 log10(sum(reference^2) / sum((reference - other)^2)), the
  signal-to-quantization-noise ratio in dB (every 6 dB: one bit); inf when they are equal.
- top1_agreement(reference, other): for classifier logits, an output of shape [N, C] with
  C > 1 (is_classifier_output), how many of the N rows have the same argmax over C.
- per_layer_sqnr(reference_values, other_values): the values both hold (by name) ranked by
  SQNR, lowest first: where the error arises and grows.
Sums are taken in float64.
"""
import math

import numpy as np

TOP_LAYERS = 10  # format_report lists this many layers of a per-layer ranking


def as_array(x):
    """`x` as a numpy array: a torch tensor is read through numpy without importing torch."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _pair(reference, other):
    """Both as float64 arrays of one shape, or a ValueError saying how they differ."""
    a, b = as_array(reference), as_array(other)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {list(a.shape)} and {list(b.shape)}")
    return a.astype(np.float64), b.astype(np.float64)


def cosine(a, b):
    """cos(angle) between `a` and `b` flattened; 1.0 when both are all zero, 0.0 when only one
    is (no direction to agree with)."""
    a, b = _pair(a, b)
    na, nb = math.sqrt(float(np.sum(a * a))), math.sqrt(float(np.sum(b * b)))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.sum(a * b)) / (na * nb)


def sqnr_db(reference, other):
    """10 log10(sum(reference^2) / sum((reference - other)^2)) in dB: inf when `other` equals
    `reference`, -inf when the reference is all zero and `other` is not."""
    ref, got = _pair(reference, other)
    signal = float(np.sum(ref * ref))
    noise = float(np.sum((ref - got) ** 2))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def is_classifier_output(shape):
    """Whether an output of `shape` is read as classifier logits: [N, C] with C > 1."""
    return len(shape) == 2 and shape[1] > 1


def top1_agreement(reference, other):
    """(rows whose argmax over the last axis is the same, rows) for [N, C] logits. A tie picks
    the first of the tied classes (numpy's argmax), in both arrays alike."""
    ref, got = _pair(reference, other)
    if not is_classifier_output(ref.shape):
        raise ValueError(f"top-1 wants [N, C] logits with C > 1, got shape {list(ref.shape)}")
    same = np.argmax(ref, axis=1) == np.argmax(got, axis=1)
    return int(np.sum(same)), int(same.size)


def _named(outputs, names):
    """[(name, array)] of one array, a sequence of arrays or a {name: array} mapping."""
    if isinstance(outputs, dict):
        return [(str(k), as_array(v)) for k, v in outputs.items()]
    if hasattr(outputs, "shape"):
        outputs = [outputs]
    arrays = [as_array(v) for v in outputs]
    names = list(names) if names is not None else \
        (["output"] if len(arrays) == 1 else [f"output_{k}" for k in range(len(arrays))])
    if len(names) != len(arrays):
        raise ValueError(f"{len(names)} names for {len(arrays)} outputs")
    return list(zip(names, arrays))


def compare(reference, other):
    """{"shape", "cosine", "sqnr_db", "max_abs_diff"} of one output, with "top1": {"agree",
    "rows"} when it is classifier logits."""
    ref, got = _pair(reference, other)
    entry = {"shape": list(ref.shape), "cosine": cosine(ref, got), "sqnr_db": sqnr_db(ref, got),
             "max_abs_diff": float(np.max(np.abs(ref - got), initial=0.0))}
    if is_classifier_output(ref.shape):
        agree, rows = top1_agreement(ref, got)
        entry["top1"] = {"agree": agree, "rows": rows}
    return entry


def report(reference_outputs, outputs, names=None, title="agreement with the reference"):
    """compare() of each output with its reference: {"title", "outputs": [{"name", ...}]} for
    format_report (JSON-ready, but for an SQNR of inf). Each argument is one array, a sequence
    of arrays (one per model output) or a {name: array} mapping (matched by name); `names`
    names a sequence's outputs (default output, or output_0, output_1, ...). To compare over
    several inputs, concatenate each output's arrays along the first axis."""
    refs = _named(reference_outputs, names)
    got = dict(_named(outputs, None if isinstance(outputs, dict) else names))
    if sorted(got) != sorted(n for n, _ in refs):
        raise ValueError(f"outputs {sorted(got)} do not match the reference's "
                         f"{sorted(n for n, _ in refs)}")
    rows = []
    for name, ref in refs:
        try:
            rows.append(dict(name=name, **compare(ref, got[name])))
        except ValueError as e:
            raise ValueError(f"output '{name}': {e}") from None
    return {"title": title, "outputs": rows}


def per_layer_sqnr(reference_values, other_values, ops=None):
    """[{"name", "op", "sqnr_db", "cosine"}] for each name in both mappings whose arrays have
    the same shape, lowest SQNR first (graph order among equals: Python's sort is stable).
    `ops` ({name: text}) labels each layer with its op."""
    layers = []
    for name, ref in reference_values.items():
        if name not in other_values:
            continue
        ref, got = as_array(ref), as_array(other_values[name])
        if ref.shape != got.shape:
            continue
        layers.append({"name": name, "op": (ops or {}).get(name, ""),
                       "sqnr_db": sqnr_db(ref, got), "cosine": cosine(ref, got)})
    layers.sort(key=lambda layer: layer["sqnr_db"])
    return layers


def _db(value):
    """An SQNR for the text: two decimals, 'exact' for inf (a number, or its text as
    NAME.accuracy.json holds a non-finite one)."""
    value = float(value)
    if value == math.inf:
        return "exact"
    return f"{value:.2f}"


def format_report(result, top=TOP_LAYERS):
    """The text of a report() (optionally with "per_layer": {"input", "layers"} as the exporter
    adds): one line per output, then the `top` lowest-SQNR layers and how many there are."""
    lines = [f"{result.get('title', 'agreement with the reference')}:"]
    width = max([len("output")] + [len(o["name"]) for o in result["outputs"]])
    lines.append(f"  {'output':<{width}}  {'shape':<16} {'cosine':>9} {'SQNR dB':>8}  top-1")
    for o in result["outputs"]:
        top1 = "-"
        if "top1" in o:
            t = o["top1"]
            top1 = f"{t['agree']}/{t['rows']} rows ({100.0 * t['agree'] / t['rows']:.1f}%)"
        cos = float(o["cosine"])
        lines.append(f"  {o['name']:<{width}}  {str(o['shape']):<16} {cos:>9.5f} "
                     f"{_db(o['sqnr_db']):>8}  {top1}")
    if any("top1" in o for o in result["outputs"]):
        lines.append("  (top-1: an output [N, C] with C > 1 is read as logits; a row agrees "
                     "when its argmax is the same)")
    per_layer = result.get("per_layer")
    if per_layer is not None:
        layers = per_layer["layers"]
        shown = layers[:top]
        more = f" (the {len(shown)} lowest shown)" if len(shown) < len(layers) else ""
        lines.append(f"per layer, on {per_layer['input']}: {len(layers)} layers compared with "
                     f"the float model, lowest SQNR first{more}:")
        lines.append(f"  {'SQNR dB':>8} {'cosine':>9}  layer (op)")
        for layer in shown:
            op = f" ({layer['op']})" if layer.get("op") else ""
            lines.append(f"  {_db(layer['sqnr_db']):>8} {float(layer['cosine']):>9.5f}  "
                         f"{layer['name']}{op}")
    return "\n".join(lines)
