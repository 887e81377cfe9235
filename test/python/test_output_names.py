"""The graph IR's outputs are named after the model's outputs (run by CTest `python_exporter`):
a dict's keys and a namedtuple's fields (nested ones joined by "_"), "output" for a single
tensor, "output_0", "output_1", ... for a tuple, so `vkd run` writes out.npy, not
dequantize_66.npy. Each named output is checked to hold the model's tensor of that name: the
graph IR runs in test_exporter's numpy interpreter and every output must match its namesake in
PyTorch's reference-quantized model (convert_pt2e), and be nearer to it than to any other
output. With the vkd
binary (CTest passes VKD), the CLI exports, compiles and runs a dict-returning model: out.npy
and aux.npy hold the model's "out" and "aux".
"""
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch
from torch import nn

import cli_models
import test_exporter as reference  # its interpreter and checks; not its tests (a module here)
from vkdelegate.export import quantize, to_graph_ir

SHAPE = (1, 3, 8, 8)


class TupleHeads(cli_models.Heads):
    def forward(self, x):
        return self.head(x), self.aux(x)


class SingleHead(cli_models.Heads):
    def forward(self, x):
        return self.head(x)


class SplitReturned(cli_models.Heads):
    def forward(self, x):
        return self.head(x).chunk(2, dim=1)


class AwkwardKeys(cli_models.Heads):
    """Keys that are no file names, a nested tuple, a key that is also the name of another
    value of the graph (torch.export names the head's conv node "conv2d"), and one tensor
    returned under two keys."""

    def __init__(self):
        super().__init__()
        self.out = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        y = self.head(x)
        return {"a/b": y, "": self.aux(x), "conv2d": self.out(x),
                "pair": (y * 2, nn.functional.max_pool2d(y, 2)), "again": y}


CASES = [
    # model, its graph outputs' names, each name's tensor in the model's result
    (cli_models.dict_outputs(), ["out", "aux"], lambda r: [r["out"], r["aux"]]),
    (cli_models.namedtuple_outputs(), ["logits", "features_fine", "features_coarse"],
     lambda r: [r.logits, r.features.fine, r.features.coarse]),
    (TupleHeads(), ["output_0", "output_1"], lambda r: list(r)),
    (SingleHead(), ["output"], lambda r: [r]),
    (SplitReturned(), ["output_0", "output_1"], lambda r: list(r)),
    (AwkwardKeys(), ["a_b", "_", "conv2d", "pair_0", "pair_1", "again"],
     lambda r: [r["a/b"], r[""], r["conv2d"], r["pair"][0], r["pair"][1], r["again"]]),
]


def cosine(a, b):
    return reference.cosine(np.asarray(a), np.asarray(b))


class OutputNamesTest(unittest.TestCase):
    def assert_outputs_are_their_namesakes(self, got, expected):
        """got[name] matches expected[name] and is nearer to it than to any other output."""
        for name, value in got.items():
            self.assertEqual(value.shape, expected[name].shape, name)
            self.assertGreaterEqual(cosine(value, expected[name]), 0.999, name)
            own = np.linalg.norm(value - expected[name])
            for other, wrong in expected.items():
                if other != name and wrong.shape == value.shape and \
                        not np.array_equal(wrong, expected[name]):
                    self.assertLess(own, np.linalg.norm(value - wrong), f"{name} is {other}")

    def test_graph_outputs_are_named_after_the_model_outputs(self):
        for model, names, pick in CASES:
            with self.subTest(type(model).__name__):
                torch.manual_seed(0)
                x = torch.randn(SHAPE)
                gm = quantize(model.eval(), (x,), reference.random_inputs(2, 1, SHAPE),
                              observer="minmax").converted
                graph, tensors = to_graph_ir(gm, (x,), "m")
                self.assertEqual(graph["outputs"], names)
                if isinstance(model, AwkwardKeys):  # the value the output's name moved
                    self.assertIn("conv2d", [n.name for n in gm.graph.nodes])
                with tempfile.TemporaryDirectory() as d:
                    graph, weights = reference.write_and_read(graph, tensors, d, "m")
                reference.ModelExportTest.check_structure(self, graph, weights)
                produced = [o for n in graph["nodes"] for o in n["outputs"]]
                self.assertEqual(len(produced), len(set(produced)), "a value defined twice")
                got = reference.interpret(graph, weights, {graph["inputs"][0]: x.numpy()})
                with torch.no_grad():
                    expected = [t.numpy() for t in pick(gm(x))]
                self.assert_outputs_are_their_namesakes(dict(zip(names, got)),
                                                        dict(zip(names, expected)))

    def test_vkd_run_writes_files_named_after_the_model_outputs(self):
        vkd = os.environ.get("VKD")
        if not vkd:
            self.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")
        with tempfile.TemporaryDirectory() as d:
            status, _, err = reference.run_cli(
                "--model", f"{cli_models.__file__}:dict_outputs", "--input-shape", "1,3,8,8",
                "--calibration", "random:2", "--observer", "minmax", "--seed", "5", "-o", d,
                "--compile", vkd)
            self.assertEqual(status, 0, err)
            x = os.path.join(d, "dict_outputs.input.npy")
            run = subprocess.run([vkd, "run", os.path.join(d, "dict_outputs.vkd"),
                                  "--input", f"x={x}", "--output-dir", os.path.join(d, "run")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertEqual(sorted(os.listdir(os.path.join(d, "run"))), ["aux.npy", "out.npy"])
            got = {k: np.load(os.path.join(d, "run", k + ".npy")) for k in ("out", "aux")}
            # the CLI's model and calibration, rebuilt: seed S, inputs S+1, sample S+2
            torch.manual_seed(5)
            model = cli_models.dict_outputs().eval()
            sample = torch.from_numpy(np.load(x))
            gm = quantize(model, (sample,), reference.random_inputs(2, 6, (1, 3, 8, 8)),
                          observer="minmax").converted
            with torch.no_grad():
                expected = {k: v.numpy() for k, v in gm(sample).items()}
            self.assert_outputs_are_their_namesakes(got, expected)


if __name__ == "__main__":
    unittest.main()
