"""nn.LayerNorm and nn.MultiheadAttention exported (run by CTest `python_exporter`).

A small model with quantized convolutions and a linear around two transformer-style blocks: a
LayerNorm with its affine parameters and a batch-first self-attention whose weights the model
returns; a LayerNorm without them and a sequence-first cross-attention (query 64 tokens, key and
value 16 others) called with need_weights=False. The exporter writes each attention module as a
BERT attention block (export/attention_sdpa.py): three linears whose weights are the
in_proj_weight slices (int8 per output channel), the head split, scaled_dot_product_attention,
the head merge and out_proj, with transposes to batch-first and back around the sequence-first
one; the weights the model reads are one aten._native_multi_head_attention (float, the
projections as constants, as before). The graph IR must hold that; the float decomposition must
equal the module (weights, masks, sequence-first batches) within float32 rounding; and the
configurations neither form expresses must be one clear error. With the vkd binary (CTest passes
VKD): the CLI exports the model, `vkd compile --partition` makes each attention one
q8ta_attention on the GPU and leaves the weights' op to the host, `vkd run PLAN.partition.json`
runs it, and its outputs are compared with PyTorch's reference-quantized model: the attention
weights (computed on the host from the GPU's int8 activations) within 1e-5 relative, the int8
output within 1 step, equal but for a few elements.

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
    def test_graph_ir_holds_each_attention_as_sdpa(self):
        from vkdelegate.export import to_graph_ir
        torch.manual_seed(SEED)
        model = transformer_blocks()
        graph, tensors = to_graph_ir(quantized(model), (torch.randn(SHAPE),), "m")
        nodes = {o: n for n in graph["nodes"] for o in n["outputs"]}
        norms = [n for n in graph["nodes"] if n["op"] == "aten.layer_norm"]
        self.assertEqual([len(n["inputs"]) for n in norms], [3, 1])  # ln2: no weight, bias
        self.assertEqual(norms[0]["args"], {"normalized_shape": [16], "eps": 1e-5})
        sdpa = [n for n in graph["nodes"] if n["op"] == "aten.scaled_dot_product_attention"]
        self.assertEqual(len(sdpa), 2)

        def producer_or_none(value):
            """The first node up from `value` that is not a quantize / dequantize."""
            node = nodes.get(value)
            while node is not None and "quantize" in node["op"]:
                node = nodes.get(node["inputs"][0])
            return node

        def producer(value, op):
            """The node `op` up from `value` through quantize / dequantize pairs."""
            node = nodes[value]
            while node["op"] != op:
                self.assertIn("quantize", node["op"], (value, op))
                node = nodes[node["inputs"][0]]
            return node

        for m, node, heads in ((model.self_attn, sdpa[0], 4), (model.cross_attn, sdpa[1], 2)):
            # query, key, value: [B, H, T, D] head splits of three linears whose weights are
            # the in_proj_weight slices, int8 per output channel
            for k, value in enumerate(node["inputs"][:3]):
                split = producer(value, "aten.transpose_copy.int")
                self.assertEqual(split["args"], {"dim0": 1, "dim1": 2})
                self.assertEqual(graph["values"][split["outputs"][0]]["shape"][1], heads)
                linear = producer(producer(split["inputs"][0], "aten.view_copy")["inputs"][0],
                                  "aten.linear")
                dq = nodes[linear["inputs"][1]]
                weight, scales = (tensors[graph["values"][v]["data"]] for v in dq["inputs"][:2])
                self.assertEqual(weight.dtype, np.int8)
                self.assertEqual(scales.shape, (16,))  # per output channel
                want = m.in_proj_weight.detach().numpy()[16 * k:16 * (k + 1)]
                np.testing.assert_allclose(weight * scales[:, None], want, rtol=0,
                                           atol=scales.max() / 2 + 1e-7)
                np.testing.assert_array_equal(tensors[graph["values"][linear["inputs"][2]]["data"]],
                                              m.in_proj_bias.detach().numpy()[16 * k:16 * (k + 1)])
        # the self-attention's weights, which the model returns: one
        # aten._native_multi_head_attention (float, as before) beside the attention
        (weights,) = [n for n in graph["nodes"] if n["op"] == "aten._native_multi_head_attention"]
        self.assertEqual(weights["args"], {"embed_dim": 16, "num_head": 4, "need_weights": True,
                                           "average_attn_weights": True})
        self.assertEqual(weights["outputs"][1], graph["outputs"][1])
        self.assertEqual(len(set(weights["inputs"][:3])), 1)  # self-attention: one tensor
        for k, param in enumerate((model.self_attn.in_proj_weight, model.self_attn.in_proj_bias,
                                   model.self_attn.out_proj.weight,
                                   model.self_attn.out_proj.bias)):
            data = graph["values"][weights["inputs"][3 + k]]["data"]
            np.testing.assert_array_equal(tensors[data], param.detach().numpy())
        # the sequence-first cross-attention: batch-first transposes into its linears, its
        # output back to sequence-first ([1, 64, 16] -> [64, 1, 16]: a view, a batch of one)
        cross_linears = [n for n in graph["nodes"] if n["op"] == "aten.linear" and
                         "cross_attn_vkd" in n["inputs"][1]]
        self.assertEqual(len(cross_linears), 3)
        for linear in cross_linears:
            moved = producer(linear["inputs"][0], "aten.transpose_copy.int")
            self.assertEqual(moved["args"], {"dim0": 0, "dim1": 1})
        self.assertEqual(graph["values"][cross_linears[0]["inputs"][0]]["shape"], [1, 64, 16])
        self.assertEqual(graph["values"][cross_linears[1]["inputs"][0]]["shape"], [1, 16, 16])
        out_proj = next(n for n in graph["nodes"] if n["op"] == "aten.linear" and
                        n["inputs"][1].startswith("cross_attn_out_proj"))
        readers = [n for n in graph["nodes"] if n["op"] != "aten.linear" and n["inputs"] and
                   "quantize" not in n["op"] and nodes.get(n["inputs"][0]) is not None and
                   producer_or_none(n["inputs"][0]) is out_proj]
        self.assertEqual([n["op"] for n in readers], ["aten.view_copy"])
        self.assertEqual(readers[0]["args"], {"size": [64, 1, 16]})

    def test_decomposition_computes_what_the_module_computes(self):
        """attention_as_sdpa's forward against nn.MultiheadAttention's own (eval): outputs and
        weights within float32 rounding, with float masks, sequence-first batches of two, the
        per-head weights; a call with weights and no mask reads them from the one op."""
        import copy
        from vkdelegate.export.attention_sdpa import attention_as_sdpa
        from vkdelegate.export.ops_transformer import attention_as_one_op
        g = torch.Generator().manual_seed(5)
        q, kv = torch.randn(2, 6, 8, generator=g), torch.randn(2, 5, 8, generator=g)
        attn_mask = torch.randn(6, 5, generator=g)
        per_head = torch.randn(2 * 2, 6, 5, generator=g)  # [B * H, L, S]
        padding = torch.zeros(2, 5)
        padding[1, 3:] = -1e4
        cases = [
            (True, {}), (True, {"need_weights": False}),
            (True, {"attn_mask": attn_mask}), (True, {"attn_mask": per_head}),
            (True, {"key_padding_mask": padding, "attn_mask": attn_mask}),
            (True, {"key_padding_mask": padding, "average_attn_weights": False}),
            (False, {}), (False, {"key_padding_mask": padding, "need_weights": False}),
        ]
        causal = torch.full((6, 6), float("-inf")).triu(1)  # is_causal: PyTorch's hint
        cases += [(True, {"attn_mask": causal, "is_causal": True, "need_weights": False}),
                  (True, {"attn_mask": causal, "is_causal": True})]
        for batch_first, call in cases:
            with self.subTest(batch_first=batch_first, call=sorted(call)):
                torch.manual_seed(6)
                module = nn.MultiheadAttention(8, 2, batch_first=batch_first).eval()
                with torch.no_grad():
                    module.in_proj_bias.uniform_(-0.5, 0.5)
                copied = attention_as_sdpa(attention_as_one_op(copy.deepcopy(module)))
                x, y = (q, kv) if batch_first else (q.transpose(0, 1), kv.transpose(0, 1))
                if "is_causal" in call:  # self-attention: a square causal mask
                    y = x
                with torch.no_grad():
                    want = module(x, y, y, **call)
                    got = copied(x, y, y, **call)
                self.assertEqual(got[0].shape, want[0].shape)
                np.testing.assert_allclose(got[0], want[0], rtol=0, atol=2e-6)
                if want[1] is None:
                    self.assertIsNone(got[1])
                else:
                    self.assertEqual(got[1].shape, want[1].shape)
                    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=2e-6)
                exported = torch.export.export(copied, (x, y, y), call)
                ops = {str(n.target) for n in exported.graph.nodes if n.op == "call_function"}
                self.assertIn("aten.scaled_dot_product_attention.default", ops)

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
        from test_exporter import run_cli, vkd_compile  # the CLI in this process
        with tempfile.TemporaryDirectory() as d:
            status, _, err = run_cli(
                "--model", f"{os.path.abspath(__file__)}:transformer_blocks", "--input-shape",
                "1,3,8,8", "--calibration", "random:2", "--observer", "minmax", "--seed",
                str(SEED), "-o", d, "--name", "m")
            self.assertEqual(status, 0, err)
            m = os.path.join(d, "m")
            done = vkd_compile(m, "--partition", "--report")
            fused = [line for line in done.stdout.splitlines() if "into q8ta_attention" in line]
            self.assertEqual(len(fused), 2, done.stdout)  # both modules' attention: one GPU op
            with open(m + ".partition.json") as f:
                plan = json.load(f)
            host = [s["host"] for s in plan["steps"] if "host" in s]
            # the host: only the self-attention's weights, which the model returns (float, as
            # the module computes them); the conv -> tokens moves are q8ta_permute + q8ta_view
            self.assertEqual(host, ["aten._native_multi_head_attention"], host)
            self.assertGreaterEqual(len(plan["steps"]) - len(host), 1)  # GPU partitions too
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
