"""Sentence-embedding pooling exported and run (run by CTest `python_exporter`).

sentence-transformers' pooling after a quantized linear: the mean over the tokens a mask keeps,
then L2 normalisation (F.normalize). It exports into float ops (aten.to.dtype,
aten.sum.dim_IntList, aten.clamp, aten.div.Tensor, aten.linalg_vector_norm, aten.clamp_min,
aten.expand_as); `vkd compile --partition` runs those the float kernels take on the GPU
(test_float_ops.py) and leaves the rest to the host, `vkd run PLAN.partition.json` must run
the plan, and its output must match the converted
(reference-quantized) model within 1e-5 relative, each row of unit L2 norm.
With VkdQuantizer the pooling stays float after the linear's int8 output, and `vkd compile`
makes it one q8ta_masked_mean_normalize: a batch of two sentences with different masks runs as
three dispatches (the input's quantize, the linear, the pooling), the output equal to the CPU reference interpreter's
(`vkd run --check`: max abs error 0) and to the converted model within float rounding.
"""
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from test_exporter import quantized_with_mask, vkd_compile, write_model

POOLING_OPS = ("aten.to.dtype", "aten.sum.dim_IntList", "aten.div.Tensor",
               "aten.linalg_vector_norm", "aten.clamp_min", "aten.expand_as")


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x, mask):
        h = self.lin(x)
        m = mask.unsqueeze(-1).to(h.dtype)
        e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(e, p=2, dim=1)


class EmbeddingPoolingTest(unittest.TestCase):
    def test_vkd_runs_masked_mean_and_l2_norm_as_pytorch_does(self):
        vkd = os.environ.get("VKD")
        self.assertTrue(vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.export import to_graph_ir
        q, x, mask = quantized_with_mask(Pool, 0, (1, 8, 16), [6])
        graph, tensors = to_graph_ir(q, (x, mask), name="pool")
        ops = {n["op"] for n in graph["nodes"]}
        for op in POOLING_OPS:
            self.assertIn(op, ops)
        with tempfile.TemporaryDirectory() as d:
            m = write_model(d, "pool", graph, tensors, {"x": x, "mask": mask})
            done = vkd_compile(m, "--partition")
            run = subprocess.run([vkd, "run", m + ".partition.json", "--input", f"x={m}.x.npy",
                                  "--input", f"mask={m}.mask.npy", "--output-dir",
                                  os.path.join(d, "run")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            got = np.load(os.path.join(d, "run", "output.npy"))
        with torch.no_grad():
            want = q(x, mask).numpy()
        self.assertEqual(got.shape, (1, 16))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.linalg.norm(got.astype(np.float64), axis=1), 1.0,
                                   rtol=1e-6)

    def test_pooling_is_one_dispatch_equal_to_the_reference(self):
        vkd = os.environ.get("VKD")
        self.assertTrue(vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.export import to_graph_ir
        q, x, mask = quantized_with_mask(Pool, 1, (2, 8, 16), [5, 7])
        graph, tensors = to_graph_ir(q, (x, mask), name="pool")
        with tempfile.TemporaryDirectory() as d:
            m = write_model(d, "pool", graph, tensors, {"x": x, "mask": mask})
            done = vkd_compile(m, "--report")
            self.assertIn("into q8ta_masked_mean_normalize 'output' (B 2, T 8, C 16, mask 'mask'",
                          done.stdout)
            run = subprocess.run([vkd, "run", m + ".vkd", "--input", f"x={m}.x.npy", "--input",
                                  f"mask={m}.mask.npy", "--output-dir", os.path.join(d, "run"),
                                  "--profile", "--check", m + ".json", "--weights",
                                  m + ".safetensors"], capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            # The input's quantize, the linear, the whole pooling.
            self.assertIn("profile (last run, 3 dispatch nodes)", run.stdout)
            dispatched = re.findall(r"^\s+\d+\s+(\S+)\s", run.stdout, re.M)
            self.assertEqual(dispatched, ["q8ta_quantize", "q8ta_linear",
                                          "q8ta_masked_mean_normalize"], run.stdout)
            self.assertIn("end to end: output max abs err 0,", run.stdout)
            self.assertIn("check: every compared tensor matches the reference", run.stdout)
            got = np.load(os.path.join(d, "run", "output.npy"))
        with torch.no_grad():
            want = q(x, mask).numpy()
        self.assertEqual(got.shape, (2, 16))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


if __name__ == "__main__":
    unittest.main()
