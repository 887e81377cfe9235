"""F.scaled_dot_product_attention in a BERT-like block, on the GPU as one op (run by CTest
`python_exporter`).

A self-attention block as HF's BERT writes it with attn_implementation="sdpa": nn.Linear query,
key and value, each viewed as [B, T, H, D] and transposed to [B, H, T, D],
F.scaled_dot_product_attention with an additive mask ([B, 1, 1, T]: 0 or -10000 for padding
tokens), the heads transposed back and reshaped to [B, T, H*D], the output nn.Linear; random
weights, sequence lengths 7 and 16, quantized by vkdelegate.export.quantize (VkdQuantizer). With
the vkd binary (CTest passes VKD): `vkd compile --partition` makes the head split, the attention
and the head merge one q8ta_attention (the report says so; the plan has one GPU partition and no
host step), and `vkd run` on it, under the validation layer, matches PyTorch's
reference-quantized model (dq -> SDPA in float32 -> q): the attention's int8 output within one
step (a step only where the float32 result lies next to a rounding boundary: a few elements),
and the block's output within one step of its own quantization. The same block left float
becomes the float op `attention` between host linears, equal to PyTorch within float32 rounding.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from test_exporter import vkd_compile

HIDDEN, HEADS = 64, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key, self.value, self.out = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))

    def forward(self, x, mask):
        b, t, c = x.shape

        def heads(y):
            return y.view(b, t, HEADS, c // HEADS).transpose(1, 2)

        a = F.scaled_dot_product_attention(heads(self.query(x)), heads(self.key(x)),
                                           heads(self.value(x)), attn_mask=mask)
        return self.out(a.transpose(1, 2).reshape(b, t, c))


def sample(length, seed, padding=2):
    """x [1, T, HIDDEN] and the additive mask of `padding` padding tokens at the end."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, length, HIDDEN, generator=g)
    mask = torch.zeros(1, 1, 1, length)
    mask[..., length - padding:] = -10000.0
    return x, mask


def merged_heads_q(gm, inputs):
    """The converted model's output and the int8 tensor its quantize of the merged heads
    ([1, T, HIDDEN], after the reshape) writes."""
    captured = {}

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if (n.target == torch.ops.quantized_decomposed.quantize_per_tensor.default
                    and n.args[0].target == torch.ops.aten.reshape.default):
                captured["q"] = out
            return out

    with torch.no_grad():
        out = Capture(gm).run(*inputs)
    return out, captured["q"]


class AttentionBlockTest(unittest.TestCase):
    def test_attention_runs_as_one_gpu_op_as_pytorch_does(self):
        vkd = os.environ.get("VKD")
        if not vkd:
            self.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.export import quantize, safetensors, to_graph_ir
        from vkdelegate.export.ir import to_json_text
        for length in (7, 16):
            with self.subTest(length=length), tempfile.TemporaryDirectory() as d:
                torch.manual_seed(length)
                model = Block().eval()
                inputs = sample(length, 1)
                gm = quantize(model, inputs, [sample(length, s) for s in range(2, 6)]).converted
                graph, tensors = to_graph_ir(gm, inputs, name="block")
                m = os.path.join(d, "block")
                with open(m + ".json", "w") as f:
                    f.write(to_json_text(graph))
                safetensors.save(m + ".safetensors", tensors)
                done = vkd_compile(m, "--partition", "--report")
                fused = [line for line in done.stdout.splitlines() if "into q8ta_attention" in line]
                self.assertEqual(len(fused), 1, done.stdout)
                self.assertIn("aten.scaled_dot_product_attention", fused[0])
                self.assertIn(f"(4 heads of 16, mask 'mask' [1, 1, 1, {length}])", fused[0])
                with open(m + ".partition.json") as f:
                    plan = json.load(f)
                self.assertEqual([s for s in plan["steps"] if "host" in s], [], plan)
                self.assertEqual(len(plan["steps"]), 1, plan)

                names = ("x", "mask")
                for name, t in zip(names, inputs):
                    np.save(os.path.join(d, name + ".npy"), t.numpy())
                run = subprocess.run(
                    [vkd, "run", m + ".p0.vkd", "--intermediates", "--output-dir",
                     os.path.join(d, "run")] +
                    [a for name in names for a in ("--input", f"{name}={d}/{name}.npy")],
                    capture_output=True, text=True)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertIn("validation: no messages", run.stdout + run.stderr)
                merged_q = re.search(r"into q8ta_attention '([^']+)'", fused[0]).group(1)
                got_q = np.load(os.path.join(d, "run", merged_q + ".npy"))
                got = np.load(os.path.join(d, "run", graph["outputs"][0] + ".npy"))

                want, want_q = merged_heads_q(gm, inputs)
                off = np.abs(got_q.astype(np.int32) - want_q.numpy().astype(np.int32))
                self.assertEqual(got_q.shape, (1, length, HIDDEN))
                self.assertLessEqual(off.max(), 1)
                self.assertLessEqual(np.count_nonzero(off), off.size // 50, off)
                print(f"T={length}: {np.count_nonzero(off)} of {off.size} attention outputs "
                      "one step off PyTorch's")
                last = next(n for n in graph["nodes"] if n["outputs"] == [graph["outputs"][0]])
                steps = np.abs(got.astype(np.float64) - want.numpy()) / last["args"]["scale"]
                self.assertLessEqual(steps.max(), 1.0 + 1e-3)

    def test_float_block_runs_its_attention_as_one_gpu_op(self):
        """The float block (no quantization): its head split, attention and merge become the
        float op `attention` on the GPU (the float linears stay on the host), and the plan's
        output equals PyTorch's within float32 rounding."""
        vkd = os.environ.get("VKD")
        if not vkd:
            self.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.export import safetensors, to_graph_ir
        from vkdelegate.export.ir import to_json_text
        with tempfile.TemporaryDirectory() as d:
            torch.manual_seed(3)
            model = Block().eval()
            inputs = sample(7, 1)
            program = torch.export.export(model, inputs)
            graph, tensors = to_graph_ir(program.module(), inputs, name="block")
            m = os.path.join(d, "block")
            with open(m + ".json", "w") as f:
                f.write(to_json_text(graph))
            safetensors.save(m + ".safetensors", tensors)
            done = vkd_compile(m, "--partition", "--report")
            self.assertIn("into attention 'reshape' (4 heads of 16, mask 'mask' [1, 1, 1, 7])",
                          done.stdout)
            with open(m + ".partition.json") as f:
                plan = json.load(f)
            host = [s["host"] for s in plan["steps"] if "host" in s]
            self.assertNotIn("aten.scaled_dot_product_attention", host)
            for name, t in zip(("x", "mask"), inputs):
                np.save(os.path.join(d, name + ".npy"), t.numpy())
            run = subprocess.run([vkd, "run", m + ".partition.json", "--weights",
                                  m + ".safetensors", "--input", f"x={d}/x.npy", "--input",
                                  f"mask={d}/mask.npy", "--output-dir", os.path.join(d, "run")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            got = np.load(os.path.join(d, "run", graph["outputs"][0] + ".npy"))
            with torch.no_grad():
                want = model(*inputs).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
