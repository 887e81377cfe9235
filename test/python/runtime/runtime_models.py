"""The models the runtime tests load, written here as graph IR (compiler/README.md) and compiled
with the built `vkd` (CTest passes VKD), and an independent numpy reference of each.

TWO_IN_TWO_OUT (a blob, every node on the GPU):
    x, y float32 [1,4,6,10] -> quantize / dequantize each -> sum = q/dq(xd + yd)
                                                         -> pooled = q/dq(max_pool2d(xd, 2))
POOL_ON_HOST (a partition plan: GPU, host, GPU): x -> q/dq -> max_pool2d -> quantize to
    [-127, 127], which no kernel writes, so the pool runs on the host -> dequantize -> y.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np

SHAPE = (1, 4, 6, 10)
X_Q, Y_Q, SUM_Q, POOL_Q = (0.0625, 5), (0.125, -3), (0.25, 2), (0.05, -7)


def _q_args(q, quant_min=-128):
    return {"scale": q[0], "zero_point": q[1], "quant_min": quant_min, "quant_max": 127,
            "dtype": "int8"}


def _node(op, inputs, args, out):
    return {"op": op, "inputs": inputs, "args": args, "outputs": [out]}


def _qdq(x, q, out, quant_min=-128):
    """quantize then dequantize `x` into `out`."""
    return [_node("quantized_decomposed.quantize_per_tensor", [x], _q_args(q, quant_min),
                  out + "_q"),
            _node("quantized_decomposed.dequantize_per_tensor", [out + "_q"],
                  _q_args(q, quant_min), out)]


_POOL = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1],
         "ceil_mode": False}
_INPUT = {"dtype": "float32", "shape": list(SHAPE)}

# Each consumer of a quantized tensor has its own dequantize, as exporters write it (the
# compiler's fusion patterns match a dequantize -> op -> quantize chain).
TWO_IN_TWO_OUT = {
    "vkd_graph": 1, "inputs": ["x", "y"], "outputs": ["sum", "pooled"],
    "values": {"x": _INPUT, "y": _INPUT},
    "nodes": (_qdq("x", X_Q, "xd") + _qdq("y", Y_Q, "yd")
              + [_node("aten.add.Tensor", ["xd", "yd"], {}, "s")] + _qdq("s", SUM_Q, "sum")
              + [_node("quantized_decomposed.dequantize_per_tensor", ["xd_q"], _q_args(X_Q),
                       "xd2"),
                 _node("aten.max_pool2d", ["xd2"], _POOL, "m")] + _qdq("m", X_Q, "pooled"))}

POOL_ON_HOST = {
    "vkd_graph": 1, "inputs": ["x"], "outputs": ["y"], "values": {"x": _INPUT},
    "nodes": (_qdq("x", X_Q, "xd") + [_node("aten.max_pool2d", ["xd"], _POOL, "m")]
              + _qdq("m", POOL_Q, "y", quant_min=-127))}


# ---- numpy reference (compiler/ops/QuantizeDequantize.cpp rounding, each step float32) ----
def qdq(x, q, quant_min=-128):
    scale = np.float32(q[0])
    inverse = np.float32(1.0 / np.float64(scale))
    levels = np.clip(np.rint((x * inverse).astype(np.float32)) + q[1], quant_min, 127)
    return ((levels - q[1]).astype(np.float32) * scale).astype(np.float32)


def max_pool_2x2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def reference_two_in_two_out(x, y):
    xd, yd = qdq(x, X_Q), qdq(y, Y_Q)
    return [qdq((xd + yd).astype(np.float32), SUM_Q), qdq(max_pool_2x2(xd), X_Q)]


def reference_pool_on_host(x):
    return [qdq(max_pool_2x2(qdq(x, X_Q)), POOL_Q, quant_min=-127)]


def random_input(seed, shape=SHAPE):
    """Values in [-6, 6) on a grid of 1/64: sums and pools meet rounding ties too."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-384, 384, shape) / 64.0).astype(np.float32)


# ---- the built vkd ----
def vkd() -> str:
    return os.environ["VKD"]


def compile_graph(graph: dict, folder: Path, name: str, partition=False) -> Path:
    """`graph` written to FOLDER/NAME.json and compiled: NAME.vkd, or with --partition
    NAME.partition.json (+ its blobs); returns the path to load."""
    source = folder / f"{name}.json"
    source.write_text(json.dumps(graph))
    out = folder / f"{name}.vkd"
    subprocess.run([vkd(), "compile", str(source), "-o", str(out)]
                   + (["--partition"] if partition else []),
                   check=True, capture_output=True)
    return folder / f"{name}.partition.json" if partition else out


def vkd_run(model: Path, inputs: dict, folder: Path) -> dict:
    """`vkd run` on .npy files of `inputs` (name -> array): its outputs by name."""
    folder.mkdir()
    args = []
    for name, array in inputs.items():
        np.save(folder / f"{name}.npy", array)
        args += ["--input", f"{name}={folder / (name + '.npy')}"]
    subprocess.run([vkd(), "run", str(model), *args, "--output-dir", str(folder / "out")],
                   check=True, capture_output=True)
    return {p.stem: np.load(p) for p in (folder / "out").glob("*.npy")}
