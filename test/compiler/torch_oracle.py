#!/usr/bin/env python3
"""Torch oracle for the CPU reference interpreter (compiler/Interpreter.h).

Computes conv2d / conv_transpose2d / linear / max_pool2d / avg_pool2d / pixel_shuffle / mean / adaptive_avg_pool2d / add / mul,
batch_norm (bit for bit),
upsample_nearest2d / upsample_bilinear2d,
the smooth activations (hardswish, hardsigmoid, sigmoid, tanh, silu, gelu, elu, leaky_relu) and
softmax / log_softmax, cat and the splits (split_with_sizes_copy, split_copy, chunk,
slice_copy), layer_norm, multi-head attention, scaled_dot_product_attention, permute /
transpose with torch (float32, CPU)
on fixed seeded inputs and writes,
into --out DIR:
  manifest.txt  one block per case, in the line format torch_oracle_check.cpp reads:
      case NAME OP
      input NAME D0,D1,... FILE [int32]  (float32 tensor, int32 when marked; "input - - -" for
                                     an absent optional one)
      arg NAME int V | ints V,V,... | float V | floats V,V,... | bool 0|1 | str V | none
      output D0,D1,... FILE          (one line per output, in order)
      tol ABS                        (optional: |got - torch| <= ABS instead of the default)
      end
  *.bin         float32 little-endian tensors, C order.
With --checker PATH it then runs `PATH DIR` (the interpreter side) and exits with its status.

Usage: torch_oracle.py --out DIR [--checker PATH]
"""
import argparse
import os
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F


class Writer:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.lines = []
        self.count = 0

    def tensor(self, case, name, t):
        integer = not t.is_floating_point()  # token ids: int32 on the interpreter's side
        t = t.detach().to(torch.int32 if integer else torch.float32).contiguous()
        fname = f"{case}.{name}.bin"
        values = t.reshape(-1).tolist()
        with open(os.path.join(self.out_dir, fname), "wb") as f:
            f.write(struct.pack(f"<{len(values)}{'i' if integer else 'f'}", *values))
        shape = ",".join(str(d) for d in t.shape)
        assert shape, "rank-0 tensors are not used"
        return shape, fname

    def case(self, name, op, inputs, args, output, tol=None):
        self.lines.append(f"case {name} {op}")
        for in_name, t in inputs:
            if t is None:
                self.lines.append("input - - -")
            else:
                shape, fname = self.tensor(name, in_name, t)
                marker = "" if t.is_floating_point() else " int32"
                self.lines.append(f"input {in_name} {shape} {fname}{marker}")
        for arg_name, kind, value in args:
            if kind == "ints":
                value = ",".join(str(v) for v in value)
            elif kind == "floats":
                value = ",".join(repr(float(v)) for v in value)
            elif kind == "bool":
                value = "1" if value else "0"
            elif kind == "float":
                value = repr(float(value))
            elif kind == "none":
                value = ""
            self.lines.append(f"arg {arg_name} {kind} {value}".rstrip())
        outputs = output if isinstance(output, (list, tuple)) else [output]
        for k, out in enumerate(outputs):  # several for the splits: out, out1, out2, ...
            shape, fname = self.tensor(name, "out" if k == 0 else f"out{k}", out)
            self.lines.append(f"output {shape} {fname}")
        if tol is not None:
            self.lines.append(f"tol {float(tol)!r}")
        self.lines.append("end")
        self.count += 1

    def finish(self):
        with open(os.path.join(self.out_dir, "manifest.txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


def uniform(*shape):
    return torch.rand(*shape, dtype=torch.float32) * 2.0 - 1.0


def conv_cases(w):
    # (name, input shape, weight shape, bias, stride, padding, dilation, groups)
    configs = [
        ("conv_3x3_s1_p1", (1, 3, 8, 8), (4, 3, 3, 3), True, (1, 1), (1, 1), (1, 1), 1),
        ("conv_3x3_s2_p1_nobias", (1, 3, 9, 9), (8, 3, 3, 3), False, (2, 2), (1, 1), (1, 1), 1),
        ("conv_groups2_mixed", (1, 4, 9, 7), (6, 2, 3, 3), True, (2, 1), (1, 0), (1, 2), 2),
        ("conv_depthwise", (1, 8, 6, 6), (8, 1, 3, 3), True, (1, 1), (1, 1), (1, 1), 8),
        ("conv_1x1_batch2", (2, 16, 5, 5), (8, 16, 1, 1), True, (1, 1), (0, 0), (1, 1), 1),
        ("conv_5x5_s2_p2", (1, 2, 11, 10), (3, 2, 5, 5), True, (2, 2), (2, 2), (1, 1), 1),
    ]
    for name, xs, ws, has_bias, stride, padding, dilation, groups in configs:
        x, wt = uniform(*xs), uniform(*ws)
        b = uniform(ws[0]) if has_bias else None
        y = F.conv2d(x, wt, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        w.case(name, "aten.convolution", [("input", x), ("weight", wt), ("bias", b)],
               [("stride", "ints", stride), ("padding", "ints", padding),
                ("dilation", "ints", dilation), ("transposed", "bool", False),
                ("output_padding", "ints", (0, 0)), ("groups", "int", groups)], y)


def conv_transpose_cases(w):
    """aten.convolution with transposed = true (weight [C_in, C_out / groups, KH, KW])."""
    # (name, input shape, weight shape, bias, stride, padding, output_padding, dilation, groups)
    configs = [
        ("deconv_k2_s2", (1, 4, 3, 5), (4, 3, 2, 2), True, (2, 2), (0, 0), (0, 0), (1, 1), 1),
        ("deconv_k3_s2_p1_op1", (1, 5, 4, 3), (5, 6, 3, 3), True, (2, 2), (1, 1), (1, 1), (1, 1),
         1),
        ("deconv_k4_s2_p1_nobias", (2, 3, 3, 4), (3, 2, 4, 4), False, (2, 2), (1, 1), (0, 0),
         (1, 1), 1),
        ("deconv_groups2_rect", (1, 4, 5, 4), (4, 3, 3, 2), True, (2, 1), (1, 0), (1, 0), (1, 2),
         2),
        ("deconv_depthwise_d2", (1, 3, 4, 4), (3, 1, 3, 3), True, (2, 2), (2, 2), (1, 1), (2, 2),
         3),
        ("deconv_s3_pad_beyond", (1, 2, 4, 3), (2, 4, 3, 3), True, (3, 3), (3, 2), (2, 0), (1, 1),
         1),
    ]
    for name, xs, ws, has_bias, stride, padding, out_pad, dilation, groups in configs:
        x, wt = uniform(*xs), uniform(*ws)
        b = uniform(ws[1] * groups) if has_bias else None
        y = F.conv_transpose2d(x, wt, b, stride=stride, padding=padding, output_padding=out_pad,
                               groups=groups, dilation=dilation)
        w.case(name, "aten.convolution", [("input", x), ("weight", wt), ("bias", b)],
               [("stride", "ints", stride), ("padding", "ints", padding),
                ("dilation", "ints", dilation), ("transposed", "bool", True),
                ("output_padding", "ints", out_pad), ("groups", "int", groups)], y)


def linear_cases(w):
    x, wt, b = uniform(4, 64), uniform(32, 64), uniform(32)
    w.case("linear_bias", "aten.linear", [("input", x), ("weight", wt), ("bias", b)], [],
           F.linear(x, wt, b))
    x, wt = uniform(2, 3, 17), uniform(5, 17)
    w.case("linear_rank3_nobias", "aten.linear", [("input", x), ("weight", wt), ("bias", None)],
           [], F.linear(x, wt))


def max_pool_cases(w):
    # (name, input shape, kernel, stride, padding, dilation, ceil_mode)
    configs = [
        ("maxpool_k3_s2_p1", (1, 3, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), False),
        ("maxpool_k3_s2_ceil", (1, 2, 6, 6), (3, 3), (2, 2), (0, 0), (1, 1), True),
        ("maxpool_k2_s2_p1_ceil_drop", (1, 2, 5, 5), (2, 2), (2, 2), (1, 1), (1, 1), True),
        ("maxpool_k2_d2_p1", (1, 2, 9, 8), (2, 2), (1, 1), (1, 1), (2, 2), False),
        ("maxpool_k3x2_s2x1_ceil", (2, 3, 8, 7), (3, 2), (2, 1), (1, 0), (1, 1), True),
    ]
    for name, xs, k, s, p, d, ceil in configs:
        x = uniform(*xs)
        y = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil)
        w.case(name, "aten.max_pool2d", [("self", x)],
               [("kernel_size", "ints", k), ("stride", "ints", s), ("padding", "ints", p),
                ("dilation", "ints", d), ("ceil_mode", "bool", ceil)], y)


def avg_pool_cases(w):
    # (name, input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    configs = [
        ("avgpool_k3_s2_p1", (1, 3, 7, 7), (3, 3), (2, 2), (1, 1), False, True, None),
        ("avgpool_k3_s2_p1_ceil_nopad", (1, 2, 8, 7), (3, 3), (2, 2), (1, 1), True, False, None),
        ("avgpool_k2_s2_p1_ceil_drop", (1, 2, 5, 5), (2, 2), (2, 2), (1, 1), True, True, None),
        ("avgpool_k3x2_s2x1_div", (2, 3, 8, 7), (3, 2), (2, 1), (1, 0), True, False, 5),
        ("avgpool_k2_div_neg", (1, 2, 6, 6), (2, 2), (2, 2), (0, 0), False, True, -3),
        ("avgpool_k7_s1_p3", (1, 2, 5, 6), (7, 7), (1, 1), (3, 3), False, False, None),
    ]
    for name, xs, k, s, p, ceil, include_pad, div in configs:
        x = uniform(*xs)
        y = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=include_pad,
                         divisor_override=div)
        args = [("kernel_size", "ints", k), ("stride", "ints", s), ("padding", "ints", p),
                ("ceil_mode", "bool", ceil), ("count_include_pad", "bool", include_pad)]
        args.append(("divisor_override", "none", None) if div is None
                    else ("divisor_override", "int", div))
        w.case(name, "aten.avg_pool2d", [("self", x)], args, y)
    for name, xs, size in [("adaptive_avg_pool_3x2", (1, 3, 7, 9), (3, 2)),
                           ("adaptive_avg_pool_up", (2, 2, 4, 5), (7, 6)),
                           ("adaptive_avg_pool_even", (1, 4, 8, 8), (4, 2))]:
        x = uniform(*xs)
        w.case(name, "aten.adaptive_avg_pool2d", [("self", x)], [("output_size", "ints", size)],
               F.adaptive_avg_pool2d(x, size))


def pixel_shuffle_cases(w):
    for name, xs, r in [("pixel_shuffle_r2", (1, 8, 3, 4), 2), ("pixel_shuffle_r3", (2, 18, 2, 3), 3)]:
        x = uniform(*xs)
        w.case(name, "aten.pixel_shuffle", [("self", x)], [("upscale_factor", "int", r)],
               F.pixel_shuffle(x, r))


def permute_cases(w):
    # Any rank up to 6 (ShuffleNet's 5-D transpose), negative dims, view and copy op names.
    x = uniform(2, 3, 4, 5)
    w.case("permute_nhwc", "aten.permute_copy", [("self", x)], [("dims", "ints", (0, 2, 3, 1))],
           x.permute(0, 2, 3, 1))
    x = uniform(3, 4, 5)
    w.case("permute_negative_dims", "aten.permute", [("self", x)], [("dims", "ints", (-1, 0, 1))],
           x.permute(-1, 0, 1))
    x = uniform(1, 2, 3, 4, 5)
    w.case("transpose_5d_shuffle", "aten.transpose_copy.int", [("self", x)],
           [("dim0", "int", 1), ("dim1", "int", 2)], torch.transpose(x, 1, 2))
    x = uniform(2, 1, 3, 2, 2, 3)
    w.case("transpose_6d_negative", "aten.transpose.int", [("self", x)],
           [("dim0", "int", -1), ("dim1", "int", 0)], torch.transpose(x, -1, 0))


def mean_cases(w):
    x = uniform(1, 8, 7, 5)
    w.case("mean_hw_keepdim", "aten.mean.dim", [("self", x)],
           [("dim", "ints", (-1, -2)), ("keepdim", "bool", True)], x.mean((-1, -2), keepdim=True))
    x = uniform(2, 3, 4, 5)
    w.case("mean_c", "aten.mean.dim", [("self", x)],
           [("dim", "ints", (1,)), ("keepdim", "bool", False)], x.mean(1))
    x = uniform(1, 16, 7, 7)
    w.case("adaptive_avg_pool_1x1", "aten.adaptive_avg_pool2d", [("self", x)],
           [("output_size", "ints", (1, 1))], F.adaptive_avg_pool2d(x, (1, 1)))


def add_cases(w):
    a, b = uniform(1, 4, 3, 3), uniform(1, 4, 1, 1)
    w.case("add_channel_broadcast", "aten.add.Tensor", [("self", a), ("other", b)], [], a + b)
    a, b = uniform(2, 1, 5), uniform(3, 1)
    w.case("add_general_broadcast", "aten.add.Tensor", [("self", a), ("other", b)], [], a + b)


def mul_cases(w):
    a, b = uniform(2, 5, 3, 3), uniform(2, 5, 1, 1)  # squeeze-excite: the scale first
    w.case("mul_channel_broadcast", "aten.mul.Tensor", [("self", b), ("other", a)], [], b * a)
    a, b = uniform(2, 1, 5), uniform(3, 1)
    w.case("mul_general_broadcast", "aten.mul.Tensor", [("self", a), ("other", b)], [], a * b)
    a = uniform(1, 3, 4, 5)
    for name, s in [("mul_scalar_tenth", 0.1), ("mul_scalar_neg", -2.75)]:
        w.case(name, "aten.mul.Scalar", [("self", a)], [("other", "float", s)],
               torch.ops.aten.mul.Scalar(a, s))
    # (1 - mask) * -10000 of a 0/1 mask, and alpha != 1 on values that round
    m = (uniform(1, 16) > 0).to(torch.float32)
    w.case("rsub_scalar_mask", "aten.rsub.Scalar", [("self", m)], [("other", "float", 1.0)],
           torch.ops.aten.rsub.Scalar(m, 1.0))
    w.case("rsub_scalar_alpha", "aten.rsub.Scalar", [("self", a)],
           [("other", "float", 0.3), ("alpha", "float", 1.7)],
           torch.ops.aten.rsub.Scalar(a, 0.3, 1.7))


def batch_norm_cases(w):
    """Inference batch norm, bit for bit (tol 0): ATen's CPU kernel folds weight, bias and the
    running statistics into one scale and shift per channel and rounds x * scale + shift once
    (compiler/reference/BatchNormFold.h); inputs up to +-20 so the product's rounding shows. With
    and without affine parameters, and the edge dialect's _native_batch_norm_legit_no_training
    (its two statistics outputs empty outside training)."""
    x = uniform(2, 6, 5, 7) * 20.0
    weight, bias, mean = uniform(6) * 2.0, uniform(6), uniform(6) * 3.0
    var = uniform(6).abs() * 2.0 + 0.05
    train_args = [("training", "bool", False), ("momentum", "float", 0.1), ("eps", "float", 1e-5),
                  ("cudnn_enabled", "bool", True)]
    stats = [("running_mean", mean), ("running_var", var)]
    w.case("batch_norm", "aten.batch_norm",
           [("input", x), ("weight", weight), ("bias", bias)] + stats, train_args,
           torch.batch_norm(x, weight, bias, mean, var, False, 0.1, 1e-5, True), tol=0.0)
    w.case("batch_norm_plain", "aten.batch_norm",
           [("input", x), ("weight", None), ("bias", None)] + stats, train_args,
           torch.batch_norm(x, None, None, mean, var, False, 0.1, 1e-5, True), tol=0.0)
    w.case("batch_norm_legit_no_training", "aten._native_batch_norm_legit_no_training",
           [("input", x), ("weight", weight), ("bias", bias)] + stats,
           [("momentum", "float", 0.1), ("eps", "float", 1e-3)],
           [torch.batch_norm(x, weight, bias, mean, var, False, 0.1, 1e-3, True),
            torch.empty(0), torch.empty(0)], tol=0.0)


def activation_cases(w):
    """The smooth activations on [-8, 8) and on their kinks (-3, 3, 0)."""
    x = torch.cat([uniform(2, 3, 9, 7).reshape(-1) * 8,
                   torch.tensor([-3.0, 3.0, 0.0, -0.0, -2.9999998, 2.9999998])])
    configs = [
        ("hardswish", "aten.hardswish", [], F.hardswish),
        ("hardsigmoid", "aten.hardsigmoid", [], F.hardsigmoid),
        ("sigmoid", "aten.sigmoid", [], torch.sigmoid),
        ("tanh", "aten.tanh", [], torch.tanh),
        ("silu", "aten.silu", [], F.silu),
        ("gelu", "aten.gelu", [], F.gelu),
        ("gelu_tanh", "aten.gelu", [("approximate", "str", "tanh")],
         lambda t: F.gelu(t, approximate="tanh")),
        ("elu", "aten.elu", [("alpha", "float", 0.5), ("scale", "float", 1.25),
                             ("input_scale", "float", 0.75)],
         lambda t: torch.ops.aten.elu(t, 0.5, 1.25, 0.75)),
        ("leaky_relu", "aten.leaky_relu", [("negative_slope", "float", 0.2)],
         lambda t: F.leaky_relu(t, 0.2)),
    ]
    for name, op, args, fn in configs:
        w.case(name, op, [("self", x)], args, fn(x))


def softmax_cases(w):
    x = uniform(2, 3, 4, 17) * 10
    w.case("softmax_last", "aten._softmax", [("self", x)],
           [("dim", "int", -1), ("half_to_float", "bool", False)], torch.softmax(x, -1))
    w.case("log_softmax_dim1", "aten._log_softmax", [("self", x)],
           [("dim", "int", 1), ("half_to_float", "bool", False)], torch.log_softmax(x, 1))
    x = uniform(3, 1000) * 20
    w.case("softmax_int_rows", "aten.softmax.int", [("self", x)],
           [("dim", "int", 1), ("dtype", "none", None)], torch.softmax(x, 1))
    w.case("log_softmax_int_rows", "aten.log_softmax.int", [("self", x)],
           [("dim", "int", -1)], torch.log_softmax(x, -1))


def upsample_cases(w):
    """upsample_nearest2d / upsample_bilinear2d, both overloads, scale factors (integer, not,
    and the ones PyTorch special-cases: the size unchanged or exactly doubled) and output sizes
    (up, down, mixed). Nearest is exact; bilinear's reference uses the kernel's 2^-20 weights,
    each within 2^-21 of PyTorch's, so it may differ by 2^-19 * max|x| plus float32 rounding."""
    configs = [  # (name, input shape, output_size, scale_factors)
        ("s2", (1, 3, 5, 7), None, (2.0, 2.0)),
        ("s3_s4", (2, 2, 4, 5), None, (3.0, 4.0)),
        ("s1.5_s2.5", (1, 2, 6, 7), None, (1.5, 2.5)),
        # 18 = 2 * 9 rows, 5 = 5 columns, an output of 18 + 5 <= 128 rows + columns: nearest
        # halves / copies the indices (partitioner_schema/Interpolation.h), not steps by 1 / scale.
        ("s2.05_s1.1", (1, 2, 9, 5), None, (2.05, 1.1)),
        # The same doubled rows with 38 + 90 = 128 (halved) and 38 + 93 = 131 (1 / scale).
        ("s2.05_s1.5_128", (1, 2, 19, 60), None, (2.05, 1.5)),
        ("s2.05_s1.5_131", (1, 2, 19, 62), None, (2.05, 1.5)),
        # Bilinear source indices up to 150, where float32's rounding of the index (PyTorch's
        # arithmetic) and double's differ by far more than the 2^-20 weights' rounding.
        ("wide_s1.7_s1.3", (1, 2, 3, 150), None, (1.7, 1.3)),
        ("size_up", (1, 3, 5, 6), (13, 11), None),
        ("size_down_mixed", (2, 2, 11, 6), (4, 15), None),
        ("size_1x1_in", (1, 2, 1, 1), (3, 5), None),
        ("size_to_1", (1, 2, 5, 4), (1, 1), None),
    ]
    for name, xs, size, scales in configs:
        x = uniform(*xs)
        kw = {"size": size} if size else {"scale_factor": scales}
        args = [("output_size", "ints", size) if size else ("output_size", "none", None),
                ("scale_factors", "floats", scales) if scales else ("scale_factors", "none", None)]
        w.case(f"nearest_vec_{name}", "aten.upsample_nearest2d.vec", [("input", x)], args,
               F.interpolate(x, mode="nearest", **kw))
        bound = (2 ** -19 + 8 * 2 ** -24) * float(x.abs().max())
        for align in (False, True):  # align_corners ignores the scale factors' values
            y = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
            w.case(f"bilinear_vec_{name}_{'align' if align else 'half'}",
                   "aten.upsample_bilinear2d.vec", [("input", x)],
                   [args[0], ("align_corners", "bool", align), args[1]], y, tol=bound)
        # The default overload with the output size PyTorch computed and its scales.
        out = list(F.interpolate(x, mode="nearest", **kw).shape[2:])
        default_args = [("output_size", "ints", out)]
        if scales:
            default_args += [("scales_h", "float", scales[0]), ("scales_w", "float", scales[1])]
        w.case(f"nearest_default_{name}", "aten.upsample_nearest2d", [("self", x)],
               default_args, torch.ops.aten.upsample_nearest2d(x, out, *(scales or ())))
        y = torch.ops.aten.upsample_bilinear2d(x, out, False, *(scales or ()))
        w.case(f"bilinear_default_{name}", "aten.upsample_bilinear2d", [("self", x)],
               [default_args[0], ("align_corners", "bool", False)] + default_args[1:], y,
               tol=bound)


def concat_cases(w):
    """cat (3 tensors, negative dim, rank 2 and 3) and the splits, one output per piece: uneven
    sizes, a split_size above the dim, chunk giving fewer pieces than asked, slices with None,
    negative, clamped and empty bounds and steps."""
    a, b, c = uniform(2, 3, 4, 5), uniform(2, 1, 4, 5), uniform(2, 6, 4, 5)
    w.case("cat_channels_3", "aten.cat", [("t0", a), ("t1", b), ("t2", c)],
           [("dim", "int", 1)], torch.cat([a, b, c], 1))
    a, b = uniform(3, 2), uniform(3, 7)
    w.case("cat_rank2_dim_neg1", "aten.cat", [("t0", a), ("t1", b)], [("dim", "int", -1)],
           torch.cat([a, b], -1))
    a, b = uniform(2, 3, 4), uniform(5, 3, 4)
    w.case("cat_rank3_default_dim", "aten.cat", [("t0", a), ("t1", b)], [], torch.cat([a, b]))
    x = uniform(2, 10, 3)
    w.case("split_with_sizes_3_3_4", "aten.split_with_sizes_copy", [("self", x)],
           [("split_sizes", "ints", [3, 3, 4]), ("dim", "int", 1)],
           torch.ops.aten.split_with_sizes_copy(x, [3, 3, 4], 1))
    for size in (4, 20):
        w.case(f"split_copy_{size}", "aten.split_copy.Tensor", [("self", x)],
               [("split_size", "int", size), ("dim", "int", 1)],
               torch.ops.aten.split_copy(x, size, 1))
    y = uniform(3, 6, 2)
    for chunks, dim in ((4, 1), (3, -2), (2, 0)):  # chunk(4) of 6 gives 3 pieces of 2
        w.case(f"chunk_{chunks}_dim{dim}", "aten.chunk", [("self", y)],
               [("chunks", "int", chunks), ("dim", "int", dim)], torch.chunk(y, chunks, dim))
    z = uniform(2, 11, 3)
    for name, start, end, step in (("from1_step2", 1, None, 2), ("neg", -5, -1, 1),
                                   ("clamped", None, 100, 3), ("empty", 7, 2, 1)):
        args = [("dim", "int", 1)]
        args += [(k, "none", None) if v is None else (k, "int", v)
                 for k, v in (("start", start), ("end", end))]
        args.append(("step", "int", step))
        w.case(f"slice_{name}", "aten.slice_copy.Tensor", [("self", z)], args,
               torch.ops.aten.slice_copy(z, 1, start, end, step))


def transformer_cases(w):
    """layer_norm (with and without weight and bias, over one and two dims, a large offset) and
    nn.MultiheadAttention (self-attention through ATen's own op; cross-attention, which that op
    refuses, through the module's general path; weights averaged, per head, not asked for)."""
    x = uniform(2, 3, 4, 6) * 3.0 + 5.0
    weight, bias = uniform(4, 6), uniform(4, 6)
    w.case("layer_norm_affine_2d", "aten.layer_norm",
           [("input", x), ("weight", weight), ("bias", bias)],
           [("normalized_shape", "ints", (4, 6)), ("eps", "float", 1e-5)],
           F.layer_norm(x, (4, 6), weight, bias, 1e-5))
    y = uniform(3, 7, 16)
    w.case("layer_norm_plain", "aten.layer_norm", [("input", y), ("weight", None), ("bias", None)],
           [("normalized_shape", "ints", (16,)), ("eps", "float", 1e-3)],
           F.layer_norm(y, (16,), eps=1e-3))
    for name, heads, length, average in (("self_avg", 2, 9, True), ("cross_per_head", 4, 5, False),
                                         ("self_no_weights", 1, 9, None)):
        mha = torch.nn.MultiheadAttention(16, heads, batch_first=True).eval()
        with torch.no_grad():
            mha.in_proj_bias.uniform_(-0.5, 0.5)
            mha.out_proj.bias.uniform_(-0.5, 0.5)
        q = uniform(2, 9, 16) * 2.0
        kv = q if length == 9 else uniform(2, length, 16) * 2.0
        need = average is not None
        with torch.no_grad():
            out, weights = mha(q, kv, kv, need_weights=need, average_attn_weights=bool(average))
        params = [("qkv_weight", mha.in_proj_weight), ("qkv_bias", mha.in_proj_bias),
                  ("proj_weight", mha.out_proj.weight), ("proj_bias", mha.out_proj.bias)]
        args = [("embed_dim", "int", 16), ("num_head", "int", heads),
                ("need_weights", "bool", need)]
        if need:
            args.append(("average_attn_weights", "bool", average))
        w.case(f"mha_{name}", "aten._native_multi_head_attention",
               [("query", q), ("key", kv), ("value", kv)] + params, args,
               [out, weights] if need else out)


def attention_cases(w):
    """scaled_dot_product_attention: MiniLM's form (4-D, an additive [B, 1, 1, S] mask with a
    fully masked key, scale given), a per-query mask of another key length with a row fully -inf
    (PyTorch's safe softmax: zeros), causal, 3-D with broadcast batch dims and the default scale."""
    q, k, v = uniform(2, 3, 5, 8) * 2.0, uniform(2, 3, 5, 8) * 2.0, uniform(2, 3, 5, 8)
    mask = torch.zeros(2, 1, 1, 5)
    mask[0, 0, 0, 3] = -10000.0
    mask[1, 0, 0, :] = -10000.0
    w.case("sdpa_bert_mask", "aten.scaled_dot_product_attention",
           [("query", q), ("key", k), ("value", v), ("attn_mask", mask)],
           [("scale", "float", 0.25)], F.scaled_dot_product_attention(q, k, v, mask, scale=0.25))
    k7, v7 = uniform(1, 2, 7, 8), uniform(1, 2, 7, 4)
    q2 = uniform(1, 2, 3, 8)
    rows = uniform(3, 7)
    rows[1, :] = float("-inf")
    w.case("sdpa_row_mask", "aten.scaled_dot_product_attention",
           [("query", q2), ("key", k7), ("value", v7), ("attn_mask", rows)],
           [("dropout_p", "float", 0.0), ("scale", "none", None)],
           F.scaled_dot_product_attention(q2, k7, v7, rows))
    w.case("sdpa_causal", "aten.scaled_dot_product_attention",
           [("query", q), ("key", k), ("value", v), ("attn_mask", None)],
           [("is_causal", "bool", True)], F.scaled_dot_product_attention(q, k, v, is_causal=True))
    q3, k3, v3 = uniform(4, 6, 16), uniform(1, 9, 16), uniform(1, 9, 3)
    w.case("sdpa_broadcast_3d", "aten.scaled_dot_product_attention",
           [("query", q3), ("key", k3), ("value", v3)], [],
           F.scaled_dot_product_attention(q3, k3, v3))


def embedding_cases(w):
    """aten.embedding: float32 rows gathered by int64 ids (narrowed to int32 by the compiler),
    ids of rank 1 and 2, the first and last rows, repeats; padding_idx changes nothing."""
    table = uniform(11, 5)
    ids = torch.tensor([[0, 10, 3, 3], [7, 1, 10, 0]], dtype=torch.int64)
    w.case("embedding_2d_ids", "aten.embedding", [("weight", table), ("indices", ids)],
           [("padding_idx", "int", 0)], F.embedding(ids, table, padding_idx=0))
    wide = uniform(30, 10)
    flat = torch.tensor([29, 0, 5, 17, 29], dtype=torch.int64)
    w.case("embedding_1d_ids", "aten.embedding", [("weight", wide), ("indices", flat)], [],
           F.embedding(flat, wide))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--checker")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(20240601)
    torch.set_num_threads(1)
    w = Writer(args.out)
    conv_cases(w)
    conv_transpose_cases(w)
    linear_cases(w)
    max_pool_cases(w)
    pixel_shuffle_cases(w)
    permute_cases(w)
    mean_cases(w)
    add_cases(w)
    activation_cases(w)
    softmax_cases(w)
    mul_cases(w)
    batch_norm_cases(w)
    avg_pool_cases(w)
    upsample_cases(w)
    concat_cases(w)
    transformer_cases(w)
    attention_cases(w)
    embedding_cases(w)
    w.finish()
    print(f"torch_oracle: torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}"
          f" kernels), {w.count} cases written to {args.out}")
    if args.checker:
        sys.stdout.flush()
        return subprocess.call([args.checker, args.out])
    return 0


if __name__ == "__main__":
    sys.exit(main())
