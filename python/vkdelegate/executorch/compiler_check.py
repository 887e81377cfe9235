"""The compiler's verdict on an edge program: walk it into the graph IR (the exporter's own
walk), run `vkd compile` on it, and name each FX node the compiler refused with its reason.
The partitioner and VkdBackend.preprocess share it: what the compiler accepts is the one
source of truth for what is delegated; no op list is kept in Python."""
import operator
import re
import subprocess
import tempfile
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule

from vkdelegate._native import vkd_binary
from vkdelegate.export import safetensors
from vkdelegate.export.errors import ExportError
from vkdelegate.export.ir import to_json_text
from vkdelegate.export.pipeline import to_graph_ir

# `vkd compile` lists every node it cannot compile as "node N (op): reason", N the index of
# the node in the graph IR's "nodes".
_REFUSAL = re.compile(r"node (\d+) \(([^)]*)\): (.*)$")
# ... and every graph output it cannot make as "output 'NAME': reason" (a constant one).
_OUTPUT_REFUSAL = re.compile(r"output '([^']*)': (.*)$")


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
    return [_example(placeholders[name].meta["val"]) for name in ep.graph_signature.user_inputs]


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
    return compile_graph_module(ep.module() if gm is None else gm, user_inputs(ep), name)


def compile_nodes(gm, names, name="partition"):
    """`vkd compile` on the nodes `names` of `gm` alone, as a partition of them is compiled:
    the values they read from other nodes become inputs, those read elsewhere outputs, the
    constants only they read come along. Refusals name the nodes by their names in `gm`."""
    chosen = {n for n in gm.graph.nodes if n.name in names}
    for node in gm.graph.nodes:  # the constants the partition alone reads (tag_constant_data)
        if node.op == "get_attr" and node.users and set(node.users) <= chosen:
            chosen.add(node)
    ordered = [n for n in gm.graph.nodes if n in chosen]
    sub, _, _ = fuse_as_graphmodule(gm, ordered, "partition", always_return_tuple=True)
    examples = [_example(p.meta["val"]) for p in sub.graph.nodes if p.op == "placeholder"]
    return compile_graph_module(sub, examples, name)


def _example(val):
    make = torch.randn if val.dtype.is_floating_point else torch.zeros
    return make(tuple(val.shape), dtype=val.dtype)


def compile_graph_module(gm, examples, name):
    """Walks `gm` on `examples` into the graph IR and runs `vkd compile` on it."""
    graph, tensors = to_graph_ir(gm, examples, name=name)
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
    # to_graph_ir renames the graph's outputs after the walk ("output_0", "output_1", ...):
    # they follow the output node's leaves in order, one per leaf (a split returned whole: one
    # per piece). A leaf's IR value may be gone under its walked name (renamed) or have none (a
    # dequantize, emitted afresh for the output), so the renamed output also names the leaf.
    output = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = []
    torch.fx.node.map_arg(output.args[0], leaves.append)
    position = 0
    for leaf in leaves:
        walked = _value_names(leaf) or [None]
        for renamed, name in zip(graph["outputs"][position:position + len(walked)], walked):
            holders.setdefault(renamed, list(holders.get(name, [])))
            if leaf.name not in holders[renamed]:
                holders[renamed].append(leaf.name)
        position += len(walked)
    refused = {}
    for line in messages.splitlines():
        found = _REFUSAL.search(line)
        if found:
            ir_node = graph["nodes"][int(found.group(1))]
            for output in ir_node["outputs"]:
                for fx_name in holders.get(output, []):
                    refused[fx_name] = f"{found.group(2)}: {found.group(3)}"
            continue
        found = _OUTPUT_REFUSAL.search(line)
        for fx_name in holders.get(found.group(1), []) if found else []:
            refused[fx_name] = f"its result {found.group(2)}"
    return _with_pieces(gm, refused)


def _with_pieces(gm, refused):
    """`refused` with a multi-output node and its getitems together (one refused: all are):
    a getitem cannot be delegated apart from the node whose piece it picks."""
    nodes = {n.name: n for n in gm.graph.nodes}
    for name, why in list(refused.items()):
        node = nodes.get(name)
        if node is None:
            continue
        source = node.args[0] if node.target is operator.getitem else node
        if not isinstance(source, torch.fx.Node):
            continue
        for related in [source] + [u for u in source.users if u.target is operator.getitem]:
            refused.setdefault(related.name, why)
    return refused


def _value_names(node):
    value = node.meta.get("vkd_value")
    return [value] if isinstance(value, str) else list(value or [])
