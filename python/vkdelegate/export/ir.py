"""The graph IR being built (compiler/README.md): values, nodes and the constants' data.

Every value is declared with its dtype and shape, node outputs included: the compiler infers
them for the ops it knows and needs them for the ops it passes through.
"""
import json

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
        for the FX nodes they came from, so derived names never steal them."""
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

    def to_dict(self):
        return {"vkd_graph": 1, "inputs": list(self.inputs), "outputs": list(self.outputs),
                "values": dict(self.values), "nodes": list(self.nodes)}


def to_json_text(graph):
    """The graph as JSON text with one value or node per line: readable and diffable."""
    def entries(items):
        return ",\n".join("    " + item for item in items)

    values = entries(f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}"
                     for k, v in graph["values"].items())
    nodes = entries(json.dumps(n, allow_nan=False) for n in graph["nodes"])
    return (f'{{ "vkd_graph": {graph["vkd_graph"]},\n'
            f'  "inputs": {json.dumps(graph["inputs"])},\n'
            f'  "outputs": {json.dumps(graph["outputs"])},\n'
            f'  "values": {{\n{values} }},\n'
            f'  "nodes": [\n{nodes} ] }}\n')
