"""VkdBackend in ExecuTorch's runtime (executorch_backend/): a .pte whose one delegate call
carries a real vkdelegate blob runs through vkd_et_runner (C++) and through executorch.runtime
(Python, the library loaded with ctypes), with outputs equal to `vkd run`'s on the same blob byte
for byte; a corrupted blob, tensors that do not fit the blob, and a .pte run without the
library each fail with a clear ExecuTorch error and no crash.

The .pte is made without the project's partitioner: a BackendDetails subclass named VkdBackend
(ExecuTorch finds backends by class name) whose preprocess returns the blob `vkd compile` made
from a small graph IR, lowered over the whole program with to_backend.
Environment (CMake): VKD, VKD_ET_RUNNER, VKD_ET_LIB; VKD_VALIDATION=1.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.backend.backend_api import to_backend
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = [1, 4, 5, 6]
X_SCALE, Y_SCALE, OUT_SCALE, OUT_ZP = 0.05, 0.07, 0.1, 2


def qdq(name, out, scale, zp):
    args = {"scale": scale, "zero_point": zp, "quant_min": -128, "quant_max": 127, "dtype": "int8"}
    return [{"op": "quantized_decomposed.quantize_per_tensor", "inputs": [name], "args": args,
             "outputs": [name + "_q"]},
            {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": [name + "_q"],
             "args": args, "outputs": [out]}]


# z = fq(fq(x) + fq(y)): two inputs with their own scales, so swapped positions would show.
GRAPH = {"vkd_graph": 1, "inputs": ["x", "y"], "outputs": ["z"],
         "values": {"x": {"dtype": "float32", "shape": SHAPE},
                    "y": {"dtype": "float32", "shape": SHAPE}},
         "nodes": qdq("x", "xd", X_SCALE, 0) + qdq("y", "yd", Y_SCALE, 0)
         + [{"op": "aten.add.Tensor", "inputs": ["xd", "yd"], "args": {}, "outputs": ["s"]}]
         + qdq("s", "z", OUT_SCALE, OUT_ZP)}


def fake_quant(v, scale, zp):
    """The test's own reference: PyTorch's quantize_per_tensor then dequantize, in float32."""
    q = np.clip(np.rint(v * np.float32(1.0 / scale)) + zp, -128, 127)
    return ((q - zp) * np.float32(scale)).astype(np.float32)


class VkdBackend(BackendDetails):
    """AOT side for this test only: the payload is whatever bytes PAYLOAD holds."""
    PAYLOAD = b""

    @staticmethod
    def preprocess(edge_program, compile_specs):
        return PreprocessResult(processed_bytes=VkdBackend.PAYLOAD)


class AddModel(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def make_pte(path, payload, shape, config=None):
    """A .pte whose forward is one VkdBackend call carrying `payload`, traced at `shape`
    (`config`: to_executorch's ExecutorchBackendConfig)."""
    VkdBackend.PAYLOAD = payload
    ex = (torch.zeros(shape), torch.zeros(shape))
    lowered = to_backend("VkdBackend", to_edge(torch.export.export(AddModel(), ex))
                         .exported_program(), [])

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lowered = lowered

        def forward(self, x, y):
            return self.lowered(x, y)

    with open(path, "wb") as f:
        f.write(to_edge(torch.export.export(Wrap(), ex)).to_executorch(config).buffer)


def run(*cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)


class VkdBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.d = cls.tmp.name
        with open(f"{d}/g.json", "w") as f:
            json.dump(GRAPH, f)
        r = run(os.environ["VKD"], "compile", f"{d}/g.json", "-o", f"{d}/m.vkd")
        assert r.returncode == 0, r.stderr
        with open(f"{d}/m.vkd", "rb") as f:
            blob = f.read()
        make_pte(f"{d}/m.pte", blob, SHAPE)
        bad = bytearray(blob)
        for i in range(len(bad) // 2, len(bad) // 2 + 4):
            bad[i] ^= 0xFF
        make_pte(f"{d}/bad.pte", bytes(bad), SHAPE)
        make_pte(f"{d}/wide.pte", blob, SHAPE[:3] + [SHAPE[3] + 1])  # sizes the blob lacks
        # Inputs and outputs left to the caller (no copy into planned buffers).
        make_pte(f"{d}/user_io.pte", blob, SHAPE, ExecutorchBackendConfig(
            memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False,
                                                    alloc_graph_output=False)))
        rng = np.random.default_rng(0)
        cls.x = rng.uniform(-4, 4, SHAPE).astype(np.float32)
        cls.y = rng.uniform(-4, 4, SHAPE).astype(np.float32)
        np.save(f"{d}/x.npy", cls.x)
        np.save(f"{d}/y.npy", cls.y)
        r = run(os.environ["VKD"], "run", f"{d}/m.vkd", "--input", f"x={d}/x.npy",
                "--input", f"y={d}/y.npy", "--output-dir", f"{d}/ref")
        assert r.returncode == 0, r.stderr
        cls.ref = np.load(f"{d}/ref/z.npy")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assert_equals_vkd_run(self, out):
        self.assertEqual((out.dtype, out.shape), (self.ref.dtype, self.ref.shape))
        self.assertEqual(out.tobytes(), self.ref.tobytes())

    def test_reference_is_right(self):
        # vkd run's output itself, against the test's own fake-quant reference (one step
        # apart at most: a tie may round either way).
        want = fake_quant(fake_quant(self.x, X_SCALE, 0) + fake_quant(self.y, Y_SCALE, 0),
                          OUT_SCALE, OUT_ZP)
        self.assertLessEqual(np.abs(self.ref - want).max(), OUT_SCALE * 1.001)
        self.assertGreater(np.abs(self.ref).max(), 1.0)

    def test_cpp_runner_equals_vkd_run(self):
        r = run(os.environ["VKD_ET_RUNNER"], f"{self.d}/m.pte", "--input", f"{self.d}/x.npy",
                "--input", f"{self.d}/y.npy", "--output-dir", self.d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_equals_vkd_run(np.load(f"{self.d}/output0.npy"))

    def test_cpp_runner_with_unplanned_io_equals_vkd_run(self):
        # The runner hands its own output buffers to a .pte that plans no inputs or outputs.
        r = run(os.environ["VKD_ET_RUNNER"], f"{self.d}/user_io.pte", "--input",
                f"{self.d}/x.npy", "--input", f"{self.d}/y.npy", "--output-dir",
                f"{self.d}/user_io")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_equals_vkd_run(np.load(f"{self.d}/user_io/output0.npy"))

    def test_python_runtime_equals_vkd_run(self):
        # Before the library is loaded the same process fails cleanly, then runs the .pte.
        out = f"{self.d}/py.npy"
        r = run(sys.executable, f"{HERE}/et_python_run.py", f"{self.d}/m.pte",
                os.environ["VKD_ET_LIB"], out, f"{self.d}/x.npy", f"{self.d}/y.npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Backend VkdBackend is not registered", r.stderr)
        self.assert_equals_vkd_run(np.load(out))

    def test_corrupted_blob_is_an_executorch_error(self):
        r = run(os.environ["VKD_ET_RUNNER"], f"{self.d}/bad.pte")
        self.assertEqual(r.returncode, 1, r.stderr)  # not a signal: no crash
        self.assertIn("VkdBackend: cannot load the delegate blob", r.stderr)
        self.assertIn("checksum", r.stderr)

    def test_sizes_the_blob_lacks_are_invalid_argument(self):
        r = run(os.environ["VKD_ET_RUNNER"], f"{self.d}/wide.pte")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("VkdBackend: input 0 ('x'): ExecuTorch sizes [1, 4, 5, 7], the blob "
                      "expects [1, 4, 5, 6]", r.stderr)
        self.assertIn("error 0x12", r.stderr)  # Error::InvalidArgument


if __name__ == "__main__":
    unittest.main()
