"""A dynamic sequence length (issue 35): a model exported with torch.export's `Dim` written as
one graph IR at its maximum length plus a "dynamic" section saying which value dimensions and
node args follow the length L, each as a * L + b (compiler/README.md, "Dynamic length").

The walk gives concrete shapes only, so the section is found by walking the graph at the
maximum, at the length below it and at the minimum and comparing: everything must be equal but
sizes and int args, which must follow one a * L + b, and constants, which may only be cut to
the length in their first dimension larger than 1 (a position-embedding table the walk folded:
at a shorter length the blob's constant is its first rows). A float that changes with the
length (a scale of 1/sqrt(T)) or another constant cannot be written: it is an ExportError
naming it. `vkd compile` then checks the compiled blob at many more lengths.
"""
import numpy as np
import torch

from .errors import ExportError


class DynamicLength:
    """The one dynamic dimension of the inputs: its name, range and [(input index, dim)]."""

    def __init__(self, name, minimum, maximum, dims):
        self.name, self.min, self.max, self.dims = name, minimum, maximum, dims


def dynamic_length(dynamic_shapes, input_names, example_inputs):
    """The DynamicLength of torch.export's `dynamic_shapes` (a dict by forward argument name, or
    a tuple / list by position, of {dim: Dim}), or None when it is None. One Dim may be shared
    by several inputs; a second one, a dim without a maximum, or an input the model does not
    take is an ExportError."""
    if dynamic_shapes is None:
        return None
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in input_names]
        if unknown:
            raise ExportError(f"dynamic_shapes names {unknown}, which the model does not take "
                              f"(its inputs: {list(input_names)})")
        per_input = [dynamic_shapes.get(n) for n in input_names]
    else:
        per_input = list(dynamic_shapes)
        if len(per_input) != len(example_inputs):
            raise ExportError(f"dynamic_shapes has {len(per_input)} entries for "
                              f"{len(example_inputs)} inputs")
    found, dims = None, []
    for i, spec in enumerate(per_input):
        if spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for dim, d in items:
            if d is None:
                continue
            name = getattr(d, "__name__", None)
            if name is None or not hasattr(d, "max"):
                raise ExportError(f"dynamic_shapes: input {input_names[i]!r} dim {dim} must be a "
                                  f"torch.export.Dim, got {d!r}")
            if found is not None and found.__name__ != name:
                raise ExportError(f"dynamic_shapes has two dynamic dims ({found.__name__!r} and "
                                  f"{name!r}); one length (a sequence length) is supported")
            found = d
            dims.append((i, int(dim)))
    if found is None:
        return None
    maximum = found.max
    if maximum is None or maximum > 2 ** 31 - 1:
        raise ExportError(f"dynamic_shapes: Dim {found.__name__!r} needs a maximum "
                          f"(Dim({found.__name__!r}, max=...)): the blob is compiled at it")
    minimum = max(int(found.min or 1), 1)
    if minimum >= maximum:
        raise ExportError(f"dynamic_shapes: Dim {found.__name__!r} has min {minimum} >= max "
                          f"{maximum}")
    return DynamicLength(found.__name__, minimum, int(maximum), dims)


def inputs_at(example_inputs, length, dynamic):
    """The example inputs with every dynamic dim made `length` long: cut, or repeated from its
    start (token ids stay valid ids)."""
    out = list(example_inputs)
    for i, dim in dynamic.dims:
        x = out[i]
        have = x.shape[dim]
        index = torch.arange(length) % have
        out[i] = torch.index_select(x, dim, index).contiguous()
    return tuple(out)


def dynamic_section(walked, dynamic):
    """The graph IR's "dynamic" section from {length: (graph dict, tensors)} of the same model
    walked at the maximum, the length below it and others. ExportError naming what changes
    with the length other than by a * L + b."""
    top, below = dynamic.max, dynamic.max - 1
    graph = walked[top][0]
    name = dynamic.name

    def affine(by_length, where):
        a = by_length[top] - by_length[below]
        b = by_length[top] - a * top
        for length, v in by_length.items():
            if a * length + b != v:
                shown = ", ".join(f"{k}: {by_length[k]}" for k in sorted(by_length))
                raise ExportError(f"{where} does not follow the length {name} as a * {name} + b "
                                  f"({shown}); export at a fixed length")
        return a, b

    for length, (g, tensors) in walked.items():
        if g["inputs"] != graph["inputs"] or g["outputs"] != graph["outputs"] or \
                list(g["values"]) != list(graph["values"]) or len(g["nodes"]) != len(graph["nodes"]):
            raise ExportError(f"the graph at {name} = {length} has other values or nodes than at "
                              f"{name} = {top}; export at a fixed length")
        for key, array in tensors.items():
            if not _leading_rows_of(array, walked[top][1][key]):
                raise ExportError(f"constant {key!r} changes with the length {name} other than "
                                  f"by keeping its first rows; export at a fixed length")

    values = {}
    for vname, v in graph["values"].items():
        decls = {length: g["values"][vname] for length, (g, _) in walked.items()}
        for length, d in decls.items():
            if d.get("dtype") != v.get("dtype") or d.get("data") != v.get("data") or \
                    len(d["shape"]) != len(v["shape"]):
                raise ExportError(f"value {vname!r} changes other than in its sizes at "
                                  f"{name} = {length}; export at a fixed length")
        for dim in range(len(v["shape"])):
            sizes = {length: d["shape"][dim] for length, d in decls.items()}
            if len(set(sizes.values())) > 1:
                values.setdefault(vname, []).append(
                    [dim, *affine(sizes, f"value {vname!r} dim {dim}")])

    args = []
    for k, node in enumerate(graph["nodes"]):
        nodes = {length: g["nodes"][k] for length, (g, _) in walked.items()}
        where = f"node {k} ({node['op']})"
        for length, n in nodes.items():
            if (n["op"], n["inputs"], n["outputs"], sorted(n["args"])) != \
                    (node["op"], node["inputs"], node["outputs"], sorted(node["args"])):
                raise ExportError(f"{where} differs at {name} = {length}; export at a fixed "
                                  f"length")
        for arg, value in node["args"].items():
            seen = {length: n["args"][arg] for length, n in nodes.items()}
            if all(s == value for s in seen.values()):
                continue
            if all(_is_int(s) for s in seen.values()):
                args.append([k, arg, -1, *affine(seen, f"{where} arg {arg!r}")])
                continue
            if all(isinstance(s, list) and len(s) == len(value) for s in seen.values()):
                for e in range(len(value)):
                    items = {length: s[e] for length, s in seen.items()}
                    if len(set(map(repr, items.values()))) == 1:
                        continue
                    if not all(_is_int(s) for s in items.values()):
                        raise ExportError(f"{where} arg {arg!r} item {e} changes with the "
                                          f"length {name} and is no int; export at a fixed "
                                          f"length")
                    args.append([k, arg, e, *affine(items, f"{where} arg {arg!r} item {e}")])
                continue
            raise ExportError(f"{where} arg {arg!r} changes with the length {name} "
                              f"({seen[top]!r} at {top}, {seen[below]!r} at {below}); export at "
                              f"a fixed length")
    if not values:
        raise ExportError(f"no value of the graph changes with the length {name}")
    return {"name": name, "min": dynamic.min, "max": dynamic.max, "values": values,
            "args": args}


def _leading_rows_of(array, full):
    """Whether `array` is `full` or its first rows along its first axis larger than 1 (a
    position table cut to the length: the compiler and the runtime cut it the same way)."""
    if array.shape == full.shape:
        return np.array_equal(array, full)
    if array.ndim != full.ndim:
        return False
    axes = [k for k in range(array.ndim) if array.shape[k] != full.shape[k]]
    if len(axes) != 1 or any(n != 1 for n in full.shape[:axes[0]]):
        return False
    return np.array_equal(array, np.take(full, np.arange(array.shape[axes[0]]), axis=axes[0]))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)
