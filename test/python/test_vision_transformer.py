"""torchvision's VisionTransformer exported and run (issue 35's first model; run by CTest
`python_exporter`). A small ViT (32x32 images, 8x8 patches, 2 layers, 2 heads; random weights,
the zero-initialised head made random so the output says something) is quantized with
VkdQuantizer, walked into the graph IR and compiled with `vkd compile --partition`: its class
token `x[:, 0]` (aten.select.int, which neither the backend nor the host ran, so the model did
not compile) is written as a one-long slice and a view. `vkd run` of the plan must give the
converted (PyTorch reference-quantized) model's logits within one output step. A select with a
negative dim and index (x[..., -1]) is checked against PyTorch on its own.

Each encoder block's nn.MultiheadAttention reaches the compiler as a BERT attention block
(export/attention_sdpa.py) and becomes one q8ta_attention on the GPU (the report says so); its
linears, layer norms and residual adds are GPU ops too; the patch embedding's conv -> tokens
move (view + permute) is a q8ta_permute and a q8ta_view, the class token's cat with a constant
a q8ta_cat reading the constant as int8x4 data, x[:, 0] a q8ta_slice and a q8ta_view: the plan
is one GPU partition with no host step. Run with `vkd run --intermediates` under the
validation layer (plan_steps.py), every int8 tensor is compared with PyTorch's reference model
fed the device's inputs (vkdelegate.per_layer): within 1 LSB, and only at rounding ties.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torchvision.models.vision_transformer import VisionTransformer

from vkdelegate.export import quantize, safetensors, to_graph_ir
from vkdelegate.export.ir import to_json_text

from test_exporter import compile_partitioned

SHAPE = (1, 3, 32, 32)


def small_vit():
    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10).eval()
    nn.init.normal_(model.heads.head.weight, std=0.5)
    nn.init.normal_(model.heads.head.bias, std=0.1)
    return model


class LastColumn(nn.Module):
    """conv, then x[..., -1]: a select with a negative dim and index."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))[..., -1]


def output_step(converted):
    """The step of the int8 tensor the output comes from: the scale of the first dequantize up
    its producers (a select after it moves bytes)."""
    (out,) = [n for n in converted.graph.nodes if n.op == "output"]
    node = out.args[0][0] if isinstance(out.args[0], (tuple, list)) else out.args[0]
    while "dequantize_per_tensor" not in str(node.target):
        node = node.args[0]
    return float(node.args[1])


def run_partitioned(converted, x, folder):
    """`vkd compile --partition` and `vkd run` of the converted model: (output, graph)."""
    graph, _, _ = compile_partitioned(converted, x, folder)
    run = subprocess.run([os.environ["VKD"], "run", str(folder / "m.partition.json"), "--weights",
                          str(folder / "m.safetensors"), "--input",
                          f"input0={folder / 'x.npy'}", "--output-dir", str(folder / "out")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    (result,) = sorted((folder / "out").glob("*.npy"))
    return np.load(result), graph


class VisionTransformerRuns(unittest.TestCase):
    def check(self, model):
        self.assertTrue(os.environ.get("VKD"), "no vkd binary: CTest passes VKD=<the built vkd>")
        gen = torch.Generator().manual_seed(1)
        x = torch.randn(SHAPE, generator=gen)
        calibration = [torch.randn(SHAPE, generator=gen) for _ in range(2)]
        converted = quantize(model, (x,), calibration).converted
        with tempfile.TemporaryDirectory() as tmp:
            got, graph = run_partitioned(converted, x, Path(tmp))
        want = converted(x).detach().numpy()
        self.assertEqual(got.shape, want.shape)
        step = output_step(converted)
        self.assertGreater(step, 0.0)
        self.assertGreater(np.abs(want).max(), 10 * step)  # not a constant output
        self.assertLessEqual(np.abs(got - want).max(), step * 1.001)  # one step: a tie
        return graph

    def test_small_vit_runs_as_pytorch_does(self):
        graph = self.check(small_vit())
        ops = [n["op"] for n in graph["nodes"]]
        self.assertNotIn("aten.select.int", ops)
        self.assertIn("aten.slice_copy.Tensor", ops)
        self.assertNotIn("aten._native_multi_head_attention", ops)
        self.assertEqual(ops.count("aten.scaled_dot_product_attention"), 2)

    def test_small_vit_layer_by_layer(self):
        """Each attention one q8ta_attention; one GPU partition, no host step; every int8
        tensor within 1 LSB of PyTorch's, only at ties."""
        from plan_steps import run_steps
        from vkdelegate import per_layer
        from vkdelegate.export.walk import ir_value_names
        gen = torch.Generator().manual_seed(1)
        x = torch.randn(SHAPE, generator=gen)
        calibration = [torch.randn(SHAPE, generator=gen) for _ in range(2)]
        converted = quantize(small_vit(), (x,), calibration).converted
        graph, tensors = to_graph_ir(converted, (x,), name="m")
        vkd = os.environ["VKD"]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "m.json").write_text(to_json_text(graph))
            safetensors.save(str(folder / "m.safetensors"), tensors)
            done = subprocess.run([vkd, "compile", str(folder / "m.json"), "--weights",
                                   str(folder / "m.safetensors"), "--partition", "--report",
                                   "-o", str(folder / "m.vkd")], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            plan = json.loads((folder / "m.partition.json").read_text())
            written = run_steps(vkd, str(folder), plan, graph, tensors,
                                {graph["inputs"][0]: x.numpy()})
        fused = re.findall(r"into q8ta_attention '([^']+)' \(2 heads of 16, no mask\)",
                           done.stdout)
        self.assertEqual(len(fused), 2, done.stdout)
        host = [s["host"] for s in plan["steps"] if "host" in s]
        self.assertEqual(host, [], done.stdout)
        self.assertEqual(len(plan["steps"]), 1, plan)  # the whole ViT, one GPU partition

        device = {k: v for k, v in written.items() if v.dtype == np.int8}
        # Each block's Q, K and V linears are one q8ta_linear_qkv: its column blocks are theirs.
        self.assertEqual(per_layer.split_merged_qkv(done.stdout, device), 2, done.stdout)
        result = per_layer.compare(converted, (x,), device)
        names = ir_value_names(converted)
        compared = {names.get(r.name, r.name) for r in result.layers}
        self.assertTrue(set(fused) <= compared, (fused, sorted(compared)))
        self.assertGreaterEqual(len(result.layers), 20)
        self.assertIsNone(result.first_real, result.summary())
        self.assertLessEqual(max(r.max_abs_diff for r in result.layers), 1)
        print(f"small ViT: {result.summary()}; host steps {host}")

    def test_negative_dim_and_index(self):
        graph = self.check(LastColumn().eval())
        (piece,) = [n for n in graph["nodes"] if n["op"] == "aten.slice_copy.Tensor"]
        self.assertEqual((piece["args"]["dim"], piece["args"]["start"], piece["args"]["end"]),
                         (3, 31, 32))


if __name__ == "__main__":
    unittest.main()
