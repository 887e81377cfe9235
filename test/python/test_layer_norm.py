"""nn.LayerNorm on the GPU (issue 35's first new op family; run by CTest `python_exporter`).

Linear -> LayerNorm -> Linear on [1, 7, 10] (a row that is no multiple of 4) and [1, 16, 384]
(MiniLM's hidden size), quantized with vkdelegate.export.quantize (VkdQuantizer) and compiled
with `vkd compile --partition`: the layer norm must become q8ta_layer_norm (the report says so;
the plan has no host step), and every int8 tensor `vkd run --intermediates` writes, the layer
norm's output included, must equal the converted (PyTorch reference-quantized) model's: 1 LSB
apart at a rounding tie only (vkdelegate.per_layer). A LayerNorm without weight and bias, and
a float model's LayerNorm (the float op layer_norm) against PyTorch's float32 result.
"""
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vkdelegate import per_layer
from vkdelegate.export import quantize

from test_exporter import compile_partitioned
from test_quantizer import PostNormBlock


class LinearNormLinear(nn.Module):
    def __init__(self, c, affine=True):
        super().__init__()
        self.a = nn.Linear(c, c)
        self.ln = nn.LayerNorm(c, elementwise_affine=affine)
        self.b = nn.Linear(c, 8)
        if affine:  # PyTorch starts them at 1 / 0: make them matter
            with torch.no_grad():
                self.ln.weight.uniform_(0.5, 1.5)
                self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.b(self.ln(self.a(x)))


def compile_and_run(converted, x, folder):
    """`vkd compile --partition` of the converted model (its report and plan), then `vkd run
    --intermediates` of its one GPU partition: (report, plan, {name: array})."""
    _, _, report = compile_partitioned(converted, x, folder, "--report")
    plan = json.loads((folder / "m.partition.json").read_text())
    steps = plan["steps"]
    assert len(steps) == 1 and "delegate" in steps[0], steps  # no host step
    run = subprocess.run([os.environ["VKD"], "run", str(folder / steps[0]["delegate"]), "--input",
                          f"input0={folder / 'x.npy'}", "--intermediates", "--output-dir",
                          str(folder / "out")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    out = folder / "out"
    arrays = {p.stem: np.load(p) for p in out.glob("*.npy")}
    return report, plan, arrays


def check_every_quantize(test, converted, x, arrays):
    """The run's int8 tensors against the reference (vkdelegate.per_layer): no real difference,
    every quantize of the reference compared, at most a few ties in a tensor. Returns them."""
    int8 = {k: v for k, v in arrays.items() if v.dtype == np.int8}
    result = per_layer.compare(converted, (x,), int8)
    test.assertIsNone(result.first_real, result.summary())
    quantizes = [n for n in converted.graph.nodes if "quantize_per_tensor" in str(n.target)
                 and "dequantize" not in str(n.target)]
    test.assertEqual(len(result.layers), len(quantizes), result.summary())
    for layer in result.layers:
        test.assertLessEqual(layer.ties, max(1, layer.elements // 50), result.summary())
    return int8


class LayerNormOnTheGpu(unittest.TestCase):
    def check(self, shape, backend, **kwargs):
        self.assertTrue(os.environ.get("VKD"), "no vkd binary: CTest passes VKD=<the built vkd>")
        torch.manual_seed(0)
        model = LinearNormLinear(shape[-1], **kwargs).eval()
        gen = torch.Generator().manual_seed(1)
        x = torch.randn(shape, generator=gen)
        calibration = [torch.randn(shape, generator=gen) for _ in range(2)]
        converted = quantize(model, (x,), calibration).converted
        with tempfile.TemporaryDirectory() as tmp:
            report, plan, arrays = compile_and_run(converted, x, Path(tmp))
        self.assertIn("fused dq -> aten.layer_norm -> q (node", report)
        self.assertIn(f"into {backend} 'layer_norm_q'", report)
        self.assertNotIn("aten.layer_norm", json.dumps(plan))
        int8 = check_every_quantize(self, converted, x, arrays)
        self.assertIn("layer_norm_q", int8)  # the layer norm's output among those compared

    def test_row_of_10(self):
        self.check((1, 7, 10), "q8ta_layer_norm")

    def test_minilm_hidden_size(self):
        self.check((1, 16, 384), "q8ta_layer_norm")

    def test_without_weight_and_bias(self):
        self.check((1, 5, 32), "q8ta_layer_norm", affine=False)

    def test_float_layer_norm(self):
        """A float model's LayerNorm (what a quantizer that leaves it float gives): the float op
        layer_norm, within float32 rounding of PyTorch's."""
        self.assertTrue(os.environ.get("VKD"), "no vkd binary: CTest passes VKD=<the built vkd>")
        torch.manual_seed(0)
        model = nn.Sequential(nn.LayerNorm(10, eps=1e-12)).eval()
        with torch.no_grad():
            model[0].weight.uniform_(0.5, 1.5)
            model[0].bias.uniform_(-0.5, 0.5)
        x = 3 * torch.randn(2, 3, 10) + 1
        with tempfile.TemporaryDirectory() as tmp:
            report, plan, arrays = compile_and_run(torch.export.export(model, (x,)).module(), x,
                                                   Path(tmp))
        self.assertIn("layer_norm(", report)
        self.assertNotIn("aten.layer_norm", json.dumps(plan))
        (out,) = [v for v in arrays.values() if v.dtype == np.float32 and v.shape == x.shape
                  and not np.array_equal(v, x.numpy())]
        np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)

class QuantizedFloatLayerNorm(unittest.TestCase):
    def test_post_norm_block_one_dispatch_per_layer_norm(self):
        """x -> LayerNorm -> (Linear -> GELU -> Linear) + LayerNorm output -> LayerNorm: the first
        LayerNorm's output is read float by the add and through a quantize by the up projection
        (layer_norm_dual), the last one's only through the quantize of the model's output
        (layer_norm_q). No layer_norm and no q8ta_quantize of a layer norm's output is left."""
        self.assertTrue(os.environ.get("VKD"), "no vkd binary: CTest passes VKD=<the built vkd>")
        torch.manual_seed(0)
        model = PostNormBlock().eval()
        with torch.no_grad():
            for norm in (model.norm_in, model.norm_out):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)
        gen = torch.Generator().manual_seed(1)
        x = 3 * torch.randn(1, 6, 16, generator=gen)
        calibration = [3 * torch.randn(1, 6, 16, generator=gen) for _ in range(2)]
        converted = quantize(model, (x,), calibration).converted
        with tempfile.TemporaryDirectory() as tmp:
            report, plan, arrays = compile_and_run(converted, x, Path(tmp))
        fused = [line.strip() for line in report.splitlines()
                 if line.strip().startswith("fused aten.layer_norm")]
        self.assertEqual(len(fused), 2, report)
        self.assertIn("into layer_norm_dual", fused[0])
        self.assertIn("into layer_norm_q", fused[1])
        final = report[report.index("[final]"):]
        backend_nodes = [line.strip() for line in final.splitlines() if "(" in line
                         and "->" in line]
        norms = [n for n in backend_nodes if n.startswith(("layer_norm", "q8ta_layer_norm"))]
        self.assertEqual(len(norms), 2, final)
        self.assertFalse([n for n in backend_nodes if n.startswith("layer_norm(")], final)
        self.assertFalse([n for n in backend_nodes if n.startswith("q8ta_quantize(")], final)
        check_every_quantize(self, converted, x, arrays)
        # The dual form's float32 output (the add's operand) against PyTorch's.
        values = {}

        class Record(torch.fx.Interpreter):
            def run_node(self, n):
                values[n.name] = super().run_node(n)
                return values[n.name]

        with torch.no_grad():
            Record(converted).run(x)
        dual_output = fused[0].split("into layer_norm_dual '")[1].split("'")[0]
        self.assertIn(dual_output, arrays)
        np.testing.assert_allclose(arrays[dual_output], values[dual_output].numpy(), rtol=1e-5,
                                   atol=1e-5)


if __name__ == "__main__":
    unittest.main()
