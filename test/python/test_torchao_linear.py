"""torchao-quantized linears exported and run on the GPU (run by CTest `python_exporter`).

A small MLP (Linear 64 -> 96, ReLU, Linear 96 -> 10 on [1, 7, 64]) quantized by torchao's
quantize_() with Int8DynamicActivationInt8WeightConfig (per-token int8 activations chosen at
run time, int8 per-channel weights) and with Int8WeightOnlyConfig goes through
vkdelegate.export.export (torch.export of the quantized model, its int8 linears rewritten to
the affine ops: python/vkdelegate/export/torchao_linear.py), `vkd compile --partition` and
`vkd run`. Each linear must become one GPU op (q8da_linear / q8csw_linear: no host step for
it, only the float ReLU between them), and the output must match torchao's own result, the
exported program run by PyTorch on the CPU: the dynamic linear bit for bit (int32 accumulation
is exact and every float step is the same single rounding), the weight-only one within float32
summation order (1e-5 of the output's magnitude).
"""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch
from torch import nn

from test_exporter import vkd_compile


def mlp(bias=True):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 96, bias=bias), nn.ReLU(), nn.Linear(96, 10)).eval()


def quantized(config_name, bias=True):
    from torchao.quantization import (Int8DynamicActivationInt8WeightConfig,
                                      Int8WeightOnlyConfig, quantize_)
    from torchao.quantization.quant_primitives import MappingType
    config = {"dynamic": Int8DynamicActivationInt8WeightConfig,
              "dynamic_asymmetric": lambda: Int8DynamicActivationInt8WeightConfig(
                  act_mapping_type=MappingType.ASYMMETRIC),
              "weight_only": Int8WeightOnlyConfig}[config_name]()
    model = mlp(bias)
    quantize_(model, config)
    return model


class TorchaoLinearTest(unittest.TestCase):
    def run_case(self, config_name, backend, exact):
        vkd = os.environ.get("VKD")
        self.assertTrue(vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.export import export
        model = quantized(config_name)
        torch.manual_seed(1)
        x = torch.randn(1, 7, 64)
        with torch.no_grad():  # torchao's result: its exported program, run on the CPU
            want = torch.export.export(model, (x,)).module()(x).numpy()
        with tempfile.TemporaryDirectory() as d:
            paths = export(model, (x,), d, "mlp", None)
            self.assertNotIn("calibration", paths)
            done = subprocess.run([vkd, "compile", paths["graph"], "--weights", paths["weights"],
                                   "--partition", "-o", os.path.join(d, "mlp.vkd"), "--report"],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertEqual(done.stdout.count(f"into {backend} "), 2, done.stdout)
            with open(os.path.join(d, "mlp.partition.json")) as f:
                plan = json.load(f)
            host = [step["host"] for step in plan["steps"] if "host" in step]
            self.assertEqual(host, ["aten.relu"], plan)
            run = subprocess.run([vkd, "run", os.path.join(d, "mlp.partition.json"), "--input",
                                  f"input0={paths['input']}", "--weights", paths["weights"],
                                  "--output-dir", os.path.join(d, "run")],
                                 capture_output=True, text=True,
                                 env=dict(os.environ, VKD_VALIDATION="1"))
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("validation: no messages", run.stdout + run.stderr)
            got = np.load(os.path.join(d, "run", "output.npy"))
        self.assertEqual(got.shape, (1, 7, 10))
        relative = np.abs(got - want).max() / np.abs(want).max()
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            self.assertLessEqual(relative, 1e-5)

    def test_dynamic_int8_linears_run_as_q8da_linear_bit_for_bit(self):
        self.run_case("dynamic", "q8da_linear", exact=True)

    def test_weight_only_int8_linears_run_as_q8csw_linear(self):
        self.run_case("weight_only", "q8csw_linear", exact=False)

    def test_rewrite_keeps_torchao_numbers_with_and_without_bias(self):
        """The graph the rewrite leaves computes what torchao's did (the dequantize + linear
        form in PyTorch: within float32 rounding), for both configs and an asymmetric
        activation (whose zero-point correction the dequantize includes; vkd compile then
        leaves that linear to the host, saying why), a first linear without bias, and holds no
        trace of the unwrapped arithmetic (_int_mm, mm)."""
        from vkdelegate.export import torchao_linear
        x = torch.randn(1, 7, 64)
        for config_name in ("dynamic", "dynamic_asymmetric", "weight_only"):
            gm = torch.export.export(quantized(config_name, bias=False), (x,)).module()
            with torch.no_grad():
                want = gm(x)
                self.assertEqual(torchao_linear.rewrite(gm), 2)
                got = gm(x)
            targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
            self.assertIn("aten.linear.default", targets)
            self.assertFalse({"aten._int_mm.default", "aten.mm.default"} & targets, targets)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0,
                                       atol=1e-6 * float(want.abs().max()))


    def test_one_blob_runs_every_sequence_length(self):
        """torch.export with a dynamic sequence length: one q8da_linear blob compiled at the
        maximum runs shorter inputs too, bit for bit with torchao's result at each length."""
        vkd = os.environ.get("VKD")
        self.assertTrue(vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
        from vkdelegate.export import safetensors, to_graph_ir
        from vkdelegate.export.ir import to_json_text
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 96)).eval()
        quantize_(model, Int8DynamicActivationInt8WeightConfig())
        length = torch.export.Dim("T", min=2, max=16)
        with torch.no_grad():
            program = torch.export.export(model, (torch.randn(1, 16, 64),),
                                          dynamic_shapes={"input": {1: length}})
        graph, tensors = to_graph_ir(program, (torch.randn(1, 16, 64),), "dyn",
                                     dynamic_shapes={"input_1": {1: length}})
        self.assertIn("dynamic", graph)
        with tempfile.TemporaryDirectory() as d:
            m = os.path.join(d, "dyn")
            with open(m + ".json", "w") as f:
                f.write(to_json_text(graph))
            safetensors.save(m + ".safetensors", tensors)
            done = vkd_compile(m, "--report")
            self.assertIn("into q8da_linear", done.stdout)
            for t in (16, 5):
                x = torch.randn(1, t, 64)
                np.save(m + ".x.npy", x.numpy())
                run = subprocess.run([vkd, "run", m + ".vkd", "--input", f"input0={m}.x.npy",
                                      "--output-dir", os.path.join(d, "run"), "--force"],
                                     capture_output=True, text=True,
                                     env=dict(os.environ, VKD_VALIDATION="1"))
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertIn("validation: no messages", run.stdout + run.stderr)
                with torch.no_grad():
                    want = program.module()(x).numpy()
                np.testing.assert_array_equal(np.load(os.path.join(d, "run", "output.npy")),
                                              want)

    def test_rewrite_stops_at_the_linear_output(self):
        """A view right after the linear (BERT's head split: .view(B, T, heads, dim)) is the
        model's, not torchao's: the rewritten linear ends before it, so the graph keeps the
        model's shapes and numbers (a rewrite that swallowed the view broke HF's BERT)."""
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
        from vkdelegate.export import torchao_linear

        class HeadSplit(nn.Module):
            def __init__(self):
                super().__init__()
                self.q = nn.Linear(64, 96)

            def forward(self, x):
                return self.q(x).view(1, 7, 4, 24).transpose(1, 2)

        torch.manual_seed(0)
        model = HeadSplit().eval()
        quantize_(model, Int8DynamicActivationInt8WeightConfig())
        x = torch.randn(1, 7, 64)
        with torch.no_grad():
            gm = torch.export.export(model, (x,)).module()
            want = gm(x)
            self.assertEqual(torchao_linear.rewrite(gm), 1)
            got = gm(x)
        self.assertEqual(got.shape, (1, 4, 7, 24))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0,
                                   atol=1e-6 * float(want.abs().max()))


if __name__ == "__main__":
    unittest.main()
