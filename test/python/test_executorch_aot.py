"""vkdelegate.executorch ahead of time (issue 33): a VkdQuantizer-quantized model through
torch.export and ExecuTorch's to_edge_transform_and_lower with VkdPartitioner, into a .pte
(run by CTest `python_exporter`). Checked on the .pte itself (ExecuTorch's deserializer):
tiny_unet is one VkdBackend delegate and no CPU operator, and its payload computes exactly
what the exporter's direct route compiles (both blobs run by `vkd run` on one input, outputs
compared byte for byte); a LayerNorm or a cumsum between two convs is left to ExecuTorch's CPU
kernels between two delegates, named with the compiler's reason; a partition that does not
compile stops preprocess with the node named."""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
from torch import nn
from executorch.exir import to_edge, to_edge_transform_and_lower
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.schema import DelegateCall, KernelCall

from vkdelegate._native import vkd_binary
from vkdelegate.examples_models import tiny_unet
from vkdelegate import executorch as vkd_executorch
from vkdelegate.executorch import VkdBackend, VkdLoweringError, VkdPartitioner
from vkdelegate.export import quantize, safetensors, to_graph_ir
from vkdelegate.export.ir import to_json_text


class ConvMidConv(nn.Module):
    """conv -> relu -> `mid` -> conv: `mid` is what the compiler refuses."""

    def __init__(self, mid):
        super().__init__()
        self.first = nn.Conv2d(3, 8, 3, padding=1)
        self.mid = mid
        self.second = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.second(self.mid(torch.relu(self.first(x))))


class CumSum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 3)


def quantized_program(model, shape):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen)
    calibration = [torch.randn(shape, generator=gen) for _ in range(2)]
    converted = quantize(model.eval(), (x,), calibration).converted
    return converted, x, torch.export.export(converted, (x,))


def lower(ep):
    """(the .pte's program, the partitioner's printout, the .pte's bytes)."""
    printed = []
    partitioner = VkdPartitioner(log=printed.append)
    et = to_edge_transform_and_lower(ep, partitioner=[partitioner]).to_executorch()
    program = deserialize_pte_binary(et.buffer)
    return getattr(program, "program", program), printed, et.buffer


def instructions(plan):
    """('delegate', id) / ('kernel', op name) per instruction, in execution order."""
    steps = []
    for instruction in plan.chains[0].instructions:
        call = instruction.instr_args
        if isinstance(call, DelegateCall):
            steps.append(("delegate", plan.delegates[call.delegate_index].id))
        elif isinstance(call, KernelCall):
            steps.append(("kernel", plan.operators[call.op_index].name))
    return steps


def run_blob(blob_path, x, folder):
    np.save(folder / "x.npy", x.numpy())
    out = folder / "out"
    subprocess.run([str(vkd_binary()), "run", str(blob_path), "--input",
                    f"input0={folder / 'x.npy'}", "--output-dir", str(out)],
                   check=True, capture_output=True)
    (result,) = sorted(out.glob("*.npy"))
    return np.load(result)


def delegated_and_direct(program, graph, tensors, sample):
    """`sample` run through the program's delegate payload and through the blob `vkd compile`
    makes of the converted model's graph IR (`graph`, `tensors`): (delegated, direct) outputs."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        payload = folder / "payload.vkd"
        payload.write_bytes(program.backend_delegate_data[0].data)
        (folder / "direct.json").write_text(to_json_text(graph))
        safetensors.save(str(folder / "direct.safetensors"), tensors)
        subprocess.run([str(vkd_binary()), "compile", str(folder / "direct.json"),
                        "--weights", str(folder / "direct.safetensors"),
                        "-o", str(folder / "direct.vkd")], check=True, capture_output=True)
        os.mkdir(folder / "a")
        os.mkdir(folder / "b")
        return (run_blob(payload, sample, folder / "a"),
                run_blob(folder / "direct.vkd", sample, folder / "b"))


class TinyUNetFullyDelegated(unittest.TestCase):
    def test_one_delegate_computing_the_direct_route(self):
        torch.manual_seed(0)
        converted, x, ep = quantized_program(tiny_unet(), (1, 3, 32, 32))
        program, printed, pte = lower(ep)
        (plan,) = program.execution_plan
        self.assertEqual([d.id for d in plan.delegates], ["VkdBackend"])
        self.assertEqual([o.name for o in plan.operators], [])  # no CPU operator
        self.assertEqual(instructions(plan), [("delegate", "VkdBackend")])
        self.assertIn("0 node(s) left", printed[-1])
        graph, tensors = to_graph_ir(converted, (x,), name="direct")
        sample = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
        delegated, direct = delegated_and_direct(program, graph, tensors, sample)
        self.assertEqual(delegated.shape, (1, 4, 32, 32))
        self.assertEqual(delegated.tobytes(), direct.tobytes())
        # `import vkdelegate.executorch` registered VkdBackend with ExecuTorch's runtime, where
        # the build made libvkd_executorch.so (CMake sets VKD_EXPECT_EXECUTORCH_BACKEND=1 when
        # it builds the target; else its configure message says why it did not).
        if os.environ.get("VKD_EXPECT_EXECUTORCH_BACKEND", "1") != "1":
            print("ExecuTorch runtime half not run: this build has no libvkd_executorch.so "
                  "(see the configure message of executorch_backend/)")
            return
        self.assertIsNone(vkd_executorch.RUNTIME_BACKEND_ERROR)
        from executorch.runtime import Runtime
        method = Runtime.get().load_program(pte).load_method("forward")
        (through_executorch,) = method.execute([sample])
        self.assertEqual(through_executorch.numpy().tobytes(), delegated.tobytes())


class PartlyDelegated(unittest.TestCase):
    def check_split(self, mid, cpu_ops, refused_op):
        torch.manual_seed(0)
        _, _, ep = quantized_program(ConvMidConv(mid), (1, 3, 16, 16))
        program, printed, pte = lower(ep)
        (plan,) = program.execution_plan
        self.assertEqual([o.name for o in plan.operators], cpu_ops)
        self.assertEqual(instructions(plan), [("delegate", "VkdBackend")]
                         + [("kernel", op) for op in cpu_ops] + [("delegate", "VkdBackend")])
        self.assertTrue(printed[0].startswith("VkdPartitioner: 2 VkdBackend delegate(s)"))
        left = [line for line in printed if line.strip().startswith("left ")]
        self.assertTrue(left)
        for line in left:
            self.assertIn(f"{refused_op}: not supported by the backend", line)

    def test_cumsum_left_to_the_cpu(self):
        self.check_split(CumSum(), ["aten::cumsum"], "aten.cumsum")


class LayerNormDelegated(unittest.TestCase):
    def test_native_layer_norm_in_the_delegate(self):
        """The edge dialect's LayerNorm is aten.native_layer_norm (output, mean, rstd; only the
        output read): the walk writes it as aten.layer_norm, so conv -> LayerNorm -> conv is one
        delegate, no CPU kernel, computing what the blob of the converted model computes."""
        torch.manual_seed(0)
        converted, x, ep = quantized_program(ConvMidConv(nn.LayerNorm(16)), (1, 3, 16, 16))
        program, printed, _ = lower(ep)
        (plan,) = program.execution_plan
        self.assertEqual([o.name for o in plan.operators], [])
        self.assertEqual(instructions(plan), [("delegate", "VkdBackend")])
        self.assertIn("aten::native_layer_norm x1", printed[1])
        graph, tensors = to_graph_ir(converted, (x,), name="direct")
        self.assertIn("aten.layer_norm", [n["op"] for n in graph["nodes"]])
        delegated, direct = delegated_and_direct(program, graph, tensors, x)
        self.assertEqual(delegated.shape, (1, 8, 16, 16))
        self.assertEqual(delegated.tobytes(), direct.tobytes())

    def test_mean_or_rstd_read_stays_native_layer_norm(self):
        """A native_layer_norm whose mean is read too is written as it is (the graph IR has no op
        writing the statistics): the compiler refuses it by name."""
        class NormAndMean(nn.Module):
            def forward(self, x):
                out, mean, _ = torch.ops.aten.native_layer_norm(x, [4], None, None, 1e-5)
                return out + mean

        x = torch.randn(2, 3, 4)
        edge = to_edge(torch.export.export(NormAndMean(), (x,))).exported_program()
        graph, _ = to_graph_ir(edge, (x,))
        self.assertEqual([n["op"] for n in graph["nodes"]][0], "aten.native_layer_norm")


class WalkReadsTheEdgeDialect(unittest.TestCase):
    def test_edge_ops_and_the_edge_clone(self):
        """The edge dialect's ops are EdgeOpOverloads (the ATen op inside) and its clone is
        dim_order_ops._clone_dim_order: the walk writes them as their ATen ops. The edge dialect
        lifts the number of `* 2` into a 0-d constant: the product is mul.Scalar again, as the
        exporter writes it from ATen."""
        class ReluCloneMul(nn.Module):
            def forward(self, x):
                return torch.relu(x).clone() * 2

        x = torch.randn(1, 2, 3, 4)
        edge = to_edge(torch.export.export(ReluCloneMul(), (x,))).exported_program()
        graph, _ = to_graph_ir(edge, (x,))
        self.assertEqual([n["op"] for n in graph["nodes"]],
                         ["aten.relu", "aten.clone", "aten.mul.Scalar"])
        self.assertEqual(graph["nodes"][2]["args"], {"other": 2.0})


class PreprocessFailsLoudly(unittest.TestCase):
    def test_partition_that_does_not_compile_names_the_node(self):
        torch.manual_seed(0)
        _, _, ep = quantized_program(ConvMidConv(CumSum()), (1, 3, 16, 16))
        edge = to_edge(ep).exported_program()
        with self.assertRaisesRegex(VkdLoweringError, r"node 'aten_cumsum_default' "
                                    r"\(aten\.cumsum: not supported by the backend"):
            VkdBackend.preprocess(edge, [])


if __name__ == "__main__":
    unittest.main()
