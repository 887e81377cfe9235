"""nn.LayerNorm and nn.MultiheadAttention exported (run by CTest `python_exporter`).

A small model with quantized convolutions and a linear around two transformer-style blocks: a
LayerNorm with its affine parameters and a batch-first self-attention whose weights the model
returns; a LayerNorm without them and a sequence-first cross-attention (query 64 tokens, key and
value 16 others) called with need_weights=False. The graph IR must hold each as the ops the
compiler's CPU references run (aten.layer_norm, one aten._native_multi_head_attention per module
with its projections as constants, transposes around the sequence-first one: the exporter makes
each module one op for torch.export, ops_transformer.attention_as_one_op), and the
configurations the op cannot express must be one clear error. With the vkd binary (CTest passes
VKD): the CLI exports the model, `vkd compile --partition` leaves the attention to the host
(the layer norms and the rest run in GPU partitions between them), `vkd run PLAN.partition.json` runs it, and its outputs are
compared with PyTorch's reference-quantized model: the attention weights (computed on the host
from the GPU's int8 activations) within 1e-5 relative, the int8 output within 1 step, equal
but for a few elements.

This file is also the CLI's --model file (FACTORY transformer_blocks).
"""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch
from torch import nn

SHAPE = (1, 3, 8, 8)
SEED = 3


class TransformerBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.down = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.ln1 = nn.LayerNorm(16)
        self.self_attn = nn.MultiheadAttention(16, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(16, elementwise_affine=False)
        self.cross_attn = nn.MultiheadAttention(16, 2)  # sequence-first
        self.fc = nn.Linear(16, 10)
        with torch.no_grad():  # PyTorch starts these at 1 / 0: make them matter
            self.ln1.weight.uniform_(0.5, 1.5)
            for p in (self.ln1.bias, self.self_attn.in_proj_bias, self.self_attn.out_proj.bias,
                      self.cross_attn.in_proj_bias, self.cross_attn.out_proj.bias):
                p.uniform_(-0.5, 0.5)

    def forward(self, x):
        f = self.conv(x)
        tokens = f.flatten(2).transpose(1, 2)                   # [1, 64, 16]
        memory = self.down(f).flatten(2).permute(2, 0, 1)       # [16, 1, 16]
        h = self.ln1(tokens)
        a, weights = self.self_attn(h, h, h)
        h = tokens + a
        q = self.ln2(h).transpose(0, 1)                         # [64, 1, 16]
        c, _ = self.cross_attn(q, memory, memory, need_weights=False)
        return self.fc(h + c.transpose(0, 1)), weights


def transformer_blocks():
    return TransformerBlocks()


def quantized(model, seed=SEED):
    """The CLI's reference-quantized model (convert_pt2e): calibration random:2 seeded with
    SEED + 1."""
    import test_exporter as reference  # its random inputs are the CLI's random:N
    from vkdelegate.export import quantize
    calibration = reference.random_inputs(2, seed + 1, SHAPE)
    return quantize(model.eval(), (torch.zeros(SHAPE),), calibration,
                    observer="minmax").converted


def export_error(model, shape=SHAPE):
    """The ExportError quantize or to_graph_ir raises on `model` (None when it exports)."""
    from vkdelegate.export import ExportError, quantize, to_graph_ir
    x = torch.randn(shape)
    try:
        to_graph_ir(quantize(model.eval(), (x,), [x], observer="minmax").converted, (x,), "m")
    except ExportError as e:
        return str(e)
    return None


class Attention(nn.Module):
    """One attention module on the input (1 x 6 x 8 tokens) with the call's keywords."""

    def __init__(self, module, unbatched=False, **call):
        super().__init__()
        self.attn, self.call, self.unbatched = module, call, unbatched

    def forward(self, x):
        x = x[0] if self.unbatched else x
        mask = {k: torch.zeros(v, dtype=torch.bool) for k, v in self.call.items()}
        return self.attn(x, x, x, **mask)[0]


class TransformerBlocksTest(unittest.TestCase):
    def test_graph_ir_holds_one_node_per_module(self):
        from vkdelegate.export import to_graph_ir
        torch.manual_seed(SEED)
        model = transformer_blocks()
        graph, tensors = to_graph_ir(quantized(model), (torch.randn(SHAPE),), "m")
        nodes = {n["outputs"][0]: n for n in graph["nodes"]}
        norms = [n for n in graph["nodes"] if n["op"] == "aten.layer_norm"]
        attn = [n for n in graph["nodes"] if n["op"] == "aten._native_multi_head_attention"]
        self.assertEqual([len(n["inputs"]) for n in norms], [3, 1])  # ln2: no weight, bias
        self.assertEqual(norms[0]["args"], {"normalized_shape": [16], "eps": 1e-5})
        self.assertEqual(len(attn), 2)
        self_attn, cross = attn
        self.assertEqual(self_attn["args"], {"embed_dim": 16, "num_head": 4, "need_weights": True,
                                             "average_attn_weights": True})
        self.assertEqual(len(self_attn["outputs"]), 2)
        self.assertEqual(self_attn["outputs"][1], graph["outputs"][1])  # the weights, returned
        self.assertEqual(len(set(self_attn["inputs"][:3])), 1)  # self-attention: one tensor
        self.assertEqual(cross["args"]["need_weights"], False)
        self.assertEqual(len(cross["outputs"]), 1)
        # batch-first around the sequence-first module: query, memory in; the result back out
        for name in cross["inputs"][:2]:
            self.assertEqual(nodes[name]["op"], "aten.transpose_copy.int")
            self.assertEqual(nodes[name]["args"], {"dim0": 0, "dim1": 1})
        self.assertEqual(graph["values"][cross["inputs"][0]]["shape"], [1, 64, 16])
        self.assertEqual(graph["values"][cross["inputs"][1]]["shape"], [1, 16, 16])
        readers = [n for n in graph["nodes"] if cross["outputs"][0] in n["inputs"]]
        self.assertEqual([n["op"] for n in readers], ["aten.transpose_copy.int"])
        # the projections, as the module holds them
        for m, node in ((model.self_attn, self_attn), (model.cross_attn, cross)):
            for k, param in enumerate((m.in_proj_weight, m.in_proj_bias, m.out_proj.weight,
                                       m.out_proj.bias)):
                data = graph["values"][node["inputs"][3 + k]]["data"]
                np.testing.assert_array_equal(tensors[data], param.detach().numpy())

    def test_what_the_op_cannot_express_is_one_error(self):
        x = (1, 6, 8)
        cases = [
            (Attention(nn.MultiheadAttention(8, 2, batch_first=True), attn_mask=(6, 6)),
             "MultiheadAttention with a key_padding_mask or attn_mask (not exported yet)"),
            (Attention(nn.MultiheadAttention(8, 2, batch_first=True), key_padding_mask=(1, 6)),
             "MultiheadAttention with a key_padding_mask or attn_mask (not exported yet)"),
            (Attention(nn.MultiheadAttention(8, 2, batch_first=True, add_bias_kv=True)),
             "MultiheadAttention with add_bias_kv or add_zero_attn (not exported yet)"),
            (Attention(nn.MultiheadAttention(8, 2, batch_first=True), unbatched=True),
             "MultiheadAttention on a 2-D query (only batched, 3-D inputs export)"),
        ]
        for model, message in cases:
            with self.subTest(message):
                error = export_error(model, x)
                self.assertIsNotNone(error)
                self.assertIn(message, error)
                self.assertEqual(len(error.splitlines()), 1, error)

    def test_kdim_other_than_embed_dim_is_refused(self):
        class Kdim(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(8, 2, batch_first=True, kdim=4, vdim=4)

            def forward(self, x):
                return self.attn(x, x[..., :4], x[..., :4])[0]
        self.assertIn("kdim / vdim other than embed_dim", export_error(Kdim(), (1, 6, 8)))

    def test_vkd_runs_the_partitioned_model_as_pytorch_does(self):
        vkd = os.environ.get("VKD")
        if not vkd:
            self.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")
        from test_exporter import run_cli  # the CLI in this process
        with tempfile.TemporaryDirectory() as d:
            status, _, err = run_cli(
                "--model", f"{os.path.abspath(__file__)}:transformer_blocks", "--input-shape",
                "1,3,8,8", "--calibration", "random:2", "--observer", "minmax", "--seed",
                str(SEED), "-o", d, "--name", "m")
            self.assertEqual(status, 0, err)
            m = os.path.join(d, "m")
            done = subprocess.run([vkd, "compile", m + ".json", "--weights", m + ".safetensors",
                                   "--partition", "-o", m + ".vkd"], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            with open(m + ".partition.json") as f:
                plan = json.load(f)
            host = [s["host"] for s in plan["steps"] if "host" in s]
            self.assertEqual(host.count("aten._native_multi_head_attention"), 2, host)
            self.assertNotIn("aten.layer_norm", host)  # q8ta_layer_norm(_dq) on the GPU
            self.assertGreaterEqual(len(plan["steps"]) - len(host), 2)  # GPU partitions too
            run = subprocess.run([vkd, "run", m + ".partition.json", "--input",
                                  f"x={m}.input.npy", "--weights", m + ".safetensors",
                                  "--output-dir", os.path.join(d, "run")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            got = [np.load(os.path.join(d, "run", f"output_{k}.npy")) for k in (0, 1)]
            with open(m + ".json") as f:
                graph = json.load(f)
            last = next(n for n in graph["nodes"] if n["outputs"] == [graph["outputs"][0]])
            step = last["args"]["scale"]  # the output's quantization step

            torch.manual_seed(SEED)  # the CLI's model, calibration and sample
            gm = quantized(transformer_blocks())
            x = torch.from_numpy(np.load(m + ".input.npy"))
            with torch.no_grad():
                logits, weights = (t.numpy() for t in gm(x))
            np.testing.assert_allclose(got[1], weights, rtol=1e-5, atol=1e-6)
            steps = np.abs(got[0].astype(np.float64) - logits) / step
            self.assertLessEqual(steps.max(), 1.0 + 1e-3)
            self.assertLessEqual(np.count_nonzero(steps > 0.5), logits.size // 50, steps)


if __name__ == "__main__":
    unittest.main()
