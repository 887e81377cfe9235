"""A variable sequence length (issue 35; run by CTest `python_exporter`): one blob compiled for a
maximum length runs every length up to it, each result bit-equal to a blob compiled for that
length, and a longer input is refused with a message naming the input, the dim and the limit.

A small BERT-like encoder layer (token + position embeddings, layer norm, SDPA self-attention
with an additive mask from a 0/1 mask, output linear, residual, layer norm) quantized by
vkdelegate.export.quantize with torch.export's Dim("T", min=1, max=16), exported by
to_graph_ir with the same dynamic_shapes and compiled by `vkd compile` (without --partition: the
whole graph is one blob). `vkd run` of that blob at T = 16, 7, 2 and 1 against `vkd run` of a
blob exported and compiled at exactly that T (the same quantized model), under the validation
layer, and vkdelegate.runtime's Program.run of the one blob at each length equal to both. At
T = 1 the head split only reshapes; the attention still fuses (compiler/Fuse.cpp's first pass),
so the blob compiled at T = 1 has no host step either.
"""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HIDDEN, HEADS, VOCAB, MAX = 32, 4, 50, 16


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(MAX, HIDDEN)
        self.register_buffer("position_ids", torch.arange(MAX)[None, :], persistent=False)
        self.norm = nn.LayerNorm(HIDDEN)
        self.query, self.key, self.value, self.out = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.norm_out = nn.LayerNorm(HIDDEN)

    def forward(self, ids, mask):
        b, t = ids.shape
        x = self.norm(self.words(ids) + self.positions(self.position_ids[:, :t]))
        additive = ((1.0 - mask) * -10000.0)[:, None, None, :]

        def heads(y):
            return y.view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2)

        a = F.scaled_dot_product_attention(heads(self.query(x)), heads(self.key(x)),
                                           heads(self.value(x)), attn_mask=additive)
        return self.norm_out(x + self.out(a.transpose(1, 2).reshape(b, t, HIDDEN)))


def sample(length, seed, padding=2):
    """Token ids [1, T] and the 0/1 mask with `padding` padding tokens at the end."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (1, length), generator=g)
    mask = torch.ones(1, length)
    mask[:, max(length - padding, 1):] = 0.0
    return ids, mask


def run(args):
    return subprocess.run([os.environ["VKD"]] + [str(a) for a in args], capture_output=True,
                          text=True)


class DynamicLengthTest(unittest.TestCase):
    def setUp(self):
        if not os.environ.get("VKD"):
            self.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")

    def export(self, folder, name, graph, tensors):
        from vkdelegate.export import safetensors
        from vkdelegate.export.ir import to_json_text
        (folder / f"{name}.json").write_text(to_json_text(graph))
        safetensors.save(str(folder / f"{name}.safetensors"), tensors)
        done = run(["compile", folder / f"{name}.json", "--weights",
                    folder / f"{name}.safetensors", "-o", folder / f"{name}.vkd"])
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return folder / f"{name}.vkd"

    def run_blob(self, folder, blob, inputs, tag):
        for name, t in zip(("ids", "mask"), inputs):
            np.save(folder / f"{name}_{tag}.npy", t.numpy())
        done = run(["run", blob, "--input", f"ids={folder}/ids_{tag}.npy", "--input",
                    f"mask={folder}/mask_{tag}.npy", "--output-dir", folder / f"out_{tag}"])
        return done, folder / f"out_{tag}" / "output.npy"

    def test_one_blob_runs_every_length_as_a_blob_of_that_length(self):
        from torch.export import Dim
        from vkdelegate.export import quantize, to_graph_ir
        torch.manual_seed(0)
        model = Encoder().eval()
        T = Dim("T", min=1, max=MAX)
        dynamic = {"ids": {1: T}, "mask": {1: T}}
        calibration = [sample(length, s) for s, length in enumerate((16, 9, 12, 5, 16, 3))]
        converted = quantize(model, sample(MAX, 1), calibration, dynamic_shapes=dynamic).converted
        with tempfile.TemporaryDirectory() as d:
            folder = Path(d)
            graph, tensors = to_graph_ir(converted, sample(MAX, 1), name="enc",
                                         dynamic_shapes=dynamic)
            self.assertEqual((graph["dynamic"]["name"], graph["dynamic"]["min"],
                              graph["dynamic"]["max"]), ("T", 1, MAX))
            self.assertEqual(graph["dynamic"]["values"]["ids"], [[1, 1, 0]])
            blob = self.export(folder, "dyn", graph, tensors)
            inspect = run(["inspect", blob])
            self.assertEqual(inspect.returncode, 0, inspect.stderr)
            self.assertIn("dynamic length: T from 1 to 16 (any length runs without recompiling)\n"
                          "  inputs: ids dim 1 = 1*T, mask dim 1 = 1*T\n"
                          "  outputs: output dim 1 = 1*T\n", inspect.stdout)

            # export() writes the same section (and the files) for the same model.
            from vkdelegate.export import export
            written = export(model, sample(MAX, 1), folder / "export", "enc", calibration,
                             dynamic_shapes=dynamic)
            self.assertIn('"dynamic": {"name": "T", "min": 1, "max": 16',
                          Path(written["graph"]).read_text())

            from vkdelegate.runtime import VkdError, load
            program = load(blob, validation=True)
            self.addCleanup(program.close)
            self.assertEqual(program.length_range, (1, MAX))

            for length in (MAX, 7, 2, 1):
                with self.subTest(length=length):
                    inputs = sample(length, 100 + length)
                    fixed = self.export(folder, f"fixed{length}",
                                        *to_graph_ir(converted, inputs, name="enc"))
                    got, got_path = self.run_blob(folder, blob, inputs, f"dyn{length}")
                    self.assertEqual(got.returncode, 0, got.stdout + got.stderr)
                    self.assertIn("validation: no messages", got.stdout)
                    self.assertIn(f"length: T = {length} (the model takes 1 to 16)", got.stdout)
                    want, want_path = self.run_blob(folder, fixed, inputs, f"fixed{length}")
                    self.assertEqual(want.returncode, 0, want.stdout + want.stderr)
                    out, ref = np.load(got_path), np.load(want_path)
                    self.assertEqual(out.shape, (1, length, HIDDEN))
                    np.testing.assert_array_equal(out, ref)
                    # The Python runtime runs the same blob at the same length the same way.
                    np.testing.assert_array_equal(program.run(*(t.numpy() for t in inputs))[0],
                                                  out)
                    # Not vacuous: both are the quantized model's result (int8 within the
                    # encoder, float layer norm out).
                    with torch.no_grad():
                        torch_out = converted(*inputs).numpy()
                    self.assertLess(np.abs(out - torch_out).max(), 0.25)

            # --bench at a shorter length: no zero-copy pass through the maximum's staging.
            bench = run(["run", blob, "--input", f"ids={folder}/ids_dyn7.npy", "--input",
                         f"mask={folder}/mask_dyn7.npy", "--bench", "1", "--output-dir",
                         folder / "bench7"])
            self.assertEqual(bench.returncode, 0, bench.stdout + bench.stderr)
            self.assertIn("bench: zero-copy n/a (the staging views have the maximum length's "
                          "shapes)", bench.stdout)
            # --check interprets the graph IR at its own (the maximum's) shapes only.
            check = run(["run", blob, "--input", f"ids={folder}/ids_dyn7.npy", "--input",
                         f"mask={folder}/mask_dyn7.npy", "--check", folder / "dyn.json",
                         "--weights", folder / "dyn.safetensors", "--output-dir",
                         folder / "check7"])
            self.assertEqual(check.returncode, 2, check.stdout + check.stderr)
            self.assertIn("--check runs the graph IR at its own shapes, the maximum length",
                          check.stderr)
            self.assertEqual(program.validation_message_count, 0)
            with self.assertRaisesRegex(VkdError, r"input 0 'ids' has shape \[1,17\]: dim 1 is "
                                                  r"1\*T for the length T from 1 to 16"):
                program.run(*(t.numpy() for t in sample(MAX + 1, 7)))

            longer, _ = self.run_blob(folder, blob, sample(MAX + 1, 7), "longer")
            self.assertEqual(longer.returncode, 2, longer.stdout + longer.stderr)
            self.assertIn("input 0 'ids' has shape [1,17]: dim 1 is 1*T for the length T from 1 "
                          "to 16 (1 to 16), got 17 (longer than the maximum the model was "
                          "compiled for)", longer.stderr)


class ScaledByLength(nn.Module):
    """A float computed from the length (a scale of 1/sqrt(T)): no a * T + b can say it."""

    def forward(self, x):
        return x * (x.shape[1] ** -0.5)


class DynamicShapesRefusedTest(unittest.TestCase):
    """What the exporter cannot write as one graph for every length, each with its message
    (no device needed)."""

    def test_what_does_not_follow_the_length_is_refused_by_name(self):
        from torch.export import Dim
        from vkdelegate.export import ExportError, quantize, to_graph_ir
        T = Dim("T", min=2, max=8)
        x = torch.randn(1, 8, 4)
        dynamic = {"x": {1: T}}
        converted = quantize(ScaledByLength(), (x,), [(torch.randn(1, n, 4),) for n in (8, 3)],
                             dynamic_shapes=dynamic).converted
        with self.assertRaisesRegex(ExportError, r"node 0 \(aten\.mul\.Scalar\) arg 'other' "
                                                 r"changes with the length T \(0\.3535\d+ at 8, "
                                                 r"0\.3779\d+ at 7\); export at a fixed length"):
            to_graph_ir(converted, (x,), dynamic_shapes=dynamic)

    def test_dynamic_shapes_the_exporter_does_not_take(self):
        from torch.export import Dim
        from vkdelegate.export import ExportError, to_graph_ir
        model = Encoder().eval()
        gm = torch.export.export(model, sample(MAX, 1), dynamic_shapes={
            "ids": {1: Dim("T", max=MAX)}, "mask": {1: Dim("T", max=MAX)}}).module()
        two = {"ids": {1: Dim("T", max=MAX)}, "mask": {1: Dim("S", max=MAX)}}
        with self.assertRaisesRegex(ExportError, "two dynamic dims \\('T' and 'S'\\); one "
                                                 "length \\(a sequence length\\) is supported"):
            to_graph_ir(gm, sample(MAX, 1), dynamic_shapes=two)
        with self.assertRaisesRegex(ExportError, "needs a maximum"):
            to_graph_ir(gm, sample(MAX, 1), dynamic_shapes={"ids": {1: Dim("T")}})
        with self.assertRaisesRegex(ExportError, "dynamic_shapes names \\['tokens'\\], which "
                                                 "the model does not take"):
            to_graph_ir(gm, sample(MAX, 1), dynamic_shapes={"tokens": {1: Dim("T", max=4)}})


if __name__ == "__main__":
    unittest.main()
