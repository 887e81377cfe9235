"""VkdPartitioner: tags for VkdBackend exactly the nodes of an edge program that the project's
compiler can run, and prints what it delegated and what it left to ExecuTorch's CPU kernels,
with the compiler's reason per node."""
import collections

import torch
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data, tag_mutated_buffer
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from vkdelegate.export.ops import aten_overload

from .backend import VkdBackend
from .compiler_check import (VkdLoweringError, compile_nodes, compile_program,
                             with_real_constants)
from .edge_no_decomp import fake_like_aten

aten = torch.ops.aten
# Ops the edge dialect would otherwise decompose into pieces the walk does not reassemble:
# pixel_shuffle into view / permute / _clone_dim_order, max_pool2d into
# max_pool2d_with_indices (an int64 index output the graph IR refuses), conv2d into
# convolution, linear into permute_copy + addmm (which left a classifier's head on the CPU,
# its per-channel dequantize without an ExecuTorch kernel), scaled_dot_product_attention into
# bmm / softmax / masking ops (BERT's attention on the CPU between two dozen delegates; whole,
# the compiler makes it one q8ta_attention with its head moves), rsub into sub.Tensor (BERT's
# (1 - mask) * -10000, which the attention makes in its kernel), linalg_vector_norm into pow /
# sum (F.normalize after sentence-transformers' mean pooling). A decomposition choice, not a
# support list: ExecuTorch keeps one of them whole only where the compiler takes that node
# (ExecuTorch requires a kept op to be delegated), the others decompose for its CPU kernels.
KEEP_UNDECOMPOSED = [aten.pixel_shuffle.default, aten.max_pool2d.default, aten.conv2d.default,
                     aten.linear.default, aten.scaled_dot_product_attention.default,
                     aten.rsub.Scalar, aten.linalg_vector_norm.default]


class _CompilerSays(OperatorSupportBase):
    """Every call node the compiler did not refuse."""

    def __init__(self, refused):
        super().__init__()
        self.refused = refused

    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and node.name not in self.refused


class VkdPartitioner(Partitioner):
    """Partitioner for to_edge_transform_and_lower: the whole program goes through the
    exporter's walk and `vkd compile` once; the nodes it refuses stay on the CPU, the rest form
    VkdBackend delegates (torch's CapabilityBasedPartitioner groups them). The boundaries fall
    on float tensors: a dequantize feeding a CPU op stays in its producer's delegate, the
    quantize reading one in its consumer's. `log`: where the report goes (print by default);
    the last one is kept in `self.report`."""

    def __init__(self, log=print):
        super().__init__()
        self.delegation_spec = DelegationSpec(VkdBackend.__name__, [])
        self.log = log
        self.report = []

    def _delegates(self, ep, gm, refused):
        """The delegates over the nodes the compiler takes, each checked alone: the whole
        program's verdict can rest on a fusion across a node now outside the delegate, so a
        node a delegate alone refuses joins `refused` (in place) and the grouping is redone,
        until every delegate compiles."""
        while True:
            partitions = _propose(ep, refused)
            if len(partitions) == 1 and not refused:
                return partitions  # the whole program: its verdict is the delegate's
            more = {}
            for partition in partitions:
                names = {n.name for n in partition.nodes}
                more.update(_refused(compile_nodes(gm, names), f"delegate {sorted(names)[0]}"))
            if not more:
                return partitions
            if set(more) <= set(refused):  # no progress: the compiler named nothing new
                raise VkdLoweringError("VkdPartitioner: delegates keep failing to compile on "
                                       f"nodes already left out: {sorted(more)[:8]}")
            refused.update(more)

    def ops_to_not_decompose(self, ep):
        verdict = {}  # the compiler's refusals in `ep`, asked for once ExecuTorch filters

        def compiler_takes(node):
            # ExecuTorch also asks about every node of the lowered program (kept ops must be
            # gone): what is left there is what no delegate took.
            if node.op != "call_function" or _op_of(node) not in KEEP_UNDECOMPOSED or \
                    any("executorch_call_delegate" in str(n.target) for n in node.graph.nodes):
                return False
            if "refused" not in verdict:
                verdict["refused"] = _refused_by_compiler(ep, "undecomposed")
            return node.name not in verdict["refused"]
        for op in KEEP_UNDECOMPOSED:  # the kept nodes traced with the strides export gave them
            fake_like_aten(op)
        return KEEP_UNDECOMPOSED, compiler_takes

    def partition(self, ep):
        gm = with_real_constants(ep.module())
        refused = _refused(compile_program(ep, gm, name="whole"))
        partitions = self._delegates(ep, gm, refused)
        for k, partition in enumerate(partitions):
            for node in partition.nodes:
                node.meta["delegation_tag"] = f"vkd{k}"
        tags = {f"vkd{k}": self.delegation_spec for k in range(len(partitions))}
        tag_constant_data(ep)
        tag_mutated_buffer(ep)
        self.report = _report(ep, partitions, refused)
        for line in self.report:
            self.log(line)
        return PartitionResult(tagged_exported_program=ep, partition_tags=tags)


def _propose(ep, refused):
    """The delegates for the nodes not `refused`, in graph order."""
    partitions = CapabilityBasedPartitioner(
        ep.graph_module, _CompilerSays(refused),
        allows_single_node_partition=True).propose_partitions()
    position = {node: k for k, node in enumerate(ep.graph.nodes)}
    return sorted(partitions, key=lambda p: min(position[n] for n in p.nodes))


def _refused(verdict, what="the whole program"):
    """{FX node name: reason} for the nodes `vkd compile` refused in `verdict`."""
    if verdict.returncode != 0 and not verdict.refused:
        raise VkdLoweringError(f"VkdPartitioner: vkd compile failed on {what} without naming "
                               f"a node:\n{verdict.messages}")
    return verdict.refused


def _refused_by_compiler(ep, name):
    """{FX node name: reason} for the nodes of `ep` that `vkd compile` refuses."""
    return _refused(compile_program(ep, with_real_constants(ep.module()), name=name))


def _op_of(node):
    """The ATen OpOverload of a node (an edge op's inside), or None."""
    return aten_overload(node.target)


def _op_name(node):
    op = aten_overload(node.target)
    return op.name() if op is not None else getattr(node.target, "__name__", str(node.target))


def _report(ep, partitions, refused):
    """The printout: one line per delegate (its ops counted) and one per node left to the CPU
    with the compiler's reason."""
    lines = [f"VkdPartitioner: {len(partitions)} VkdBackend delegate(s)"]
    for k, partition in enumerate(partitions):
        ops = collections.Counter(_op_name(n) for n in partition.nodes)
        counted = ", ".join(f"{op} x{count}" for op, count in sorted(ops.items()))
        lines.append(f"  delegated vkd{k}: {len(partition.nodes)} node(s): {counted}")
    left = [n for n in ep.graph.nodes if n.op == "call_function" and n.name in refused]
    lines.append(f"VkdPartitioner: {len(left)} node(s) left to ExecuTorch's CPU kernels"
                 + (":" if left else ""))
    for node in left:
        lines.append(f"  left {node.name} ({_op_name(node)}): {refused[node.name]}")
    return lines
