#!/usr/bin/env python3
"""Writes the refinenet_lite example model: graph IR, weights and an input image.

A RefineNet-style int8 segmentation network for a 1x3x256x144 image (NCHW, H = 256, W = 144):
quantize -> stem conv 3x3 s2 -> four inverted-residual blocks -> four upsampling stages
(conv -> pixel_shuffle(2) [+ skip]) -> 1x1 head conv -> dequantize to float logits (8 classes).
The layout of the graph and the quantization rules: examples/refinenet_lite/LAYOUT.md.

Everything is deterministic: weights come from a seeded numpy generator, activation ranges from
min/max observers over calibration images generated from other seeds, run through the float
model in torch (float32, CPU). Every scale is a power of two (weights per output channel,
symmetric [-127, 127]; activations per tensor, affine [-128, 127]) and each bias a multiple of its
input scale x weight scale, so the reference interpreter's float32 arithmetic is exact and equals
the int8 kernels' int32 arithmetic bit for bit (vkd run --check compares int8 tensors exactly).

Writes into OUT_DIR (created if missing; an existing file of the same name stops the script with
exit status 2 unless --force is given):
  refinenet_lite.json         the graph IR (compiler/README.md), decomposed q/dq form
  refinenet_lite.safetensors  int8 weights, float32 per-channel weight scales and biases
  image.npy                   the input image x, float32 [1, 3, 256, 144]

Usage: make_model.py [OUT_DIR] [--force]   (OUT_DIR defaults to build/examples/refinenet_lite
                                            under the repository root)
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

H, W = 256, 144
CLASSES = 8
HEAD_CH = 24        # channels of every feature map the head sees (skips, upsampled maps)
EXPAND = 4          # inverted-residual expansion: 24 -> 96 -> 24
WEIGHT_SEED = 7
IMAGE_SEED = 0                 # the example's input image
CALIB_SEEDS = (101, 102, 103, 104, 105, 106)  # calibration images (not the input image)
QMIN, QMAX = -128, 127         # activations
WQMAX = 127                    # weights: symmetric [-127, 127]
BIAS_LIMIT = 1 << 20           # |bias / (input scale x weight scale)|: keeps float32 sums exact

NAMES = ("refinenet_lite.json", "refinenet_lite.safetensors", "image.npy")


# ---- the float model -------------------------------------------------------------------------

class Conv:
    """One convolution of the model: float weights and how it is applied."""

    def __init__(self, name, cin, cout, k, stride=1, groups=1, act="none"):
        self.name, self.cin, self.cout, self.k = name, cin, cout, k
        self.stride, self.groups, self.act = stride, groups, act
        self.padding = k // 2

    def init(self, rng):
        fan_in = self.cin // self.groups * self.k * self.k
        # He initialisation keeps activation ranges roughly constant through the depth.
        std = math.sqrt(2.0 / fan_in)
        shape = (self.cout, self.cin // self.groups, self.k, self.k)
        self.weight = (rng.standard_normal(shape) * std).astype(np.float32)
        self.bias = (rng.standard_normal(self.cout) * 0.1).astype(np.float32)


def build_layers():
    """The model as a list of steps (see LAYOUT.md); convs are Conv objects."""
    c, e = HEAD_CH, HEAD_CH * EXPAND
    steps = [("conv", Conv("stem", 3, c, 3, stride=2, act="relu6"), "x", "stem")]

    def block(name, src, stride, residual):
        steps.append(("conv", Conv(name + "_expand", c, e, 1, act="relu6"), src, name + "_e"))
        steps.append(("conv", Conv(name + "_dw", e, e, 3, stride=stride, groups=e, act="relu6"),
                      name + "_e", name + "_d"))
        out = name + "_p" if residual else name
        steps.append(("conv", Conv(name + "_project", e, c, 1), name + "_d", out))
        if residual:
            steps.append(("add", None, (out, src), name))

    block("skip1", "stem", 1, True)     # 128x72
    block("skip2", "skip1", 2, False)   # 64x36
    block("skip3", "skip2", 2, False)   # 32x18
    block("bottom", "skip3", 2, False)  # 16x9
    src = "bottom"
    for i, (k, skip) in enumerate([(3, "skip3"), (3, "skip2"), (1, "skip1"), (1, None)], 1):
        name = f"up{i}"
        steps.append(("conv", Conv(name + "_conv", c, 4 * c, k, act="relu"), src, name + "_c"))
        shuffled = name + "_ps" if skip else name
        steps.append(("pixel_shuffle", None, name + "_c", shuffled))
        if skip:
            steps.append(("add", None, (shuffled, skip), name))
        src = name
    steps.append(("conv", Conv("head", c, CLASSES, 1), src, "logits_q"))
    return steps


def run_float(steps, x):
    """The float model in torch; returns every named activation (torch tensors)."""
    t = {"x": x}
    for kind, conv, src, dst in steps:
        if kind == "conv":
            y = F.conv2d(t[src], torch.from_numpy(conv.weight), torch.from_numpy(conv.bias),
                         stride=conv.stride, padding=conv.padding, groups=conv.groups)
            if conv.act == "relu6":
                y = F.hardtanh(y, 0.0, 6.0)
            elif conv.act == "relu":
                y = F.relu(y)
        elif kind == "pixel_shuffle":
            y = F.pixel_shuffle(t[src], 2)
        else:
            y = t[src[0]] + t[src[1]]
        t[dst] = y
    return t


# ---- inputs ----------------------------------------------------------------------------------

def make_image(seed):
    """A synthetic 'street scene' in [0, 1]: a sky/ground gradient, coloured rectangles and
    discs, a little noise; then normalised as a segmentation model's input would be."""
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.linspace(0, 1, H, dtype=np.float32),
                         np.linspace(0, 1, W, dtype=np.float32), indexing="ij")
    img = np.empty((3, H, W), np.float32)
    horizon = rng.uniform(0.3, 0.6)
    for ch in range(3):
        sky, ground = rng.uniform(0.4, 1.0), rng.uniform(0.0, 0.5)
        img[ch] = np.where(yy < horizon, sky * (1 - 0.5 * yy), ground + 0.2 * xx)
    for _ in range(int(rng.integers(4, 9))):
        y0, x0 = rng.uniform(0, 0.9), rng.uniform(0, 0.9)
        h, w = rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4)
        inside = (yy >= y0) & (yy < y0 + h) & (xx >= x0) & (xx < x0 + w)
        if rng.uniform() < 0.5:  # a disc instead of a rectangle
            inside = (yy - y0) ** 2 + (xx - x0) ** 2 < (0.5 * h) ** 2
        img[:, inside] = rng.uniform(0, 1, size=(3, 1))
    img += rng.normal(0, 0.03, size=img.shape).astype(np.float32)
    img = np.clip(img, 0, 1)
    return ((img - 0.45) / 0.25).astype(np.float32)[None]


# ---- quantization ----------------------------------------------------------------------------

def pow2_at_least(v):
    """The smallest power of two >= v (v > 0)."""
    return float(2.0 ** math.ceil(math.log2(v)))


def activation_qparams(lo, hi):
    """Per-tensor affine int8 parameters with a power-of-two scale covering [lo, hi] (0 in the
    range): 254 steps for the range, so rounding cannot push the maximum past 127."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = pow2_at_least(max(hi - lo, 1e-6) / (QMAX - QMIN - 1))
    zp = int(min(max(QMIN - round(lo / scale), QMIN), QMAX))
    return scale, zp


def quantize_conv(conv, in_scale):
    """Per-output-channel symmetric int8 weights (power-of-two scales) and a bias that is a
    multiple of in_scale x weight_scale (what an int32 bias would hold)."""
    w = conv.weight.reshape(conv.cout, -1)
    amax = np.maximum(np.abs(w).max(axis=1), 1e-8)
    scales = np.array([pow2_at_least(a / WQMAX) for a in amax], np.float32)
    q = np.clip(np.rint(w / scales[:, None]), -WQMAX, WQMAX).astype(np.int8)
    step = (in_scale * scales).astype(np.float32)
    bias_int = np.clip(np.rint(conv.bias / step), -BIAS_LIMIT, BIAS_LIMIT)
    bias = (bias_int * step).astype(np.float32)
    return q.reshape(conv.weight.shape), scales, bias


def fake_quant(t, scale, zp):
    q = torch.clamp(torch.round(t / scale) + zp, QMIN, QMAX)
    saturated = ((q == QMIN) & (t / scale + zp < QMIN - 0.5)) | \
                ((q == QMAX) & (t / scale + zp > QMAX + 0.5))
    return (q - zp) * scale, int(saturated.sum())


def run_quantized(steps, qparams, qweights, x):
    """The int8 model simulated in float64 (quantize -> op -> quantize at every tensor), for the
    saturation report; the exact reference is the interpreter behind `vkd run --check`."""
    t, saturated = {}, {}
    t["x"], saturated["x"] = fake_quant(x.double(), *qparams["x"])
    for kind, conv, src, dst in steps:
        if kind == "conv":
            qw, ws, b = qweights[conv.name]
            w = torch.from_numpy(qw.astype(np.float64) * ws.astype(np.float64)[:, None, None, None])
            y = F.conv2d(t[src], w, torch.from_numpy(b.astype(np.float64)),
                         stride=conv.stride, padding=conv.padding, groups=conv.groups)
            y = F.hardtanh(y, 0.0, 6.0) if conv.act == "relu6" else F.relu(y) if conv.act == "relu" else y
        elif kind == "pixel_shuffle":
            y = F.pixel_shuffle(t[src], 2)
        else:
            y = t[src[0]] + t[src[1]]
        t[dst], saturated[dst] = fake_quant(y, *qparams[dst])
    return t, saturated


# ---- graph IR --------------------------------------------------------------------------------

class GraphWriter:
    def __init__(self, qparams):
        self.qparams = qparams
        self.values = {"x": {"dtype": "float32", "shape": [1, 3, H, W]}}
        self.nodes = []
        self.dq_count = {}

    @staticmethod
    def qargs(scale, zp):
        return {"scale": scale, "zero_point": zp, "quant_min": QMIN, "quant_max": QMAX,
                "dtype": "int8"}

    def node(self, op, inputs, args, outputs):
        self.nodes.append({"op": op, "inputs": inputs, "args": args, "outputs": outputs})

    def dq(self, name):
        """A dequantize of int8 tensor `name` for one consumer (the fusion patterns want one
        dequantize per consumer); returns the float value's name."""
        k = self.dq_count.get(name, 0) + 1
        self.dq_count[name] = k
        out = f"{name}_dq{k}"
        self.node("quantized_decomposed.dequantize_per_tensor", [name],
                  self.qargs(*self.qparams[name]), [out])
        return out

    def q(self, src, name):
        self.node("quantized_decomposed.quantize_per_tensor", [src],
                  self.qargs(*self.qparams[name]), [name])

    def conv(self, conv, src, dst):
        n = conv.name
        self.values[f"{n}_w"] = {"dtype": "int8", "shape": list(conv.weight.shape), "data": f"{n}.weight"}
        self.values[f"{n}_ws"] = {"dtype": "float32", "shape": [conv.cout], "data": f"{n}.weight_scale"}
        self.values[f"{n}_b"] = {"dtype": "float32", "shape": [conv.cout], "data": f"{n}.bias"}
        xf = self.dq(src)
        self.node("quantized_decomposed.dequantize_per_channel", [f"{n}_w", f"{n}_ws"],
                  {"axis": 0, "quant_min": -WQMAX, "quant_max": WQMAX, "dtype": "int8"}, [f"{n}_wf"])
        p = conv.padding
        self.node("aten.convolution", [xf, f"{n}_wf", f"{n}_b"],
                  {"stride": [conv.stride] * 2, "padding": [p, p], "dilation": [1, 1],
                   "transposed": False, "output_padding": [0, 0], "groups": conv.groups},
                  [f"{n}_f"])
        y = f"{n}_f"
        if conv.act == "relu6":
            self.node("aten.hardtanh", [y], {"min_val": 0.0, "max_val": 6.0}, [f"{n}_act"])
            y = f"{n}_act"
        elif conv.act == "relu":
            self.node("aten.relu", [y], {}, [f"{n}_act"])
            y = f"{n}_act"
        self.q(y, dst)

    def to_json(self, outputs):
        # One node per line: readable and diffable.
        lines = ['{ "vkd_graph": 1,', '  "inputs": ["x"],',
                 f'  "outputs": {json.dumps(outputs)},', '  "values": {']
        vals = [f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in self.values.items()]
        lines.append(",\n".join(vals) + " },")
        lines.append('  "nodes": [')
        lines.append(",\n".join("    " + json.dumps(n) for n in self.nodes) + " ] }")
        return "\n".join(lines) + "\n"


def write_graph(steps, qparams):
    g = GraphWriter(qparams)
    g.q("x", "xq")
    # `xq` has the same parameters as the observed float input "x".
    for kind, conv, src, dst in steps:
        if kind == "conv":
            g.conv(conv, "xq" if src == "x" else src, dst)
        elif kind == "pixel_shuffle":
            xf = g.dq(src)
            g.node("aten.pixel_shuffle", [xf], {"upscale_factor": 2}, [dst + "_f"])
            g.q(dst + "_f", dst)
        else:
            a, b = g.dq(src[0]), g.dq(src[1])
            g.node("aten.add.Tensor", [a, b], {}, [dst + "_f"])
            g.q(dst + "_f", dst)
    g.node("quantized_decomposed.dequantize_per_tensor", ["logits_q"],
           g.qargs(*qparams["logits_q"]), ["logits"])
    return g.to_json(["logits"])


def safetensors_bytes(tensors):
    """tensors: list of (name, numpy array); F32 / I8 only."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int8): "I8"}[a.dtype]
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # 8-byte aligned data section
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


# ---- main ------------------------------------------------------------------------------------

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "..", "build", "examples", "refinenet_lite")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.normpath(default_out))
    ap.add_argument("--force", action="store_true", help="replace existing output files")
    args = ap.parse_args()

    paths = [os.path.join(args.out_dir, n) for n in NAMES]
    existing = [p for p in paths if os.path.exists(p)]
    if existing and not args.force:
        print("make_model.py: would overwrite " + ", ".join(existing) + " (use --force)",
              file=sys.stderr)
        return 2

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    steps = build_layers()
    rng = np.random.default_rng(WEIGHT_SEED)
    for kind, conv, _, _ in steps:
        if kind == "conv":
            conv.init(rng)

    # Calibration: min/max observers over the float model's activations.
    lo, hi = {}, {}
    with torch.no_grad():
        for seed in CALIB_SEEDS:
            for name, v in run_float(steps, torch.from_numpy(make_image(seed))).items():
                lo[name] = min(lo.get(name, math.inf), float(v.min()))
                hi[name] = max(hi.get(name, -math.inf), float(v.max()))
    qparams = {name: activation_qparams(lo[name], hi[name]) for name in lo}
    qparams["xq"] = qparams["x"]
    for kind, _, src, dst in steps:
        if kind == "pixel_shuffle":
            # A pixel shuffle only moves values: the same parameters on both sides make the
            # compiled q8ta_pixel_shuffle a pure byte shuffle.
            qparams[dst] = qparams[src]

    qweights, tensors = {}, []
    for kind, conv, src, _ in steps:
        if kind != "conv":
            continue
        qw, ws, b = quantize_conv(conv, qparams[src][0])
        qweights[conv.name] = (qw, ws, b)
        tensors += [(f"{conv.name}.weight", qw), (f"{conv.name}.weight_scale", ws),
                    (f"{conv.name}.bias", b)]

    image = make_image(IMAGE_SEED)
    with torch.no_grad():
        _, saturated = run_quantized(steps, qparams, qweights, torch.from_numpy(image))

    os.makedirs(args.out_dir, exist_ok=True)
    with open(paths[0], "w") as f:
        f.write(write_graph(steps, qparams))
    with open(paths[1], "wb") as f:
        f.write(safetensors_bytes(tensors))
    np.save(paths[2], image)

    convs = sum(1 for s in steps if s[0] == "conv")
    ops = len(steps) + 2  # + quantize, dequantize
    worst = max(saturated.items(), key=lambda kv: kv[1])
    print(f"refinenet_lite: {ops} quantized ops ({convs} conv, "
          f"{sum(1 for s in steps if s[0] == 'add')} add, "
          f"{sum(1 for s in steps if s[0] == 'pixel_shuffle')} pixel_shuffle, quantize, dequantize), "
          f"{sum(t[1].size for t in tensors if t[1].dtype == np.int8)} int8 weights")
    print(f"  calibrated on {len(CALIB_SEEDS)} generated images; on the input image "
          f"{sum(saturated.values())} activations saturate (most: {worst[1]} in '{worst[0]}')")
    for p in paths:
        print(f"  wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
