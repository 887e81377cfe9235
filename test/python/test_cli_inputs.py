"""The exporter CLI with several inputs and integer ones (run by CTest `python_exporter`):
--input-shape once per forward() argument, --example-inputs FILE.npz by name or in order,
integer token ids kept integer into the graph IR and NAME.input.<argument>.npy, random
calibration for integer inputs, a folder of .npz calibration samples, the printed `vkd run`
line (run with the built vkd when CTest passes VKD) and the printed accuracy report.
"""
import contextlib
import io
import json
import os
import shlex
import subprocess
import tempfile
import unittest

import numpy as np
import torch

import cli_models
from vkdelegate import accuracy
from vkdelegate.export import cli
from vkdelegate.export.inputs import InputSpec, RandomInputs

MODELS = cli_models.__file__
FAST = ["--calibration", "random:2", "--observer", "minmax"]
IDS = np.array([[3, 17, 17, 42, 9, 0]], np.int64)
FEATS = np.linspace(-1, 1, 48, dtype=np.float32).reshape(1, 6, 8)


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ExampleInputsTest(unittest.TestCase):
    def test_token_ids_stay_integer_by_name_and_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            outs = {}
            for how, save in (("named", lambda p: np.savez(p, feats=FEATS, input_ids=IDS)),
                              ("ordered", lambda p: np.savez(p, IDS, FEATS))):
                npz, out = os.path.join(d, how + ".npz"), os.path.join(d, how)
                save(npz)
                status, stdout, err = run_cli(["--model", f"{MODELS}:tokens",
                                               "--example-inputs", npz, "-o", out] + FAST)
                self.assertEqual(status, 0, err)
                outs[how] = out
                with self.subTest(how):
                    ids = np.load(os.path.join(out, "tokens.input.input_ids.npy"))
                    self.assertEqual(ids.dtype, np.int64)
                    np.testing.assert_array_equal(ids, IDS)
                    feats = np.load(os.path.join(out, "tokens.input.feats.npy"))
                    self.assertEqual(feats.dtype, np.float32)
                    np.testing.assert_array_equal(feats, FEATS)
                    self.assertFalse(os.path.exists(os.path.join(out, "tokens.input.npy")))
                    with open(os.path.join(out, "tokens.json")) as f:
                        graph = json.load(f)
                    self.assertEqual(graph["inputs"], ["input_ids", "feats"])
                    self.assertEqual(graph["values"]["input_ids"], {"dtype": "int64",
                                                                    "shape": [1, 6]})
                    self.assertEqual(graph["values"]["feats"]["dtype"], "float32")
                    q = shlex.quote
                    self.assertIn(
                        f"vkd run {q(os.path.join(out, 'tokens.vkd'))} --input input_ids="
                        f"{q(os.path.join(out, 'tokens.input.input_ids.npy'))} --input feats="
                        f"{q(os.path.join(out, 'tokens.input.feats.npy'))}", stdout)
                    self.assertIn("int8 model (PyTorch's reference-quantized, convert_pt2e) "
                                  "against the float model, on the sample input and 2 "
                                  "calibration input(s):", stdout)
            # the arrays bound in order are the arrays bound by name: the same export
            for suffix in (".json", ".safetensors", ".calibration.json"):
                self.assertEqual(read(os.path.join(outs["named"], "tokens" + suffix)),
                                 read(os.path.join(outs["ordered"], "tokens" + suffix)), suffix)

    def test_input_shape_per_argument(self):
        with tempfile.TemporaryDirectory() as d:
            status, _, err = run_cli(["--model", f"{MODELS}:two_inputs", "--input-shape",
                                      "1,3,8,8", "--input-shape", "1,4,8,8", "--seed", "7",
                                      "-o", d] + FAST)
            self.assertEqual(status, 0, err)
            # the sample input: standard normal draws, generator seeded with S+2, in order
            gen = torch.Generator().manual_seed(9)
            for name, shape in (("x", (1, 3, 8, 8)), ("y", (1, 4, 8, 8))):
                got = np.load(os.path.join(d, f"two_inputs.input.{name}.npy"))
                np.testing.assert_array_equal(got, torch.randn(shape, generator=gen).numpy())

    def test_calibration_folder_of_npz_samples(self):
        """Each .npz is one sample, its arrays bound by name: the observed range of input y is
        the files' y range (minmax observers)."""
        rng = np.random.default_rng(11)
        with tempfile.TemporaryDirectory() as d:
            cal = os.path.join(d, "cal")
            os.mkdir(cal)
            ys = []
            for k in range(3):
                y = (rng.standard_normal((1, 4, 8, 8)) * (k + 1)).astype(np.float32)
                np.savez(os.path.join(cal, f"{k}.npz"), y=y,
                         x=rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
                ys.append(y)
            out = os.path.join(d, "out")
            status, _, err = run_cli(["--model", f"{MODELS}:two_inputs", "--input-shape",
                                      "1,3,8,8", "--input-shape", "1,4,8,8", "--calibration",
                                      cal, "--observer", "minmax", "-o", out])
            self.assertEqual(status, 0, err)
            with open(os.path.join(out, "two_inputs.calibration.json")) as f:
                observed = {a["value"]: a for a in json.load(f)["activations"]}
            self.assertAlmostEqual(observed["y"]["min"], float(min(y.min() for y in ys)), 6)
            self.assertAlmostEqual(observed["y"]["max"], float(max(y.max() for y in ys)), 6)

    def test_random_calibration_of_integer_inputs(self):
        """Integer inputs: uniform over the example's [min, max] in its dtype; a float input
        keeps the single-input sequence: torch.randn from one generator seeded with SEED."""
        ids = InputSpec("ids", (4, 50), np.int64, low=3, high=9)
        feats = InputSpec("feats", (2, 3))
        samples = list(RandomInputs([ids, feats], 20, 5))
        drawn = np.stack([s[0].numpy() for s in samples])
        self.assertEqual(drawn.dtype, np.int64)
        self.assertEqual((drawn.min(), drawn.max()), (3, 9))
        self.assertEqual(set(np.unique(drawn)), set(range(3, 10)))
        gen = torch.Generator().manual_seed(5)
        for sample in samples:
            np.testing.assert_array_equal(sample[1].numpy(), torch.randn((2, 3), generator=gen))
        gen = torch.Generator().manual_seed(5)
        for x in RandomInputs((1, 3, 4, 4), 3, 5):
            np.testing.assert_array_equal(x.numpy(), torch.randn((1, 3, 4, 4), generator=gen))

    def test_printed_run_line_runs_on_the_device(self):
        vkd = os.environ.get("VKD")
        if not vkd:
            self.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")
        with tempfile.TemporaryDirectory() as d:
            status, stdout, err = run_cli(["--model", f"{MODELS}:two_inputs", "--input-shape",
                                           "1,3,8,8", "--input-shape", "1,4,8,8", "-o", d,
                                           "--compile", vkd] + FAST)
            self.assertEqual(status, 0, err)
            line = next(t for t in stdout.splitlines() if t.startswith("run it: "))
            run = subprocess.run(shlex.split(line[len("run it: "):]) +
                                 ["--output-dir", os.path.join(d, "run")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            got = np.load(os.path.join(d, "run", "output.npy"))
            torch.manual_seed(0)  # the CLI's model: seed S = 0
            model = cli_models.two_inputs().eval()
            x, y = (torch.from_numpy(np.load(os.path.join(d, f"two_inputs.input.{n}.npy")))
                    for n in ("x", "y"))
            with torch.no_grad():
                expected = model(x, y).numpy()
            self.assertGreater(accuracy.cosine(expected, got), 0.999)


if __name__ == "__main__":
    unittest.main()
