"""Every VkdBackend delegate of a lowered program checked on its own, on the tensors ExecuTorch's
runtime actually handed it: `tap_delegates` makes the program also return each delegate call's
inputs and outputs (test-only surgery on the edge program, before to_executorch); then
`check_delegates` runs each delegate's payload with `vkd run` on the inputs ExecuTorch gave it
(its output must be byte for byte what ExecuTorch got from VkdBackend) and PyTorch's reference
of the partition (the edge program it was lowered from) on the same inputs, within the tie rule:
one output LSB where the output is a dequantized int8, exact for float byte moves."""
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.export.graph_signature import OutputKind, OutputSpec, TensorArgument
from torch.utils import _pytree as pytree

from vkdelegate._native import vkd_binary
from vkdelegate.runtime import load


@dataclass
class Delegate:
    """One delegate call: its lowered module, and where its inputs / outputs sit among the
    tapped program's outputs."""
    lowered: object
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)


def tap_delegates(edge):
    """Appends every delegate call's inputs (but its constants) and outputs to the outputs of
    `edge`'s program, in place; returns the Delegates in call order."""
    ep = edge.exported_program()
    graph = ep.graph
    output = next(n for n in graph.nodes if n.op == "output")
    user_inputs = set(ep.graph_signature.user_inputs)
    returned = list(output.args[0])
    delegates = []
    for call in graph.nodes:
        if call.op != "call_function" or "executorch_call_delegate" not in str(call.target):
            continue
        delegate = Delegate(getattr(ep.graph_module, call.args[0].target))
        for arg in call.args[1:]:
            if arg.op == "placeholder" and arg.name not in user_inputs:
                continue  # a constant the partition carries
            delegate.inputs.append(len(returned))
            returned.append(arg)
        for item in sorted(call.users, key=lambda u: u.args[1]):
            delegate.outputs.append(len(returned))
            returned.append(item)
        delegates.append(delegate)
    for node in returned[len(output.args[0]):]:
        ep.graph_signature.output_specs.append(
            OutputSpec(kind=OutputKind.USER_OUTPUT, arg=TensorArgument(name=node.name),
                       target=None))
    output.args = (tuple(returned),)
    ep._module_call_graph[0].signature.out_spec = pytree.tree_structure(
        tuple(range(len(ep.graph_signature.user_outputs))))
    ep.graph_module.recompile()
    return delegates


def vkd_run(payload, inputs):
    """The payload's outputs by `vkd run` on `inputs` (numpy), in the blob's output order."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        blob = folder / "payload.vkd"
        blob.write_bytes(payload)
        command = [str(vkd_binary()), "run", str(blob), "--output-dir", str(folder / "out")]
        for k, value in enumerate(inputs):
            np.save(folder / f"in{k}.npy", value)
            command += ["--input", f"input{k}={folder / f'in{k}.npy'}"]
        subprocess.run(command, check=True, capture_output=True)
        names = [spec.name for spec in load(blob).outputs]
        return [np.load(folder / "out" / f"{name}.npy") for name in names]


def output_lsbs(lowered):
    """Per output of the partition: the scale of the dequantize making it, or 0 (a float op)."""
    gm = lowered.original_module.graph_module
    (out,) = [n for n in gm.graph.nodes if n.op == "output"]
    return [float(leaf.args[1]) if "dequantize_per_tensor" in str(leaf.target) else 0.0
            for leaf in out.args[0]]


def check_delegates(test, delegates, outputs):
    """Each delegate: `vkd run` byte-equal to what ExecuTorch got, PyTorch's reference within
    one LSB (exact for a float output). `outputs`: the tapped program's outputs (numpy)."""
    for k, delegate in enumerate(delegates):
        given = [outputs[i] for i in delegate.inputs]
        got = [outputs[i] for i in delegate.outputs]
        want = vkd_run(delegate.lowered.processed_bytes, given)
        test.assertEqual(len(want), len(got), f"delegate {k}")
        for j, (a, b) in enumerate(zip(got, want)):
            test.assertEqual(a.tobytes(), b.tobytes(), f"delegate {k} output {j}")
        reference = delegate.lowered.original_module.module()(
            *[torch.from_numpy(v) for v in given])
        reference = reference if isinstance(reference, (tuple, list)) else [reference]
        for j, (a, ref, lsb) in enumerate(zip(got, reference, output_lsbs(delegate.lowered))):
            diff = np.abs(a - ref.detach().numpy()).max() if a.size else 0.0
            test.assertLessEqual(diff, lsb * 1.001, f"delegate {k} output {j}")
