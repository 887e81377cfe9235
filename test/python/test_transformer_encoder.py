"""nn.TransformerEncoder on the GPU, layer by layer as PyTorch computes it (issue 35; run by CTest
`python_exporter`).

nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64),
num_layers=2) on 16 tokens of a batch of one, batch-first and sequence-first, post-norm and
pre-norm (norm_first), random weights, quantized by vkdelegate.export.quantize (VkdQuantizer,
minmax observers). The exporter writes each nn.MultiheadAttention as a BERT attention block
(three linears, the head split, scaled_dot_product_attention, the head merge, out_proj:
export/attention_sdpa.py), so `vkd compile --partition` makes each layer's attention one
q8ta_attention (the report says so) and the layer's linears, ReLU FFN, residual adds and layer
norms GPU ops: a batch-first encoder is one GPU partition with no host step. A sequence-first
one keeps two host steps: the float view [1, 16, 32] -> [16, 1, 32] of each out_proj output
back to sequence-first (the compiler lowers a float view to the identity only where it adds or
drops leading 1s). Each partition runs with `vkd run --intermediates` under the
validation layer (no message), the host steps with PyTorch's ops between them
(plan_steps.py); vkdelegate.per_layer replays PyTorch's reference-quantized model
(convert_pt2e) on the device's own inputs of each layer: every int8 tensor within 1 LSB, and
only at a rounding tie, both attention outputs among them; the encoder's output within one
step of its quantization (post-norm: the last layer norm's int8) or float32 rounding (pre-norm:
the float residual stream). A batch-first post-norm encoder called with a causal mask and
is_causal=True runs its attention as q8ta_attention's causal flag, as exact.
"""
import json
import os
import re
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
from torch import nn

D_MODEL, HEADS, FFN, TOKENS = 32, 4, 64, 16


def encoder(batch_first, norm_first):
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=HEADS, dim_feedforward=FFN,
                                       batch_first=batch_first, norm_first=norm_first)
    with torch.no_grad():  # PyTorch starts these at 1 / 0: make them matter
        for name, p in layer.named_parameters():
            if name.startswith("norm") or name.endswith("bias"):
                p.uniform_(0.5, 1.5) if name.endswith("weight") else p.uniform_(-0.3, 0.3)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()


class CausalEncoder(nn.Module):
    """The encoder with a causal mask and is_causal: SDPA's is_causal, the kernel's flag."""

    def __init__(self, batch_first, norm_first):
        super().__init__()
        self.encoder = encoder(batch_first, norm_first)
        # causal, finite (the exporter refuses an infinite buffer); with is_causal PyTorch
        # takes it as the hint and attends causally without reading it
        self.register_buffer("mask", torch.full((TOKENS, TOKENS), -1e4).triu(1))

    def forward(self, x):
        return self.encoder(x, mask=self.mask, is_causal=True)


def shape(batch_first):
    return (1, TOKENS, D_MODEL) if batch_first else (TOKENS, 1, D_MODEL)


def compile_and_run(converted, x, folder):
    """Graph IR and `vkd compile --partition --report`, then the plan run step by step
    (plan_steps: every partition with --intermediates, validation on): (report text, plan,
    graph, {value name: array} of every tensor the run wrote)."""
    from plan_steps import run_steps
    from test_exporter import compile_partitioned
    graph, tensors, report = compile_partitioned(converted, x, Path(folder), "--report")
    with open(os.path.join(folder, "m.partition.json")) as f:
        plan = json.load(f)
    written = run_steps(os.environ["VKD"], folder, plan, graph, tensors,
                        {graph["inputs"][0]: x.numpy()})
    return report, plan, graph, written


class TransformerEncoderTest(unittest.TestCase):
    def check(self, batch_first, norm_first, causal=False):
        from vkdelegate import per_layer
        from vkdelegate.export import quantize
        from vkdelegate.export.walk import ir_value_names
        model = CausalEncoder(batch_first, norm_first).eval() if causal else \
            encoder(batch_first, norm_first)
        g = torch.Generator().manual_seed(2)
        x = torch.randn(shape(batch_first), generator=g)
        calibration = [torch.randn(shape(batch_first), generator=g) for _ in range(3)]
        converted = quantize(model, (x,), calibration, observer="minmax").converted
        with tempfile.TemporaryDirectory() as d:
            report, plan, graph, written = compile_and_run(converted, x, d)

        mask = "causal" if causal else "no mask"
        fused = re.findall(rf"into q8ta_attention '([^']+)' \(4 heads of 8, {mask}\)", report)
        self.assertEqual(len(fused), 2, report)  # one per layer
        host = [s["host"] for s in plan["steps"] if "host" in s]
        self.assertEqual(host, [] if batch_first else ["aten.view_copy"] * 2, plan)
        self.assertEqual(len(plan["steps"]) - len(host), 1 if batch_first else 3, plan)

        device = {k: v for k, v in written.items() if v.dtype == np.int8}
        # Batch first, each layer's Q, K and V linears are one q8ta_linear_qkv (its column blocks
        # are theirs); sequence first, transposes write what the attention reads.
        self.assertEqual(per_layer.split_merged_qkv(report, device), 2 if batch_first else 0,
                         report)
        result = per_layer.compare(converted, (x,), device)
        names = ir_value_names(converted)
        compared = {names.get(r.name, r.name) for r in result.layers}
        self.assertTrue(set(fused) <= compared, (fused, sorted(compared)))
        self.assertGreaterEqual(len(result.layers), 15)  # input, 7 per layer
        self.assertIsNone(result.first_real, result.summary())
        self.assertLessEqual(max(r.max_abs_diff for r in result.layers), 1)
        print(f"batch_first={batch_first} norm_first={norm_first}: {result.summary()}")

        with torch.no_grad():
            want = converted(x).numpy()
        got = written[graph["outputs"][0]]
        self.assertEqual(got.shape, want.shape)
        self.assertGreater(np.abs(want).max(), 0.5)
        if norm_first:  # the float residual stream: float32 rounding
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
        else:  # the last layer norm's int8, dequantized: one step at a tie
            last = next(n for n in graph["nodes"] if n["outputs"] == [graph["outputs"][0]])
            step = last["args"]["scale"]
            self.assertLessEqual(np.abs(got.astype(np.float64) - want).max(), step * 1.001)

    def test_batch_first_post_norm(self):
        self.check(True, False)

    def test_batch_first_pre_norm(self):
        self.check(True, True)

    def test_sequence_first_post_norm(self):
        self.check(False, False)

    def test_sequence_first_pre_norm(self):
        self.check(False, True)

    def test_causal(self):
        self.check(True, False, causal=True)

    def setUp(self):
        if not os.environ.get("VKD"):
            self.fail("no vkd binary: CTest passes VKD=<the built vkd>")


if __name__ == "__main__":
    unittest.main()
