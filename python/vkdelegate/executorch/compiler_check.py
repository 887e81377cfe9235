"""The compiler's verdict on an edge program: walk it into the graph IR (the exporter's own
walk), run `vkd compile` on it, and name each FX node the compiler refused with its reason.
The partitioner and VkdBackend.preprocess share it: what the compiler accepts is the one
source of truth for what is delegated; no op list is kept in Python."""
import re
import subprocess
import tempfile
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensor

from vkdelegate._native import vkd_binary
from vkdelegate.export import safetensors
from vkdelegate.export.errors import ExportError
from vkdelegate.export.ir import to_json_text
from vkdelegate.export.pipeline import to_graph_ir

# `vkd compile` lists every node it cannot compile as "node N (op): reason", N the index of
# the node in the graph IR's "nodes".
_REFUSAL = re.compile(r"node (\d+) \(([^)]*)\): (.*)$")


class VkdLoweringError(ExportError):
    """A partition VkdPartitioner accepted does not compile, or the compiler failed without
    naming a node: lowering stops here rather than writing a .pte without the delegate."""


class Compiled:
    """One `vkd compile` run: the graph IR, the blob (None when it failed), vkd's messages and
    {FX node name: "op: reason"} for the nodes it refused."""

    def __init__(self, graph, blob, returncode, messages, refused):
        self.graph = graph
        self.blob = blob
        self.returncode = returncode
        self.messages = messages
        self.refused = refused


def user_inputs(ep):
    """Example tensors for an ExportedProgram's user inputs, of their dtype and shape: the walk
    runs the graph once to learn every value's shape; the values themselves do not matter."""
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    examples = []
    for name in ep.graph_signature.user_inputs:
        val = placeholders[name].meta["val"]
        make = torch.randn if val.dtype.is_floating_point else torch.zeros
        examples.append(make(tuple(val.shape), dtype=val.dtype))
    return examples


def with_real_constants(gm):
    """`gm` with every FakeTensor constant replaced by a real tensor of its dtype and shape
    (float 1, integer 0), in place. Partitioner.partition gets a fake program (ExecuTorch's
    backend_api runs it through get_fake_program); what the compiler decides from depends on
    ops, dtypes, shapes and the q/dq arguments, which are real there."""
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        *path, leaf = node.target.split(".")
        owner = gm.get_submodule(".".join(path)) if path else gm
        value = getattr(owner, leaf)
        if not isinstance(value, FakeTensor):
            continue
        make = torch.ones if value.dtype.is_floating_point else torch.zeros
        real = make(tuple(value.shape), dtype=value.dtype)
        if isinstance(value, torch.nn.Parameter):
            real = torch.nn.Parameter(real, requires_grad=False)
        setattr(owner, leaf, real)
    return gm


def compile_program(ep, gm=None, name="delegate"):
    """Walks `gm` (default: ep.module()) into the graph IR and runs `vkd compile` on it."""
    gm = ep.module() if gm is None else gm
    graph, tensors = to_graph_ir(gm, user_inputs(ep), name=name)
    with tempfile.TemporaryDirectory(prefix="vkd_executorch_") as folder:
        files = {kind: Path(folder) / f"{name}{suffix}" for kind, suffix in
                 (("graph", ".json"), ("weights", ".safetensors"), ("blob", ".vkd"))}
        files["graph"].write_text(to_json_text(graph))
        safetensors.save(str(files["weights"]), tensors)
        cmd = [str(vkd_binary()), "compile", str(files["graph"]), "--weights",
               str(files["weights"]), "-o", str(files["blob"])]
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        blob = files["blob"].read_bytes() if done.returncode == 0 else None
    messages = (done.stderr or done.stdout).strip()
    return Compiled(graph, blob, done.returncode, messages, _refused_nodes(graph, gm, messages))


def _refused_nodes(graph, gm, messages):
    """{FX node name: "op: reason"}: the compiler's "node N (op): reason" lines, through the
    IR node's outputs to the FX nodes that hold them (the walk writes each FX node's IR value
    names in node.meta["vkd_value"]; a multi-output op and its getitems share them)."""
    holders = {}
    for node in gm.graph.nodes:
        for name in _value_names(node):
            holders.setdefault(name, []).append(node.name)
    # to_graph_ir renames the graph's outputs after the walk ("output", "output_0"): they
    # follow the output node's leaves in order.
    output = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = []
    torch.fx.node.map_arg(output.args[0], leaves.append)
    walked = [name for leaf in leaves for name in _value_names(leaf)]
    for renamed, name in zip(graph["outputs"], walked):
        holders.setdefault(renamed, holders.get(name, []))
    refused = {}
    for line in messages.splitlines():
        found = _REFUSAL.search(line)
        if not found:
            continue
        ir_node = graph["nodes"][int(found.group(1))]
        for output in ir_node["outputs"]:
            for fx_name in holders.get(output, []):
                refused[fx_name] = f"{found.group(2)}: {found.group(3)}"
    return refused


def _value_names(node):
    value = node.meta.get("vkd_value")
    return [value] if isinstance(value, str) else list(value or [])
