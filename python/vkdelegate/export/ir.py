"""The graph IR being built (compiler/README.md): values, nodes and the constants' data.

Every value is declared with its dtype and shape, node outputs included: the compiler infers
them for the ops it knows and needs them for the ops it passes through. The graph's outputs are
named after the model's (named_leaves): `vkd run` writes each output as <its name>.npy.
"""
import json
import re

import numpy as np


class GraphIR:
    """Accumulates one graph: unique value names, declarations, nodes in execution order and the
    numpy arrays of the constants (written to safetensors under their `data` names)."""

    def __init__(self, reserved=()):
        self.inputs, self.outputs, self.nodes = [], [], []
        self.values, self.tensors = {}, {}
        self._constants = {}  # data name -> value name
        self._reserved = set(reserved)
        self._taken = set()

    def fresh(self, base):
        """A value name not used yet, `base` itself when possible. Names in `reserved` are kept
        for the graph nodes they came from, so derived names never steal them."""
        name, k = base, 1
        while name in self._taken or (name in self._reserved and name != base):
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        return name

    def claim(self, name):
        """Takes a reserved name for the value it was reserved for."""
        if name in self._taken:
            return self.fresh(name)
        self._taken.add(name)
        return name

    def add_input(self, name, dtype, shape):
        self.values[name] = {"dtype": dtype, "shape": list(shape)}
        self.inputs.append(name)

    def add_constant(self, base, array, data_name):
        """Declares a constant value holding `array`, stored in the weights as `data_name`. Data
        written before under the same name (a module called twice) gives back its value."""
        if data_name in self._constants:
            return self._constants[data_name]
        name = self.fresh(base)
        array = np.ascontiguousarray(array)
        self.tensors[data_name] = array
        self._constants[data_name] = name
        self.values[name] = {"dtype": str(array.dtype), "shape": list(array.shape),
                             "data": data_name}
        return name

    def add_node(self, op, inputs, args, output, dtype, shape):
        """Appends one single-output node and declares its output; returns the output's name."""
        return self.add_node_outputs(op, inputs, args, [(output, dtype, shape)])[0]

    def add_node_outputs(self, op, inputs, args, outputs):
        """Appends one node with `outputs` [(name, dtype, shape), ...] (a split has several) and
        declares each; returns their names."""
        for name, dtype, shape in outputs:
            self.values[name] = {"dtype": dtype, "shape": list(shape)}
        names = [name for name, _, _ in outputs]
        self.nodes.append({"op": op, "inputs": list(inputs), "args": dict(args),
                           "outputs": names})
        return names

    def rename(self, old, new):
        """Renames value `old` to `new` (a name not taken yet) wherever it appears."""
        self._taken.add(new)
        self.values = {new if k == old else k: v for k, v in self.values.items()}
        for node in self.nodes:
            node["inputs"] = [new if i == old else i for i in node["inputs"]]
            node["outputs"] = [new if o == old else o for o in node["outputs"]]
        self.inputs = [new if i == old else i for i in self.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def name_outputs(self, wanted):
        """Gives the graph's outputs the names in `wanted` (one per output, in order). A value
        already holding a wanted name is renamed out of its way, unless it is a graph input (the
        output then gets a suffix); a graph input that is also an output keeps its name, and a
        value that is output twice keeps the first name it gets."""
        assert len(wanted) == len(self.outputs), (wanted, self.outputs)
        renamed = set()
        for i, want in enumerate(wanted):
            old = self.outputs[i]
            if old in renamed or old in self.inputs or old == want:
                renamed.add(old)
                continue
            if want in self.values:
                if want in self.inputs or want in renamed:
                    want = self.fresh(want)
                else:
                    self.rename(want, self.fresh(want))
            self.rename(old, want)
            renamed.add(want)

    def to_dict(self):
        return {"vkd_graph": 1, "inputs": list(self.inputs), "outputs": list(self.outputs),
                "values": dict(self.values), "nodes": list(self.nodes)}


def named_leaves(structure):
    """(name, leaf) for each leaf of what a model's forward returned (a tensor, or tuples /
    lists / dicts / namedtuples of them; a leaf is anything else), depth first: a single leaf is
    "output", a tuple's items "output_0", "output_1", ..., a dict's and a namedtuple's under
    their keys ({"out": x, "aux": y}: "out", "aux"), nested ones joined by "_" ({"out": (a, b)}:
    "out_0", "out_1"). Names keep [A-Za-z0-9_.-], anything else becomes "_" (as `vkd run` does
    for its file names); unique_names makes them unique."""
    found = []

    def visit(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                visit(item, path + [_name_part(key)])
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            for key, item in zip(value._fields, value):
                visit(item, path + [_name_part(key)])
        elif isinstance(value, (tuple, list)):
            for k, item in enumerate(value):
                visit(item, (path or ["output"]) + [str(k)])
        else:
            found.append(("_".join(path) if path else "output", value))

    visit(structure, [])
    return found


def unique_names(names):
    """`names` with repeats suffixed _1, _2, ... (skipping names already in the list)."""
    unique, seen, wanted = [], set(), set(names)
    for name in names:
        candidate, k = name, 1
        while candidate in seen or (candidate != name and candidate in wanted):
            candidate, k = f"{name}_{k}", k + 1
        seen.add(candidate)
        unique.append(candidate)
    return unique


def _name_part(key):
    """A dict key or namedtuple field as part of a value name (and of `vkd run`'s file name)."""
    part = re.sub(r"[^A-Za-z0-9_.-]", "_", str(key))
    return part if part.strip(".") else f"_{part}"


def to_json_text(graph):
    """The graph as JSON text with one value or node per line: readable and diffable."""
    def entries(items):
        return ",\n".join("    " + item for item in items)

    values = entries(f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}"
                     for k, v in graph["values"].items())
    nodes = entries(json.dumps(n, allow_nan=False) for n in graph["nodes"])
    dynamic = f',\n  "dynamic": {json.dumps(graph["dynamic"])}' if "dynamic" in graph else ""
    return (f'{{ "vkd_graph": {graph["vkd_graph"]},\n'
            f'  "inputs": {json.dumps(graph["inputs"])},\n'
            f'  "outputs": {json.dumps(graph["outputs"])},\n'
            f'  "values": {{\n{values} }},\n'
            f'  "nodes": [\n{nodes} ]{dynamic} }}\n')
