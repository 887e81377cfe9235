"""The accuracy report (vkdelegate.accuracy, and the export's NAME.accuracy.json), against numpy
formulas and hand-derived numbers written here.

The export case uses a model whose quantization error the test controls: identity linears
around a ReLU, calibrated on one input whose range puts the input's int8 grid at exactly 0.01
and the ReLU's at 1.27 / 255; the sample input sits at known distances off that grid. The
test quantizes by the affine int8 formula itself and derives every expected number.
"""
import json
import math
import os
import tempfile
import unittest

import numpy as np
import torch
from torch import nn

from vkdelegate import accuracy
from vkdelegate.export import export


def numpy_sqnr(ref, got):
    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    return 10 * np.log10(np.sum(ref ** 2) / np.sum((ref - got) ** 2))


def numpy_cosine(a, b):
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))


class FunctionsTest(unittest.TestCase):
    def test_sqnr_of_a_known_noise_is_20_db(self):
        ref = np.ones(100, np.float32)
        noisy = ref + 0.1 * np.where(np.arange(100) % 2, 1, -1)  # signal 100, noise 1
        self.assertAlmostEqual(accuracy.sqnr_db(ref, noisy), 20.0, places=5)
        rng = np.random.default_rng(3)
        a = rng.standard_normal((4, 7)).astype(np.float32)
        b = a + 0.01 * rng.standard_normal((4, 7)).astype(np.float32)
        self.assertAlmostEqual(accuracy.sqnr_db(a, b), numpy_sqnr(a, b), places=9)
        self.assertEqual(accuracy.sqnr_db(a, a.copy()), math.inf)
        self.assertEqual(accuracy.sqnr_db(np.zeros(3), np.ones(3)), -math.inf)
        self.assertAlmostEqual(accuracy.sqnr_db(torch.from_numpy(a), torch.from_numpy(b)),
                               numpy_sqnr(a, b), places=9)

    def test_cosine(self):
        self.assertAlmostEqual(accuracy.cosine([1.0, 0.0], [1.0, 1.0]), 1 / math.sqrt(2))
        self.assertAlmostEqual(accuracy.cosine([1.0, 2.0], [-2.0, -4.0]), -1.0)
        rng = np.random.default_rng(4)
        a, b = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 5))
        self.assertAlmostEqual(accuracy.cosine(a, b), numpy_cosine(a, b), places=12)
        self.assertEqual(accuracy.cosine(np.zeros(4), np.zeros(4)), 1.0)
        self.assertEqual(accuracy.cosine(np.zeros(4), np.ones(4)), 0.0)
        with self.assertRaisesRegex(ValueError, r"shapes differ: \[2\] and \[3\]"):
            accuracy.cosine(np.zeros(2), np.zeros(3))

    def test_top1_counts_rows_whose_argmax_moved(self):
        rng = np.random.default_rng(5)
        ref = rng.standard_normal((8, 10))
        got = ref.copy()
        for row in (1, 4, 6):  # the runner-up overtakes the winner in three rows
            order = np.argsort(ref[row])
            got[row, order[-2]] = ref[row, order[-1]] + 1.0
        self.assertEqual(accuracy.top1_agreement(ref, got), (5, 8))
        tied = np.array([[0.5, 0.503]])  # a tie (the quantized side) picks the first class
        self.assertEqual(accuracy.top1_agreement(tied, [[0.5, 0.5]]), (0, 1))
        self.assertTrue(accuracy.is_classifier_output((8, 10)))
        for shape in ((8, 1), (8,), (1, 10, 1, 1)):
            self.assertFalse(accuracy.is_classifier_output(shape), shape)
        with self.assertRaisesRegex(ValueError, "top-1 wants"):
            accuracy.top1_agreement(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)))

    def test_report_matches_outputs_by_name_or_order(self):
        ref = {"logits": np.array([[1.0, 2.0], [3.0, 1.0]]), "map": np.ones((1, 2, 2))}
        got = {"map": np.ones((1, 2, 2)) * 1.1, "logits": np.array([[1.0, 2.0], [1.0, 3.0]])}
        result = accuracy.report(ref, got)
        by_name = {o["name"]: o for o in result["outputs"]}
        self.assertEqual(by_name["logits"]["top1"], {"agree": 1, "rows": 2})
        self.assertNotIn("top1", by_name["map"])
        self.assertAlmostEqual(by_name["map"]["sqnr_db"], numpy_sqnr(ref["map"], got["map"]))
        self.assertAlmostEqual(by_name["map"]["max_abs_diff"], 0.1)
        listed = accuracy.report([ref["logits"], ref["map"]], [got["logits"], got["map"]],
                                 names=["logits", "map"])
        self.assertEqual(listed["outputs"], result["outputs"])
        self.assertEqual(accuracy.report(ref["map"], got["map"])["outputs"][0]["name"], "output")
        with self.assertRaisesRegex(ValueError, "do not match"):
            accuracy.report(ref, {"logits": got["logits"]})
        with self.assertRaisesRegex(ValueError, "output 'map': shapes differ"):
            accuracy.report(ref, dict(got, map=np.ones(3)))
        text = accuracy.format_report(result)
        self.assertIn("1/2 rows (50.0%)", text)
        self.assertIn(f"{numpy_sqnr(ref['map'], got['map']):.2f}", text)

    def test_per_layer_ranks_lowest_sqnr_first(self):
        ref = {"a": np.ones(10), "b": np.ones(10), "c": np.ones(10), "only_ref": np.ones(2),
               "reshaped": np.ones(4)}
        got = {"a": np.ones(10) * 1.01, "b": np.ones(10) * 1.1, "c": np.ones(10),
               "reshaped": np.ones((2, 2))}
        layers = accuracy.per_layer_sqnr(ref, got, {"b": "conv2d"})
        self.assertEqual([layer["name"] for layer in layers], ["b", "a", "c"])
        self.assertAlmostEqual(layers[0]["sqnr_db"], 20.0)  # 10 log10(1 / 0.1^2)
        self.assertAlmostEqual(layers[1]["sqnr_db"], 40.0)
        self.assertEqual(layers[2]["sqnr_db"], math.inf)
        self.assertEqual(layers[0]["op"], "conv2d")
        many = {f"layer{k}": np.ones(4) for k in range(12)}
        noisy = {f"layer{k}": np.ones(4) * (1 + 0.01 * (k + 1)) for k in range(12)}
        text = accuracy.format_report({"outputs": [], "per_layer": {
            "input": "x", "layers": accuracy.per_layer_sqnr(many, noisy)}})
        self.assertIn("12 layers compared with the float model, lowest SQNR first (the 10 "
                      "lowest shown)", text)
        self.assertIn("layer11", text)
        self.assertNotRegex(text, r"\blayer[01]\b")  # the two highest are left out


# ---- the export's report on a model whose error the test controls -----------------------------

class IdentityRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 4)
        with torch.no_grad():
            for fc in (self.fc1, self.fc2):  # int8 per-channel weights hold 1.0 exactly
                fc.weight.copy_(torch.eye(4))
                fc.bias.zero_()

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def fake_quantize(v, scale, zero_point):
    """Affine int8: clamp(round(v / scale) + zero_point, -128, 127), back to float."""
    q = np.clip(np.round(np.asarray(v, np.float64) / scale) + zero_point, -128, 127)
    return (q - zero_point) * scale


# calibration: min -1.28, max 1.27: input scale 2.55 / 255 = 0.01, zero point 0; the ReLU's
# range [0, 1.27]: scale 1.27 / 255, zero point -128 (and the last linear's the same)
CALIBRATION = np.array([[-1.28, 0.3, 1.27, 0.0], [0.52, -0.4, 0.11, 0.9]], np.float32)
# off the 0.01 grid by known amounts; row 0's two largest meet at 0.50 once quantized
SAMPLE = np.array([[0.5, 0.503, -0.2031, 0.1], [0.7777, -0.3333, 0.0042, 1.1111]], np.float32)
RELU_SCALE = 1.27 / 255


class ExportReportTest(unittest.TestCase):
    def test_report_numbers_are_the_quantization_the_test_made(self):
        with tempfile.TemporaryDirectory() as d:
            export(IdentityRelu().eval(), (torch.from_numpy(SAMPLE),), d, "ident",
                   [torch.from_numpy(CALIBRATION)], observer="minmax", per_layer=True)
            with open(os.path.join(d, "ident.accuracy.json")) as f:
                result = json.load(f)

        def int8_model(x):
            x_q = fake_quantize(x, 0.01, 0)
            return x_q, fake_quantize(np.maximum(x_q, 0), RELU_SCALE, -128)

        float_out = np.maximum(np.concatenate([SAMPLE, CALIBRATION]), 0)
        int8_out = int8_model(np.concatenate([SAMPLE, CALIBRATION]))[1]
        (out,) = result["outputs"]
        self.assertEqual(result["inputs"], 2)
        self.assertEqual(out["shape"], [2, 4])
        self.assertAlmostEqual(out["sqnr_db"], numpy_sqnr(float_out, int8_out), places=3)
        self.assertAlmostEqual(out["cosine"], numpy_cosine(float_out, int8_out), places=6)
        agree = int(np.sum(np.argmax(float_out, 1) == np.argmax(int8_out, 1)))
        self.assertEqual(agree, 3)  # the test's own check: row 0 ties after quantization
        self.assertEqual(out["top1"], {"agree": agree, "rows": 4})

        # per layer, on the sample input: the first linear sees only the input's rounding (its
        # ReLU is fused: its output stays float), the ReLU and the last linear also the ReLU's
        x_q, relu_q = int8_model(SAMPLE)
        layers = {layer["name"]: layer for layer in result["per_layer"]["layers"]}
        self.assertEqual(sorted(layers), ["linear", "linear_1", "relu"])
        self.assertAlmostEqual(layers["linear"]["sqnr_db"], numpy_sqnr(SAMPLE, x_q), places=3)
        for name in ("relu", "linear_1"):
            self.assertAlmostEqual(layers[name]["sqnr_db"],
                                   numpy_sqnr(np.maximum(SAMPLE, 0), relu_q), places=3)
        ranked = [layer["sqnr_db"] for layer in result["per_layer"]["layers"]]
        self.assertEqual(ranked, sorted(ranked))
        self.assertLess(layers["relu"]["sqnr_db"], layers["linear"]["sqnr_db"])


if __name__ == "__main__":
    unittest.main()
