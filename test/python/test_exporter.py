"""Tests of the PyTorch exporter (python/vkdelegate/export), run by CTest `python_exporter`.

Each model is quantized, walked into the graph IR, written to files and read back here with a
reader of our own; the graph is checked structurally (known ops, every value typed, every
constant present with its dtype and shape) and numerically: a small numpy interpreter below,
written from compiler/README.md and compiler/reference/ rather than from the exporter, runs the
graph IR and its output is compared with PyTorch's reference-quantized model (convert_pt2e:
float ATen ops between quantize / dequantize) on the same input.
"""
import contextlib
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch
from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

import cli_models
from vkdelegate.examples_models import (architecture_pattern, tiny_unet, tiny_unet_transposed,
                                        torchvision_quantizable)
from vkdelegate.export import cli, quantize, safetensors, to_graph_ir
from vkdelegate.export.errors import ExportError
from vkdelegate.export.ir import to_json_text
from vkdelegate.export.pipeline import float_nodes
from vkdelegate.export.quantization import convert_ptq
from vkdelegate.export.walk import ir_value_names
from vkdelegate.quantizer import VkdQuantizer

SHAPE = (1, 3, 32, 32)
QUANTIZE = torch.ops.quantized_decomposed.quantize_per_tensor.default
SMOOTH_ACTIVATIONS = {"aten.hardswish", "aten.hardsigmoid", "aten.sigmoid", "aten.tanh",
                      "aten.silu", "aten.gelu", "aten.elu", "aten.leaky_relu"}
KNOWN_OPS = {
    *SMOOTH_ACTIVATIONS, "aten._softmax", "aten._log_softmax",
    "aten.upsample_nearest2d.vec", "aten.upsample_bilinear2d.vec",
    "quantized_decomposed.quantize_per_tensor", "quantized_decomposed.dequantize_per_tensor",
    "quantized_decomposed.dequantize_per_channel", "aten.convolution", "aten.linear",
    "aten.add.Tensor", "aten.relu", "aten.hardtanh", "aten.clamp", "aten.max_pool2d",
    "aten.mean.dim", "aten.adaptive_avg_pool2d", "aten.view_copy", "aten.pixel_shuffle",
    "aten.clone", "aten.mul.Tensor", "aten.mul.Scalar", "aten.avg_pool2d",
    "aten.cat", "aten.split_with_sizes_copy", "aten.slice_copy.Tensor",
    "aten.permute_copy", "aten.transpose_copy.int", "aten.batch_norm",
}
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "I32": np.int32,
                      "I64": np.int64}
IR_DTYPES = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "int32": np.int32,
             "int64": np.int64}


# ---- reading the files back -------------------------------------------------------------------

def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    out = {}
    for name, info in header.items():
        lo, hi = info["data_offsets"]
        dtype = np.dtype(SAFETENSORS_DTYPES[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(body[lo:hi], dtype=dtype).reshape(info["shape"])
    return out


def write_and_read(graph, tensors, directory, name):
    """Writes the graph IR and weights as the exporter does, reads them back independently."""
    json_path = os.path.join(directory, name + ".json")
    weights_path = os.path.join(directory, name + ".safetensors")
    with open(json_path, "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(weights_path, tensors)
    with open(json_path) as f:
        return json.load(f), read_safetensors(weights_path)


def write_model(directory, name, graph, tensors, inputs):
    """Writes the graph IR, its weights and each input ({name: tensor}) as the CLI reads them:
    <name>.json, <name>.safetensors, <name>.<input>.npy in `directory`; returns the path prefix
    <directory>/<name>."""
    m = os.path.join(directory, name)
    with open(m + ".json", "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(m + ".safetensors", tensors)
    for key, value in inputs.items():
        np.save(f"{m}.{key}.npy", value.numpy())
    return m


def vkd_compile(m, *flags):
    """`vkd compile <m>.json --weights <m>.safetensors -o <m>.vkd` plus `flags` (the CTest's VKD
    binary), which must succeed: the finished process (its stdout is the report)."""
    done = subprocess.run([os.environ["VKD"], "compile", m + ".json", "--weights",
                           m + ".safetensors", "-o", m + ".vkd", *flags],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def compile_partitioned(converted, x, folder, *flags):
    """The converted model's graph IR on input x written to `folder` (a Path) as m.json,
    m.safetensors and x.npy, then `vkd compile --partition` (plus `flags`) into m.vkd, which
    must succeed: (graph, tensors, compile's stdout)."""
    graph, tensors = to_graph_ir(converted, (x,), name="m")
    (folder / "m.json").write_text(to_json_text(graph))
    safetensors.save(str(folder / "m.safetensors"), tensors)
    np.save(folder / "x.npy", x.numpy())
    return graph, tensors, vkd_compile(str(folder / "m"), "--partition", *flags).stdout


def quantized_with_mask(make_model, seed, shape, kept):
    """A token model quantized as VkdQuantizer does: seeds torch, draws x [B, T, C] = `shape`
    and a 0/1 mask [B, T] keeping the first kept[b] tokens of sentence b, then quantizes
    make_model() on (x, mask), calibrated on one more random x; (converted, x, mask)."""
    torch.manual_seed(seed)
    x = torch.randn(*shape)
    mask = torch.ones(shape[:2])
    for b, k in enumerate(kept):
        mask[b, k:] = 0  # padding tokens at the end
    q = quantize(make_model().eval(), (x, mask), [(torch.randn(*shape), mask)]).converted
    return q, x, mask


# ---- a numpy interpreter of the graph IR ------------------------------------------------------

def ref_quantize(x, a):
    """quantize_per_tensor as compiler/ops/QuantizeDequantize.cpp: float32 x * float(1/scale),
    rounded half to even, plus the zero point, clamped."""
    inv = np.float32(1.0 / np.float64(np.float32(a["scale"])))
    q = np.rint((x.astype(np.float32) * inv).astype(np.float32)) + a["zero_point"]
    return np.clip(q, a["quant_min"], a["quant_max"]).astype(np.int8)


def ref_dequantize(q, a):
    return (q.astype(np.float32) - np.float32(a["zero_point"])) * np.float32(a["scale"])


def dequantize_per_channel(q, scales, zero_points, a):
    shape = [1] * q.ndim
    shape[a["axis"]] = -1
    zp = 0 if zero_points is None else zero_points.reshape(shape).astype(np.float32)
    return (q.astype(np.float32) - zp) * scales.reshape(shape)


def windows(x, kernel, stride, dilation):
    """(N, C, OH, OW, KH, KW) views of x (already padded) for a 2-d window op."""
    span = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    view = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
    return view[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]


def conv_transpose(x, w, b, a):
    """PyTorch's transposed convolution (weight [C_in, C_out / groups, KH, KW]): every input
    pixel scatters into the outputs i * stride + k * dilation, then padding is cut off both
    sides (output_padding extends the far side)."""
    s, p, d, op, g = a["stride"], a["padding"], a["dilation"], a["output_padding"], a["groups"]
    n, c, h, wd = x.shape
    cout_g, kh, kw = w.shape[1:]
    out = [(size - 1) * s[i] - 2 * p[i] + d[i] * (k - 1) + op[i] + 1
           for i, (size, k) in enumerate(((h, kh), (wd, kw)))]
    y = np.zeros((n, g * cout_g, p[0] + out[0], p[1] + out[1]), np.float32)
    xg = x.reshape(n, g, c // g, h, wd)
    wg = w.reshape(g, c // g, cout_g, kh, kw)
    for ky in range(kh):
        for kx in range(kw):
            part = np.einsum("ngihw,gio->ngohw", xg, wg[..., ky, kx]).reshape(n, -1, h, wd)
            rows = slice(ky * d[0], ky * d[0] + (h - 1) * s[0] + 1, s[0])
            cols = slice(kx * d[1], kx * d[1] + (wd - 1) * s[1] + 1, s[1])
            fit = y[:, :, rows, cols]  # cut where output_padding is smaller than the reach
            fit += part[:, :, :fit.shape[2], :fit.shape[3]]
    y = y[:, :, p[0]:, p[1]:]
    return y + (0 if b is None else b.reshape(1, -1, 1, 1))


def convolution(x, w, b, a):
    if a["transposed"]:
        return conv_transpose(x, w, b, a)
    p = a["padding"]
    x = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    cols = windows(x, w.shape[2:], a["stride"], a["dilation"])
    n, c, oh, ow, kh, kw = cols.shape
    g = a["groups"]
    cols = cols.reshape(n, g, c // g, oh, ow, kh, kw).transpose(0, 1, 3, 4, 2, 5, 6)
    cols = cols.reshape(n, g, oh * ow, c // g * kh * kw)
    wg = w.reshape(g, w.shape[0] // g, -1).transpose(0, 2, 1)
    y = np.matmul(cols, wg).transpose(0, 1, 3, 2).reshape(n, w.shape[0], oh, ow)
    return y + (0 if b is None else b.reshape(1, -1, 1, 1))


def max_pool2d(x, a):
    assert not a.get("ceil_mode", False)
    p = a.get("padding", [0, 0])
    x = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=-np.inf)
    k = a["kernel_size"]
    cols = windows(x, k, a.get("stride", k), a.get("dilation", [1, 1]))
    return cols.max(axis=(4, 5))


def pool_windows(size, out, start_end):
    """(clipped start, clipped end, unclipped extent) of each output position's window along a
    dim of `size`, from `start_end(o)` = the window's (start, end)."""
    out_windows = []
    for o in range(out):
        lo, hi = start_end(o)
        out_windows.append((max(lo, 0), min(hi, size), hi - lo))
    return out_windows


def avg_pool2d(x, a):
    """PyTorch's avg_pool2d: windows from o * stride - padding, at most kernel long and ending
    inside the padded input; the divisor is divisor_override, else the padded window's size
    (count_include_pad) or the number of input elements in it; with ceil_mode a last window
    starting in the right padding is dropped."""
    k, s, p = a["kernel_size"], a["stride"], a["padding"]
    ceil, include_pad = a.get("ceil_mode", False), a.get("count_include_pad", True)
    axes = []
    for d in range(2):
        size = x.shape[2 + d]
        out = (size + 2 * p[d] - k[d] + (s[d] - 1 if ceil else 0)) // s[d] + 1
        if ceil and (out - 1) * s[d] >= size + p[d]:
            out -= 1
        axes.append(pool_windows(size, out, lambda o, d=d, size=size: (
            o * s[d] - p[d], min(o * s[d] - p[d] + k[d], size + p[d]))))
    y = np.zeros(x.shape[:2] + (len(axes[0]), len(axes[1])), np.float32)
    for i, (h0, h1, hn) in enumerate(axes[0]):
        for j, (w0, w1, wn) in enumerate(axes[1]):
            divisor = a.get("divisor_override") or (
                hn * wn if include_pad else (h1 - h0) * (w1 - w0))
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3)) / divisor
    return y


def adaptive_avg_pool2d(x, size):
    """Output o of a dim averages input [floor(o * in / out), ceil((o + 1) * in / out))."""
    axes = [pool_windows(x.shape[2 + d], size[d], lambda o, d=d: (
        o * x.shape[2 + d] // size[d], -(-(o + 1) * x.shape[2 + d] // size[d])))
        for d in range(2)]
    y = np.zeros(x.shape[:2] + tuple(size), np.float32)
    for i, (h0, h1, _) in enumerate(axes[0]):
        for j, (w0, w1, _) in enumerate(axes[1]):
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return y


def upsample_geometry(x, a):
    """(output sizes, scale factors or [None, None]) of an upsample_*2d.vec node: the output
    size floor(in * scale) when scale factors are given."""
    if a["output_size"] is not None:
        return a["output_size"], [None, None]
    scales = a["scale_factors"]
    return [math.floor(x.shape[2 + i] * scales[i]) for i in range(2)], scales


def upsample_step(size, out, scale):
    """PyTorch's float32 source step: 1 / scale when given, else in / out."""
    if scale:
        return np.float32(1.0 / scale)
    return np.float32(np.float32(size) / np.float32(out))


def upsample_nearest2d(x, a):
    """PyTorch 2.14's CPU kernels for an NCHW tensor: source min(floor(float32(d) * step),
    in - 1), except that an output of rows + columns <= 128 (the channels-last kernel) copies the
    index of a dim whose size is unchanged and halves it of one exactly doubled."""
    out, scales = upsample_geometry(x, a)
    shortcuts = out[0] + out[1] <= 128
    idx = []
    for i in range(2):
        size = x.shape[2 + i]
        d = np.arange(out[i], dtype=np.int64)
        if shortcuts and out[i] in (size, 2 * size):
            idx.append(d // (out[i] // size))
            continue
        step = upsample_step(size, out[i], scales[i])
        idx.append(np.minimum(np.floor(d.astype(np.float32) * step).astype(np.int64), size - 1))
    return x[:, :, idx[0]][:, :, :, idx[1]]


def bilinear_taps(size, out, align, scale):
    """PyTorch 2.14's taps along one dim, in float32: the real index step * d with
    align_corners, else (d + 0.5) * step - 0.5 rounded once (the AVX2 / AVX-512 kernels' fused
    multiply-add; exact in float64 before that rounding) clamped at 0; i0 its floor (at most
    size - 1), lambda the float32 difference; the same size copies."""
    if align:
        step = np.float32(np.float32(size - 1) / np.float32(out - 1)) if out > 1 else np.float32(0)
    else:
        step = upsample_step(size, out, scale)
    i0, i1, lam = [], [], []
    for d in range(out):
        if out == size:
            real = np.float32(d)
        elif align:
            real = np.float32(step * np.float32(d))
        else:
            real = max(np.float32(float(step) * float(np.float32(d) + np.float32(0.5)) - 0.5),
                       np.float32(0))
        first = min(int(np.floor(real)), size - 1)
        i0.append(first)
        i1.append(min(first + 1, size - 1))
        lam.append(min(np.float32(real - np.float32(first)), np.float32(1)))
    return i0, i1, np.array(lam, np.float32)


def upsample_bilinear2d(x, a):
    out, scales = upsample_geometry(x, a)
    y = x
    for i in range(2):
        i0, i1, lam = bilinear_taps(x.shape[2 + i], out[i], a["align_corners"], scales[i])
        shape = [1, 1, 1, 1]
        shape[2 + i] = -1
        lam = lam.reshape(shape)
        y = np.take(y, i0, axis=2 + i) * (np.float32(1) - lam) + np.take(y, i1, axis=2 + i) * lam
    return y.astype(np.float32)


def pixel_shuffle(x, r):
    n, c, h, w = x.shape
    x = x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3)
    return x.reshape(n, c // (r * r), h * r, w * r)


def softmax(x, dim, log):
    """softmax / log_softmax along `dim`, in float64 (the reference's definition)."""
    d = x.astype(np.float64) - x.max(axis=dim, keepdims=True)
    log_sum = np.log(np.exp(d).sum(axis=dim, keepdims=True))
    return (d - log_sum if log else np.exp(d - log_sum)).astype(np.float32)


def smooth_activation(op, x, a):
    """The smooth activations as compiler/ops/Lut.cpp defines them, in float64."""
    d = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    fns = {
        "aten.hardswish": lambda: d * np.clip(d + 3, 0, 6) / 6,
        "aten.hardsigmoid": lambda: np.clip(d + 3, 0, 6) / 6,
        "aten.sigmoid": lambda: 1 / (1 + np.exp(-d)),
        "aten.tanh": lambda: np.tanh(d),
        "aten.silu": lambda: d / (1 + np.exp(-d)),
        "aten.gelu": lambda: 0.5 * d * (1 + (
            np.tanh(math.sqrt(2 / math.pi) * (d + 0.044715 * d ** 3))
            if a.get("approximate", "none") == "tanh" else erf(d / math.sqrt(2)))),
        "aten.elu": lambda: np.where(
            d > 0, d * a.get("scale", 1.0),
            a.get("alpha", 1.0) * a.get("scale", 1.0) * np.expm1(d * a.get("input_scale", 1.0))),
        "aten.leaky_relu": lambda: np.where(d > 0, d, d * a.get("negative_slope", 0.01)),
    }
    return fns[op]().astype(np.float32)


def batch_norm(x, weight, bias, mean, var, eps):
    """Eval-mode batch norm over dim 1 as compiler/reference/BatchNormFold.h writes ATen's CPU
    kernel: scale = float32(1 / sqrt(var + eps)) * weight, shift = bias - mean * scale and y =
    x * scale + shift, each multiply-add rounded once (float64 then float32: the product is exact
    in float64, so only a sum at a float32 tie could round twice)."""
    f32 = np.float32
    invstd = (f32(1) / np.sqrt(var + f32(eps))).astype(f32)
    scale = invstd if weight is None else (invstd * weight).astype(f32)
    b = np.zeros_like(mean) if bias is None else bias
    shift = (b.astype(np.float64) - mean.astype(np.float64) * scale).astype(f32)
    shape = [1, -1] + [1] * (x.ndim - 2)
    y = x.astype(np.float64) * scale.reshape(shape) + shift.reshape(shape)
    return y.astype(f32)


def run_node(op, xs, a):
    if op == "aten.batch_norm":
        assert not a["training"]
        xs = xs + [None] * (5 - len(xs))
        return batch_norm(*xs, a["eps"])
    if op in ("aten._softmax", "aten._log_softmax"):
        return softmax(xs[0], a["dim"], op == "aten._log_softmax")
    if op in SMOOTH_ACTIVATIONS:
        return smooth_activation(op, xs[0], a)
    if op == "quantized_decomposed.quantize_per_tensor":
        return ref_quantize(xs[0], a)
    if op == "quantized_decomposed.dequantize_per_tensor":
        return ref_dequantize(xs[0], a)
    if op == "quantized_decomposed.dequantize_per_channel":
        return dequantize_per_channel(xs[0], xs[1], xs[2] if len(xs) > 2 else None, a)
    if op == "aten.convolution":
        return convolution(xs[0], xs[1], xs[2] if len(xs) > 2 else None, a)
    if op == "aten.linear":
        return xs[0] @ xs[1].T + (xs[2] if len(xs) > 2 else 0)
    if op == "aten.add.Tensor":
        return xs[0] + a.get("alpha", 1) * xs[1]
    if op == "aten.relu":
        return np.maximum(xs[0], 0)
    if op == "aten.hardtanh":
        return np.clip(xs[0], a.get("min_val", -1.0), a.get("max_val", 1.0))
    if op == "aten.clamp":
        return np.clip(xs[0], a.get("min"), a.get("max"))
    if op == "aten.max_pool2d":
        return max_pool2d(xs[0], a)
    if op == "aten.mean.dim":
        return xs[0].mean(axis=tuple(a["dim"]), keepdims=a.get("keepdim", False))
    if op == "aten.adaptive_avg_pool2d":
        return adaptive_avg_pool2d(xs[0], a["output_size"])
    if op == "aten.avg_pool2d":
        return avg_pool2d(xs[0], a)
    if op == "aten.mul.Tensor":
        return xs[0] * xs[1]
    if op == "aten.mul.Scalar":
        return xs[0] * np.float32(a["other"])
    if op == "aten.view_copy":
        return xs[0].reshape(a["size"])
    if op == "aten.pixel_shuffle":
        return pixel_shuffle(xs[0], a["upscale_factor"])
    if op == "aten.upsample_nearest2d.vec":
        return upsample_nearest2d(xs[0], a)
    if op == "aten.upsample_bilinear2d.vec":
        return upsample_bilinear2d(xs[0], a)
    if op == "aten.clone":
        return xs[0].copy()
    if op == "aten.permute_copy":
        return xs[0].transpose(a["dims"])
    if op == "aten.transpose_copy.int":
        return np.swapaxes(xs[0], a["dim0"], a["dim1"])
    if op == "aten.cat":
        return np.concatenate(xs, axis=a.get("dim", 0))
    if op == "aten.split_with_sizes_copy":  # several outputs
        return np.split(xs[0], np.cumsum(a["split_sizes"])[:-1], axis=a.get("dim", 0))
    if op == "aten.slice_copy.Tensor":
        index = [slice(None)] * xs[0].ndim
        index[a.get("dim", 0)] = slice(a.get("start"), a.get("end"), a.get("step", 1))
        return xs[0][tuple(index)]
    raise AssertionError(f"the test interpreter has no {op}")


def interpret(graph, weights, inputs):
    env = dict(inputs)
    for name, v in graph["values"].items():
        if "data" in v:
            env[name] = weights[v["data"]]
    for node in graph["nodes"]:
        xs = [env[i] if i else None for i in node["inputs"]]
        result = run_node(node["op"], xs, node["args"])
        results = result if isinstance(result, list) else [result]
        assert len(results) == len(node["outputs"]), node
        env.update(zip(node["outputs"], results))
    return [env[o] for o in graph["outputs"]]


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---- the tests --------------------------------------------------------------------------------

def random_inputs(count, seed, shape=SHAPE):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for _ in range(count)]


class ModelExportTest(unittest.TestCase):
    """Each model: quantize, graph IR, files; structure and numerics."""

    def export_and_check(self, name, model, per_channel=True, expect_ops=(), shape=SHAPE):
        """The graph IR of `model` quantized (MinMax observers: the histogram's search costs
        seconds and tells the walk nothing new), checked; returns (graph, converted model)."""
        start = time.perf_counter()
        model = model.eval()
        x = random_inputs(1, 1, shape)[0]
        gm = quantize(model, (x,), random_inputs(2, 2, shape), per_channel=per_channel,
                      observer="minmax").converted
        graph, tensors = to_graph_ir(gm, (x,), name)
        with tempfile.TemporaryDirectory() as d:
            graph, weights = write_and_read(graph, tensors, d, name)
        self.check_structure(graph, weights)
        ops = {n["op"] for n in graph["nodes"]}
        self.assertTrue(set(expect_ops) <= ops, f"missing {set(expect_ops) - ops}")
        with torch.no_grad():
            expected = gm(x).numpy()
        (got,) = interpret(graph, weights, {graph["inputs"][0]: x.numpy()})
        cos = cosine(got, expected)
        print(f"\n  {name}: {len(graph['nodes'])} nodes, cosine {cos:.6f} vs PyTorch's "
              f"reference, {time.perf_counter() - start:.1f} s", file=sys.stderr)
        self.assertEqual(got.shape, expected.shape)
        self.assertGreaterEqual(cos, 0.99)
        return graph, gm

    def check_structure(self, graph, weights):
        self.assertEqual(graph["vkd_graph"], 1)
        values = graph["values"]
        for name, v in values.items():
            self.assertIn(v["dtype"], IR_DTYPES, name)
            self.assertTrue(all(isinstance(d, int) and d >= 0 for d in v["shape"]), name)
            if "data" in v:
                self.assertIn(v["data"], weights, name)
                self.assertEqual(weights[v["data"]].dtype, IR_DTYPES[v["dtype"]], name)
                self.assertEqual(list(weights[v["data"]].shape), v["shape"], name)
        defined = set(graph["inputs"]) | {n for n, v in values.items() if "data" in v}
        for i, node in enumerate(graph["nodes"]):
            self.assertIn(node["op"], KNOWN_OPS, f"node {i}")
            for name in node["inputs"]:
                self.assertIn(name, defined, f"node {i} reads {name} before it is defined")
            for name in node["outputs"]:
                self.assertIn(name, values, f"node {i} output {name} undeclared")
                self.assertNotIn(name, defined, f"node {i} redefines {name}")
                defined.add(name)
        for name in graph["outputs"]:
            self.assertIn(name, defined)
        # Weights; not a one-element buffer, quantized as an activation (full range).
        weight_dqs = [n for n in graph["nodes"] if "dequantize" in n["op"]
                      and "data" in values[n["inputs"][0]]
                      and np.prod(values[n["inputs"][0]]["shape"]) > 1]
        self.assertTrue(weight_dqs, "no int8 weights")
        for n in weight_dqs:
            self.assertEqual(values[n["inputs"][0]]["dtype"], "int8")
            self.assertEqual((n["args"]["quant_min"], n["args"]["quant_max"]), (-127, 127))

    def test_mobilenet_v2(self):
        torch.manual_seed(0)
        model = torchvision_quantizable("mobilenet_v2", input_size=SHAPE[-1])
        self.export_and_check("mobilenet_v2", model, expect_ops=[
            "aten.convolution", "aten.add.Tensor", "aten.adaptive_avg_pool2d", "aten.view_copy",
            "aten.linear", "quantized_decomposed.dequantize_per_channel"])

    def test_resnet18(self):
        torch.manual_seed(0)
        model = torchvision_quantizable("resnet18", input_size=SHAPE[-1])
        self.export_and_check("resnet18", model, expect_ops=[
            "aten.convolution", "aten.relu", "aten.add.Tensor", "aten.max_pool2d",
            "aten.adaptive_avg_pool2d", "aten.linear"])

    def test_tiny_unet(self):
        torch.manual_seed(0)
        graph, _ = self.export_and_check("tiny_unet", tiny_unet(), expect_ops=[
            "aten.hardtanh", "aten.pixel_shuffle", "aten.add.Tensor", "aten.max_pool2d"])
        # The relu6 after the add is one quantized op with it (VkdQuantizer observes the
        # activation only): dq, dq -> add -> hardtanh(0, 6) -> q; after the stem conv the same.
        producer = {n["outputs"][0]: n for n in graph["nodes"]}
        hardtanhs = [n for n in graph["nodes"] if n["op"] == "aten.hardtanh"]
        self.assertTrue(all(n["args"] == {"min_val": 0.0, "max_val": 6.0} for n in hardtanhs))
        self.assertEqual(sorted(producer[n["inputs"][0]]["op"] for n in hardtanhs),
                         ["aten.add.Tensor", "aten.convolution"])

    def test_value_names(self):
        """An op's result keeps its node's name, the int8 tensor a quantize makes of value V is
        V_q, each dequantize of it V_dq, V_dq_1, ... (one per consumer); int8 weights are
        named after their module's parameter; ir_value_names maps each node of the converted
        graph to its IR value."""
        torch.manual_seed(0)
        model = tiny_unet()
        graph, gm = self.export_and_check("tiny_unet_names", model, shape=(1, 3, 16, 16))
        nodes, values = graph["nodes"], graph["values"]
        quantized_from = {}
        for n in nodes:
            if n["op"] == "quantized_decomposed.quantize_per_tensor":
                self.assertEqual(n["outputs"][0], n["inputs"][0] + "_q")
                quantized_from[n["outputs"][0]] = n["inputs"][0]
        self.assertIn("x_q", quantized_from)
        readers = {}
        for n in nodes:
            source = n["inputs"][0]
            if n["op"] == "quantized_decomposed.dequantize_per_tensor" and \
                    source in quantized_from and n["outputs"][0] not in graph["outputs"]:
                readers.setdefault(source, []).append(n["outputs"][0])
        for source, names in readers.items():
            base = quantized_from[source] + "_dq"
            self.assertEqual(names, [base] + [f"{base}_{k}" for k in range(1, len(names))])
        convs = {name for name, p in model.named_parameters() if name.endswith("weight")}
        int8_weights = {v["data"] for v in values.values()
                        if "data" in v and v["dtype"] == "int8"}
        self.assertEqual(int8_weights, convs)
        # Each quantize node of the converted graph names its IR tensor; every op its result.
        names = ir_value_names(gm)
        quantizes = [n for n in gm.graph.nodes if n.target == QUANTIZE]
        self.assertEqual(sorted(names[n.name] for n in quantizes), sorted(quantized_from))
        for n in quantizes:
            self.assertEqual(names[n.name], names[n.args[0].name] + "_q")
        convolutions = [n["outputs"][0] for n in nodes if n["op"] == "aten.convolution"]
        self.assertEqual(convolutions, [n.name for n in gm.graph.nodes
                                        if n.target == torch.ops.aten.conv2d.default])

    def test_mul_and_average_pools(self):
        """Squeeze-excite's mul (the scale first), mul by a number and by a one-element buffer,
        every avg_pool2d argument, adaptive pooling to 3x2 and a mean over H and W."""
        torch.manual_seed(0)
        graph, _ = self.export_and_check("mul_pool", MulPoolNet(), expect_ops=[
            "aten.mul.Tensor", "aten.mul.Scalar", "aten.avg_pool2d", "aten.adaptive_avg_pool2d",
            "aten.mean.dim"])
        pools = [n["args"] for n in graph["nodes"] if n["op"] == "aten.avg_pool2d"]
        self.assertEqual(pools, [
            {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True,
             "count_include_pad": False},
            {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "ceil_mode": False,
             "count_include_pad": True, "divisor_override": 3}])
        scalars = [n["args"] for n in graph["nodes"] if n["op"] == "aten.mul.Scalar"]
        self.assertEqual(scalars, [{"other": 0.5}])
        muls = [n for n in graph["nodes"] if n["op"] == "aten.mul.Tensor"]
        self.assertEqual(len(muls), 2)  # the gate, and the buffer behind its dequantize

    def test_smooth_activations_and_softmax(self):
        """nn.SiLU as aten.silu, every softmax spelling as aten._softmax / aten._log_softmax with
        the dim and half_to_float = False, the activations' arguments by their ATen names (those
        the model gives)."""
        torch.manual_seed(0)
        graph, _ = self.export_and_check("smooth", SmoothNet(), expect_ops=[
            "aten.hardswish", "aten.hardsigmoid", "aten.silu", "aten.gelu", "aten.tanh",
            "aten.sigmoid", "aten.elu", "aten.leaky_relu", "aten._softmax", "aten._log_softmax"])
        args = {}
        for n in graph["nodes"]:
            args.setdefault(n["op"], []).append(n["args"])
        self.assertEqual(args["aten._softmax"], [{"dim": -1, "half_to_float": False}] * 2)
        self.assertEqual(args["aten._log_softmax"], [{"dim": -1, "half_to_float": False}])
        self.assertEqual(args["aten.gelu"], [{"approximate": "tanh"}, {}])
        self.assertEqual(args["aten.elu"], [{"alpha": 0.5}])
        self.assertEqual(args["aten.leaky_relu"], [{"negative_slope": 0.2}])
        self.assertEqual(args["aten.silu"], [{}])

    def test_cat_and_splits(self):
        """cat of 4 branches and of a chunk's pieces, splits by count and by sizes, narrow and
        x[:, 1:] / x[:, :, ::2] / x[..., 1:-1]: every split is split_with_sizes_copy with its
        pieces' sizes, its outputs the getitems' names; slicing is one slice_copy per sliced
        dim, "to the end" written as None."""
        torch.manual_seed(0)
        graph, _ = self.export_and_check("join_cut", JoinCutNet(), expect_ops=[
            "aten.cat", "aten.split_with_sizes_copy", "aten.slice_copy.Tensor"])
        nodes = graph["nodes"]
        cats = [len(n["inputs"]) for n in nodes if n["op"] == "aten.cat"]
        self.assertEqual(cats, [4, 2, 2])
        splits = [(n["args"], len(n["outputs"])) for n in nodes
                  if n["op"] == "aten.split_with_sizes_copy"]
        self.assertEqual(splits, [({"split_sizes": [4, 4], "dim": 1}, 2),
                                  ({"split_sizes": [5, 3], "dim": 1}, 2)])
        slices = [n["args"] for n in nodes if n["op"] == "aten.slice_copy.Tensor"]
        self.assertEqual(slices, [
            {"dim": 1, "start": 1, "end": 4, "step": 1},  # narrow(1, 1, 3)
            {"dim": 1, "start": 1, "end": None, "step": 1},  # q[:, 1:]
            {"dim": 2, "start": 0, "end": None, "step": 2},  # y[:, :, ::2]
            {"dim": 3, "start": 1, "end": -1, "step": 1}])  # [..., 1:-1]

    def test_permutes_and_channel_shuffle(self):
        """ShuffleNet's channel shuffle (5-D view, transpose, contiguous, view), permute given as
        one list or as separate dims, Tensor.transpose and swapaxes: every permute is
        aten.permute_copy with its dims as one list, every transpose aten.transpose_copy.int."""
        torch.manual_seed(0)
        graph, _ = self.export_and_check("permutes", PermuteNet(), expect_ops=[
            "aten.permute_copy", "aten.transpose_copy.int"])
        nodes = graph["nodes"]
        moves = [(n["op"], n["args"]) for n in nodes
                 if n["op"] in ("aten.permute_copy", "aten.transpose_copy.int")]
        self.assertEqual(moves, [
            ("aten.transpose_copy.int", {"dim0": 1, "dim1": 2}),  # the shuffle
            ("aten.permute_copy", {"dims": [0, 2, 3, 1]}),  # y.permute(0, 2, 3, 1)
            ("aten.permute_copy", {"dims": [0, 3, 1, 2]}),  # torch.permute(y, (0, 3, 1, 2))
            ("aten.transpose_copy.int", {"dim0": 2, "dim1": 3}),  # y.transpose(2, 3)
            ("aten.transpose_copy.int", {"dim0": -1, "dim1": -2})])  # torch.swapaxes
        views = [n["args"]["size"] for n in nodes if n["op"] == "aten.view_copy"]
        self.assertEqual(views[:2], [[1, 2, 4, 32, 32], [1, 8, 32, 32]])

    def test_tiny_unet_transposed(self):
        """ConvTranspose2d as aten.convolution(transposed=True) with PyTorch's weight
        [C_in, C_out, KH, KW] quantized per tensor (VkdQuantizer's choice for transposed
        weights), the bilinear nn.Upsample as upsample_bilinear2d.vec with its scale factors,
        sharing its input's scale and zero point."""
        torch.manual_seed(0)
        graph, _ = self.export_and_check("tiny_unet_transposed", tiny_unet_transposed(),
                                         expect_ops=["aten.convolution", "aten.cat",
                                                     "aten.upsample_bilinear2d.vec",
                                                     "aten.max_pool2d"])
        nodes, values = graph["nodes"], graph["values"]
        (deconv,) = [n for n in nodes if n["op"] == "aten.convolution" and n["args"]["transposed"]]
        self.assertEqual(deconv["args"], {"stride": [2, 2], "padding": [1, 1], "dilation": [1, 1],
                                          "transposed": True, "output_padding": [1, 1],
                                          "groups": 1})
        self.assertEqual(values[deconv["inputs"][1]]["shape"], [32, 16, 3, 3])
        producer = {o: n for n in nodes for o in n["outputs"]}
        weight_dq = producer[deconv["inputs"][1]]
        self.assertEqual(weight_dq["op"], "quantized_decomposed.dequantize_per_tensor")
        (up,) = [n for n in nodes if n["op"] == "aten.upsample_bilinear2d.vec"]
        self.assertEqual(up["args"], {"output_size": None, "align_corners": False,
                                      "scale_factors": [2.0, 2.0]})
        dq = producer[up["inputs"][0]]
        (q,) = [n for n in nodes if up["outputs"][0] in n["inputs"]]
        self.assertEqual(q["op"], "quantized_decomposed.quantize_per_tensor")
        self.assertEqual((dq["args"]["scale"], dq["args"]["zero_point"]),
                         (q["args"]["scale"], q["args"]["zero_point"]))

    def test_interpolate_forms(self):
        """F.interpolate by size and by scale, align_corners, recompute_scale_factor (the
        computed size, no scales) and the nn.Upsample subclasses, each as the .vec op with
        F.interpolate's arguments."""
        torch.manual_seed(0)
        graph, _ = self.export_and_check("interpolate", InterpolateNet(), expect_ops=[
            "aten.upsample_nearest2d.vec", "aten.upsample_bilinear2d.vec"])
        ups = [(n["op"].split(".")[1][9:], n["args"]) for n in graph["nodes"]
               if n["op"].startswith("aten.upsample")]
        self.assertEqual(ups, [
            ("bilinear2d", {"output_size": [13, 11], "align_corners": True,
                            "scale_factors": None}),
            ("nearest2d", {"output_size": None, "scale_factors": [3.0, 3.0]}),
            ("nearest2d", {"output_size": [19, 19], "scale_factors": None}),
            ("bilinear2d", {"output_size": None, "align_corners": True,
                            "scale_factors": [2.0, 2.0]}),
            ("nearest2d", {"output_size": None, "scale_factors": [2.0, 1.5]})])
        # A mode the backend has no op for stays generic: ATen's op, its arguments by name.
        x = random_inputs(1, 1, (1, 3, 8, 8))[0]
        gm = quantize(BicubicNet(), (x,), [x], observer="minmax").converted
        graph, _ = to_graph_ir(gm, (x,), "bicubic")
        (bicubic,) = [n for n in graph["nodes"] if "bicubic" in n["op"]]
        self.assertEqual(bicubic["op"], "aten.upsample_bicubic2d.vec")
        self.assertEqual(bicubic["args"], {"output_size": None, "align_corners": False,
                                           "scale_factors": [2.0, 2.0]})

    def test_architecture_patterns(self):
        """The small classifiers of examples_models.PATTERN_MODELS: a standalone BatchNorm2d
        (after a cat, starting a block) as aten.batch_norm with its parameters as [C]
        constants, a channel shuffle through contiguous() as view -> transpose -> clone -> view,
        every dropout call as a clone (stochastic depth is no op at all in eval: torchvision
        returns its input), a flatten."""
        expect = {
            "densenet_block": ["aten.batch_norm", "aten.cat", "aten.avg_pool2d"],
            "preact_resnet": ["aten.batch_norm", "aten.add.Tensor"],
            "shufflenet_contiguous": ["aten.view_copy", "aten.transpose_copy.int", "aten.clone",
                                      "aten.split_with_sizes_copy", "aten.cat"],
            "stochastic_depth": ["aten.clone", "aten.add.Tensor", "aten.view_copy"],
        }
        for name, ops in expect.items():
            torch.manual_seed(0)
            graph, _ = self.export_and_check(name, architecture_pattern(name, SHAPE[-1]),
                                             expect_ops=ops)
            values = graph["values"]
            for n in graph["nodes"]:
                if n["op"] != "aten.batch_norm":
                    continue
                self.assertEqual(n["args"], {"training": False, "momentum": 0.1, "eps": 1e-5,
                                             "cudnn_enabled": True})
                channels = values[n["inputs"][0]]["shape"][1]
                for v in n["inputs"][1:]:
                    self.assertEqual(values[v]["shape"], [channels], v)
                    self.assertIn("data", values[v], v)
            if name == "stochastic_depth":  # 3 dropout calls, nn.Dropout
                self.assertEqual(sum(n["op"] == "aten.clone" for n in graph["nodes"]), 4)

    def test_training_mode_is_refused(self):
        """A batch norm or a dropout that would train is an error naming the node: the graph IR
        holds eval-mode models only. (quantize() exports in eval mode: a batch norm trains only
        in a graph a user exported in training mode.)"""
        class Net(torch.nn.Module):
            def __init__(self, dropout_training):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 4, 3)
                self.bn = torch.nn.BatchNorm2d(4)
                self.dropout_training = dropout_training

            def forward(self, x):
                y = torch.nn.functional.dropout(self.conv(x), 0.3, self.dropout_training)
                return self.bn(torch.cat([y, y], 2))

        x = random_inputs(1, 1, (1, 3, 8, 8))[0]
        torch.manual_seed(0)
        gm = quantize(Net(True).eval(), (x,), [x], observer="minmax").converted
        with self.assertRaisesRegex(ExportError, r"node 'dropout' .*dropout in training mode"):
            to_graph_ir(gm, (x,), "net")
        trained = torch.export.export(Net(False).train(), (x,)).module()
        prepared = prepare_pt2e(trained, VkdQuantizer(observer="minmax"))
        prepared(x)
        with self.assertRaisesRegex(ExportError, r"node 'batch_norm' .*batch norm in training"):
            to_graph_ir(convert_ptq(prepared), (x,), "net")

    def test_per_tensor_weights(self):
        torch.manual_seed(0)
        graph, _ = self.export_and_check("tiny_unet_per_tensor", tiny_unet(), per_channel=False)
        ops = {n["op"] for n in graph["nodes"]}
        self.assertNotIn("quantized_decomposed.dequantize_per_channel", ops)

    def test_each_consumer_has_its_own_dequantize(self):
        torch.manual_seed(0)
        x = random_inputs(1, 1, (1, 3, 16, 16))[0]
        gm = quantize(tiny_unet(), (x,), [x], observer="minmax").converted
        graph, _ = to_graph_ir(gm, (x,), "tiny_unet")
        readers = {}
        for node in graph["nodes"]:
            for name in node["inputs"]:
                readers[name] = readers.get(name, 0) + 1
        dequantizes = [n for n in graph["nodes"]
                       if n["op"] == "quantized_decomposed.dequantize_per_tensor"]
        self.assertGreater(len(dequantizes), len({n["inputs"][0] for n in dequantizes}))
        for node in dequantizes:
            self.assertLessEqual(readers.get(node["outputs"][0], 0), 1)


class PermuteNet(torch.nn.Module):
    """A channel shuffle (groups 2) between convs, then permutes and transposes of every
    spelling."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = torch.relu(self.a(x))
        n, c, h, w = y.size()
        y = torch.transpose(y.view(n, 2, c // 2, h, w), 1, 2).contiguous().view(n, -1, h, w)
        y = self.b(y)
        y = torch.permute(y.permute(0, 2, 3, 1), (0, 3, 1, 2))
        return torch.swapaxes(y.transpose(2, 3), -1, -2)


class InterpolateNet(torch.nn.Module):
    """Every F.interpolate / nn.Upsample form the exporter maps to ATen's upsample ops."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.recomputed = torch.nn.Upsample(scale_factor=1.5, recompute_scale_factor=True)
        self.bilinear = torch.nn.UpsamplingBilinear2d(scale_factor=2)  # align_corners=True
        self.nearest = torch.nn.Upsample(scale_factor=(2, 1.5))
        self.out = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        F = torch.nn.functional
        x = self.conv(x)
        a = F.interpolate(x, size=(13, 11), mode="bilinear", align_corners=True)
        b = F.interpolate(a, scale_factor=3)  # 39x33
        c = self.recomputed(F.adaptive_avg_pool2d(b, 13))  # floor(13 * 1.5) = 19
        d = self.bilinear(c)
        return self.out(self.nearest(d))


class BicubicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return torch.nn.functional.interpolate(self.conv(x), scale_factor=2, mode="bicubic")


class JoinCutNet(torch.nn.Module):
    """googlenet's 4-branch channel cat (odd channel counts), shufflenet's chunk / cat, a
    split by sizes, narrow and basic slicing."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 10, 3, padding=1)
        self.branches = torch.nn.ModuleList(torch.nn.Conv2d(10, c, 1) for c in (3, 5, 2, 7))
        self.mix = torch.nn.Conv2d(17, 8, 1)
        self.side = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.out = torch.nn.Conv2d(5, 6, 1)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = self.mix(torch.cat([b(x) for b in self.branches], dim=1))
        a, b = x.chunk(2, dim=1)
        x = torch.cat((a, self.side(b)), 1)
        p, q = torch.split(x, [5, 3], dim=1)
        y = torch.cat([p.narrow(1, 1, 3), q[:, 1:]], 1)
        return self.out(y[:, :, ::2][..., 1:-1])


class SmoothNet(torch.nn.Module):
    """MobileNetV3's hardswish and squeeze-excite hardsigmoid, then every other smooth
    activation and softmax spelling the exporter maps (modules and functions)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.act = torch.nn.Hardswish()
        self.fc = torch.nn.Conv2d(8, 8, 1)
        self.gate = torch.nn.Hardsigmoid()
        self.mid = torch.nn.Conv2d(8, 8, 1)
        self.silu = torch.nn.SiLU()
        self.softmax = torch.nn.Softmax(dim=-1)
        self.out = torch.nn.Conv2d(8, 6, 1)

    def forward(self, x):
        F = torch.nn.functional
        x = self.act(self.conv(x))
        x = x * self.gate(self.fc(F.adaptive_avg_pool2d(x, 1)))
        x = self.silu(self.mid(x))
        x = torch.tanh(F.gelu(x, approximate="tanh")) + torch.sigmoid(F.gelu(x))
        x = F.elu(x, 0.5) + F.leaky_relu(x, 0.2)
        x = self.softmax(x) + F.log_softmax(x, dim=-1) + x.softmax(-1)
        return self.out(x)


class MulPoolNet(torch.nn.Module):
    """A squeeze-excite gate, scalar multiplications and every average pool the exporter
    handles."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Conv2d(8, 8, 1)
        self.pool = torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                       count_include_pad=False)
        self.out = torch.nn.Conv2d(8, 8, 1)
        self.register_buffer("k", torch.tensor([0.75]))

    def forward(self, x):
        x = torch.relu(self.conv(x))
        gate = torch.nn.functional.hardtanh(self.fc(torch.nn.functional.adaptive_avg_pool2d(x, 1)),
                                            0.0, 1.0)
        y = gate * x * 0.5
        y = self.pool(y * self.k)
        y = torch.nn.functional.avg_pool2d(y, 2, divisor_override=3)
        y = torch.nn.functional.adaptive_avg_pool2d(self.out(y), (3, 2))
        return y.mean([2, 3])


class Int8MappingTest(unittest.TestCase):
    def test_uint8_maps_to_int8_exactly(self):
        """A PT2E uint8 quantize (a quantizer with unsigned activations) minus 128 equals the
        IR's int8 quantize with the shifted zero point and range (graph IR rounding: half to
        even)."""
        from vkdelegate.export.walk import int8_qargs
        gen = torch.Generator().manual_seed(3)
        x = torch.randn(10000, generator=gen) * 4
        x[:4] = torch.tensor([0.5, 1.5, -0.5, -2.5]) * 0.0625  # exact ties at scale 1/16
        for scale, zp in [(0.0625, 128), (0.031372549, 17), (0.1, 250)]:
            scale32 = float(np.float32(scale))
            ref = torch.ops.quantized_decomposed.quantize_per_tensor(
                x, scale32, zp, 0, 255, torch.uint8).numpy()
            args = int8_qargs(scale32, zp, torch.uint8, 0, 255)
            self.assertEqual((args["zero_point"], args["quant_min"], args["quant_max"]),
                             (zp - 128, -128, 127))
            got = ref_quantize(x.numpy(), args)
            np.testing.assert_array_equal(got.astype(np.int32), ref.astype(np.int32) - 128)


def run_cli(*argv):
    """cli.main in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


def fake_vkd(directory, status):
    """A stand-in for the vkd binary: prints a report (or an error) and exits with `status`,
    so the CLI's handling is tested whatever the compiler supports today."""
    path = os.path.join(directory, f"vkd_{status}")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                'if [ "$1" != compile ] || [ "$3" != --weights ] || [ "$7" != --report ]; then\n'
                "  echo bad arguments >&2; exit 9; fi\n"
                f"if [ {status} -eq 0 ]; then echo 'fused 1 pattern'; : > \"$6\"; exit 0; fi\n"
                f"echo 'vkd compile: node 3 (aten.hardtanh): not supported' >&2; exit {status}\n")
    os.chmod(path, 0o755)
    return path


class CliTest(unittest.TestCase):
    MODEL = "vkdelegate.examples_models:tiny_unet"
    SMALL = ("--input-shape", "1,3,32,32", "--calibration", "random:2", "--observer", "minmax")

    def test_module_run_writes_everything(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
            done = subprocess.run(
                [sys.executable, "-m", "vkdelegate.export", "--model", self.MODEL, *self.SMALL,
                 "--model-arg", "width=8", "-o", d, "--name", "unet",
                 "--compile", fake_vkd(d, 0)], capture_output=True, text=True, env=env)
            self.assertEqual(done.returncode, 0, done.stderr)
            for step in ("build model", "torch.export", "prepare_pt2e", "calibrate",
                         "convert_pt2e", "graph IR", "vkd compile"):
                self.assertRegex(done.stdout, rf"{step} +\d+\.\d\d s")
            for suffix in (".json", ".safetensors", ".calibration.json", ".input.npy", ".vkd"):
                self.assertTrue(os.path.exists(os.path.join(d, "unet" + suffix)), suffix)
            with open(os.path.join(d, "unet.report.txt")) as f:
                self.assertIn("fused 1 pattern", f.read())
            self.assertEqual(np.load(os.path.join(d, "unet.input.npy")).shape, (1, 3, 32, 32))
            with open(os.path.join(d, "unet.calibration.json")) as f:
                calibration = json.load(f)
            x = next(a for a in calibration["activations"] if a["value"] == "x")
            self.assertLessEqual(x["min"], 0)
            self.assertEqual((x["dtype"], x["int8_zero_point"]), ("int8", x["zero_point"]))
            self.assertEqual(x["quantized_as"], ["x_q"])

    def test_existing_outputs_need_force(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(run_cli("--model", self.MODEL, *self.SMALL, "-o", d)[0], 0)
            status, _, err = run_cli("--model", self.MODEL, *self.SMALL, "-o", d)
            self.assertEqual(status, 2)
            self.assertIn("would overwrite", err)
            self.assertIn("--force", err)
            status, _, _ = run_cli("--model", self.MODEL, *self.SMALL, "-o", d, "--force")
            self.assertEqual(status, 0)

    def test_compile_failure_keeps_the_graph(self):
        with tempfile.TemporaryDirectory() as d:
            status, _, err = run_cli("--model", self.MODEL, *self.SMALL, "-o", d,
                                     "--compile", fake_vkd(d, 2))
            self.assertEqual(status, 1)
            self.assertIn("aten.hardtanh): not supported", err)
            self.assertTrue(os.path.exists(os.path.join(d, "tiny_unet.json")))

    def test_calibration_directory(self):
        with tempfile.TemporaryDirectory() as d:
            cal = os.path.join(d, "cal")
            os.mkdir(cal)
            for i, x in enumerate(random_inputs(2, 5, (1, 3, 16, 16))):
                np.save(os.path.join(cal, f"{i}.npy"), x.numpy())
            status, out, err = run_cli("--model", self.MODEL, "--calibration", cal,
                                       "--observer", "minmax", "-o", os.path.join(d, "out"))
            self.assertEqual(status, 0, err)
            self.assertIn("2 sample(s)", out)
            with open(os.path.join(d, "out", "tiny_unet.json")) as f:
                self.assertEqual(json.load(f)["values"]["x"]["shape"], [1, 3, 16, 16])

    def test_model_from_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "my_model.py")
            with open(path, "w") as f:
                f.write("import torch\n"
                        "def make():\n"
                        "    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3),\n"
                        "                               torch.nn.ReLU6())\n")
            status, _, err = run_cli("--model", f"{path}:make", *self.SMALL, "-o", d)
            self.assertEqual(status, 0, err)
            self.assertTrue(os.path.exists(os.path.join(d, "make.json")))


def vkd_binary(test):
    """The vkd binary CTest passes (VKD); a test needing it is skipped, loudly, without."""
    vkd = os.environ.get("VKD")
    if not vkd:
        test.skipTest("no vkd binary: CTest passes VKD=<the built vkd>")
    return vkd


def write_graph(directory, name, graph, tensors, x):
    """NAME.json, NAME.safetensors and NAME.input.npy in `directory`: their paths."""
    paths = [os.path.join(directory, name + s) for s in (".json", ".safetensors", ".input.npy")]
    with open(paths[0], "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(paths[1], tensors)
    np.save(paths[2], x.numpy())
    return paths


class XnnpackNet(torch.nn.Module):
    """Ops ExecuTorch's XNNPACKQuantizer annotates (convs, relu, mul, mean, linear), ops it
    leaves alone between quantized ones (pixel shuffle, the eval-mode dropout, sigmoid: int8
    in, int8 out) and the softmax at the end, which stays float (int8 in, float out)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        F = torch.nn.functional
        y = F.dropout(F.pixel_shuffle(self.a(x), 2), 0.1, self.training)
        y = torch.relu(self.b(y))
        y = torch.sigmoid(y) * y
        return torch.softmax(self.fc(y.mean((2, 3))), -1)


class ForeignQuantizerTest(unittest.TestCase):
    """A model quantized with another PT2E quantizer, ExecuTorch's XNNPACKQuantizer (symmetric
    static config, per-channel weights), run by the user: to_graph_ir -> `vkd compile` -> `vkd
    run --check` (every tensor of the device run equal to the compiler's CPU reference on the
    graph IR) agrees with PyTorch's int8 model, and float_nodes names the op it left float."""

    def test_xnnpack_quantizer(self):
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer, get_symmetric_quantization_config)
        torch.manual_seed(0)
        x = random_inputs(1, 1, (1, 3, 16, 16))[0]
        captured = torch.export.export(XnnpackNet().eval(), (x,)).module()
        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True))
        prepared = prepare_pt2e(captured, quantizer)
        for sample in random_inputs(2, 2, (1, 3, 16, 16)):
            prepared(sample)
        converted = convert_ptq(prepared)
        self.assertEqual(float_nodes(converted), [("softmax", "aten.softmax.int")])
        graph, tensors = to_graph_ir(converted, (x,), "xnnpack")
        with tempfile.TemporaryDirectory() as d:
            graph, weights = write_and_read(graph, tensors, d, "xnnpack")
        ModelExportTest.check_structure(self, graph, weights)
        with torch.no_grad():
            expected = converted(x).numpy()
        (got,) = interpret(graph, weights, {"x": x.numpy()})
        self.assertGreaterEqual(cosine(got, expected), 0.999)

        vkd = vkd_binary(self)
        with tempfile.TemporaryDirectory() as d:
            graph_path, weights_path, x_path = write_graph(d, "m", graph, tensors, x)
            blob = os.path.join(d, "m.vkd")
            done = subprocess.run([vkd, "compile", graph_path, "--weights", weights_path,
                                   "-o", blob], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            run = subprocess.run([vkd, "run", blob, "--input", f"x={x_path}", "--output-dir",
                                  os.path.join(d, "run"), "--check", graph_path, "--weights",
                                  weights_path], capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("check: every compared tensor matches the reference", run.stdout)
            device = np.load(os.path.join(d, "run", "output.npy"))
        self.assertGreaterEqual(cosine(device, expected), 0.999)


class ExportedProgramTest(unittest.TestCase):
    def test_exported_program_of_the_converted_model(self):
        """to_graph_ir takes the ExportedProgram of a converted model (torch.export.export of
        it, as ExecuTorch's flow does before to_edge) as well as the model: the same ops, and
        each graph computes PyTorch's int8 result."""
        torch.manual_seed(0)
        x = random_inputs(1, 1, (1, 3, 16, 16))[0]
        converted = quantize(tiny_unet(), (x,), [x], observer="minmax").converted
        program = torch.export.export(converted, (x,))
        self.assertIsInstance(program, torch.export.ExportedProgram)
        with torch.no_grad():
            expected = converted(x).numpy()
        graphs = []
        with tempfile.TemporaryDirectory() as d:
            for name, source in (("module", converted), ("program", program)):
                graph, tensors = to_graph_ir(source, (x,), name)
                graph, weights = write_and_read(graph, tensors, d, name)
                ModelExportTest.check_structure(self, graph, weights)
                (got,) = interpret(graph, weights, {graph["inputs"][0]: x.numpy()})
                self.assertGreaterEqual(cosine(got, expected), 0.9999, name)
                graphs.append(graph)
        self.assertEqual(*[[n["op"] for n in g["nodes"]] for g in graphs])
        with self.assertRaisesRegex(ExportError, "takes a converted PT2E GraphModule or an "
                                                 "ExportedProgram, not Sequential"):
            to_graph_ir(torch.nn.Sequential(), (x,))


class UnknownOpTest(unittest.TestCase):
    """An op neither the walk nor the compiler knows (a custom op registered with torch.library,
    cli_models.custom_op) is kept by its name with its arguments by their schema names, for
    `vkd compile --partition` to place; what the compiler cannot place is its one clear
    refusal, never a traceback."""

    def test_custom_op_is_kept_by_name(self):
        torch.manual_seed(0)
        x = random_inputs(1, 1, (1, 3, 8, 8))[0]
        converted = quantize(cli_models.custom_op(), (x,), [x], observer="minmax").converted
        graph, tensors = to_graph_ir(converted, (x,), "custom")
        (node,) = [n for n in graph["nodes"] if n["op"] == "vkd_test.shift"]
        self.assertEqual(node["args"], {"amount": 0.5})
        producer = {o: n["op"] for n in graph["nodes"] for o in n["outputs"]}
        self.assertEqual(producer[node["inputs"][0]], "quantized_decomposed.dequantize_per_tensor")
        self.assertEqual(graph["values"][node["outputs"][0]], {"dtype": "float32",
                                                               "shape": [1, 8, 8, 8]})

        vkd = vkd_binary(self)
        with tempfile.TemporaryDirectory() as d:
            status, _, err = run_cli("--model", f"{cli_models.__file__}:custom_op",
                                     "--input-shape", "1,3,8,8", "--calibration", "random:1",
                                     "--observer", "minmax", "-o", d, "--compile", vkd)
            self.assertEqual(status, 1, err)
            self.assertNotIn("Traceback", err)
            self.assertIn("(vkd_test.shift): not supported by the backend", err)
            graph_path = os.path.join(d, "custom_op.json")
            part = subprocess.run(
                [vkd, "compile", graph_path, "--weights", os.path.join(d, "custom_op.safetensors"),
                 "--partition", "-o", os.path.join(d, "p.vkd")], capture_output=True, text=True)
            self.assertEqual(part.returncode, 2, part.stdout + part.stderr)
            self.assertIn("the host cannot run it: the CPU reference interpreter has no function "
                          "for 'vkd_test.shift'", part.stderr)
            self.assertNotIn("Traceback", part.stderr)


if __name__ == "__main__":
    unittest.main()
