"""Float ops on the GPU (run by CTest `python_exporter`).

What a quantizer leaves float, after a quantized linear: a float32 constant added to its output,
an attention-mask-style bias made from a 0/1 mask ((1 - m) * -10000: aten.rsub.Scalar,
aten.mul.Scalar), a clamp, then sentence-embedding pooling (aten.mul.Tensor [1, T, C] x [1, T, 1],
aten.sum.dim_IntList, aten.clamp, aten.div.Tensor, aten.linalg_vector_norm, aten.clamp_min,
aten.expand_as). `vkd compile --partition` must run all of it on the GPU (one partition, no host
step; the report lowers them to float_* ops), `vkd run --check` must find the device's output
equal to the CPU reference interpreter's (max abs error 0) with every tensor matching, and the
output must match the converted (reference-quantized) PyTorch model within float rounding.
"""
import json
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

FLOAT_OPS = ("float_add", "float_affine_scalar", "float_clamp", "float_div", "float_mul",
             "float_sum", "float_vector_norm")


class FloatTail(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 10)  # 10 outputs: rows not a multiple of 4
        self.register_buffer("pos", torch.randn(1, 8, 10))

    def forward(self, x, mask):
        h = self.lin(x) + self.pos
        m = mask.unsqueeze(-1)
        h = (h + (1.0 - m) * -10000.0).clamp(min=-5.0)
        e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(e, p=2, dim=1)


class FloatOpsTest(unittest.TestCase):
    def test_float_tail_and_pooling_run_on_the_gpu_as_the_reference_does(self):
        vkd = os.environ.get("VKD")
        self.assertTrue(vkd, "no vkd binary: CTest passes VKD=<the built vkd>")
        from vkdelegate.export import to_graph_ir
        q, x, mask = quantized_with_mask(FloatTail, 0, (1, 8, 16), [6])
        graph, tensors = to_graph_ir(q, (x, mask), name="tail")
        with tempfile.TemporaryDirectory() as d:
            m = write_model(d, "tail", graph, tensors, {"x": x, "mask": mask})
            done = vkd_compile(m, "--partition", "--report")
            with open(m + ".partition.json") as f:
                plan = json.load(f)
            self.assertEqual([s["host"] for s in plan["steps"] if "host" in s], [], plan)
            lowered = re.search(r"lowered \d+ node\(s\): (.*)", done.stdout)
            self.assertIsNotNone(lowered, done.stdout)
            for op in FLOAT_OPS:
                self.assertIn(op, lowered.group(1))
            blobs = [s["delegate"] for s in plan["steps"] if "delegate" in s]
            self.assertEqual(len(blobs), 1, plan)
            run = subprocess.run([vkd, "run", os.path.join(d, blobs[0]), "--input",
                                  f"x={m}.x.npy", "--input", f"mask={m}.mask.npy",
                                  "--output-dir", os.path.join(d, "run"), "--check",
                                  m + ".json", "--weights", m + ".safetensors"],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("end to end: output max abs err 0,", run.stdout)
            self.assertIn("check: every compared tensor matches the reference", run.stdout)
            got = np.load(os.path.join(d, "run", "output.npy"))
        with torch.no_grad():
            want = q(x, mask).numpy()
        self.assertEqual(got.shape, (1, 10))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


if __name__ == "__main__":
    unittest.main()
