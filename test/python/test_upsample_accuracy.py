"""How far q8ta_upsample_bilinear2d's arithmetic is from PyTorch's reference-quantized model.

The kernel (runtime/ops/Upsample.h) interpolates the int8 values exactly with weights rounded
to 2^-20 from PyTorch's own float32 lambdas and requantizes once; PyTorch dequantizes, computes
F.interpolate in float32 and quantizes. The two can differ only where PyTorch's value lies
within the weights' rounding (at most 2^-19 * 255 input steps, ~5e-4) plus float32 rounding of
a half-integer, i.e. at rounding ties. This test writes that arithmetic again in numpy (not the
runtime's code: the custom-op ACCU cases check the kernel against the C++ test reference, which
is a third implementation of it) and measures, over random int8 inputs (and inputs alternating
between -128 and 127, the worst case for the weights' rounding), every configuration the op
takes: scale factors 2, 3 and non-integer ones, output sizes up and down, align_corners both
ways, the input-to-output scale ratio 0.8 to 2. Every difference must be 1 step where PyTorch's
value is within 1e-3 of a half-integer (vkdelegate.per_layer's tie rule).
"""
import sys
import unittest

import numpy as np
import torch
import torch.nn.functional as F

from test_exporter import bilinear_taps

TIE = 1e-3
CONFIGS = [  # (name, output size, scale factors, align_corners)
    ("scale 2", None, (2.0, 2.0), False), ("scale 2 align", None, (2.0, 2.0), True),
    ("scale 3", None, (3.0, 3.0), False), ("scale 1.7x2.3", None, (1.7, 2.3), False),
    ("size 13x11", (13, 11), None, False), ("size 13x11 align", (13, 11), None, True),
    ("size 5x6 (down)", (5, 6), None, False),
]
RATIOS = [1.0, 0.8, 1.25, 2.0]  # s_in / s_out


def kernel(q, zp_in, s_in, s_out, zp_out, out, scales, align):
    """q8ta_upsample_bilinear2d (runtime/ops/Upsample.h): acc = sum W_a W_b (q - zp_in) in
    int64, W_1 = roundEven(lambda1 * 2^20); y = float32(acc) * float32(s_in * 2^-40); then
    clamp(roundEven(float32(y * float32(1 / s_out))) + zp_out)."""
    d = q.astype(np.int64) - zp_in
    acc = None
    taps = [bilinear_taps(q.shape[2 + i], out[i], align, scales[i] if scales else None)
            for i in range(2)]
    (h0, h1, lh), (w0, w1, lw) = taps
    wh1, ww1 = [np.rint(lam.astype(np.float64) * 2 ** 20).astype(np.int64) for lam in (lh, lw)]
    for rows, wr in ((h0, 2 ** 20 - wh1), (h1, wh1)):
        for cols, wc in ((w0, 2 ** 20 - ww1), (w1, ww1)):
            term = wr[:, None] * wc[None, :] * d[:, :, rows][:, :, :, cols]
            acc = term if acc is None else acc + term
    y = acc.astype(np.float32) * np.float32(np.ldexp(np.float64(np.float32(s_in)), -40))
    t = (y.astype(np.float32) * np.float32(1.0 / np.float64(np.float32(s_out)))).astype(np.float32)
    return np.clip(np.rint(t) + zp_out, -128, 127).astype(np.int64)


def pytorch(q, zp_in, s_in, s_out, zp_out, out, scales, align):
    """The reference-quantized model: dequantize, F.interpolate in float32, quantize; and the
    value it rounded (y / s_out)."""
    x = (torch.from_numpy(q.astype(np.float32)) - zp_in) * torch.tensor(np.float32(s_in))
    kw = {"scale_factor": scales} if scales else {"size": out}
    y = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
    yq = torch.quantize_per_tensor(y, float(s_out), zp_out + 128, torch.quint8)
    return yq.int_repr().numpy().astype(np.int64) - 128, y.double().numpy() / float(s_out)


class BilinearTiesTest(unittest.TestCase):
    def test_differences_are_rounding_ties_only(self):
        rng = np.random.default_rng(19)
        lines, total, ties, real, nearest = [], 0, 0, 0, 0.0
        for (name, size, scales, align), ratio in [(c, r) for c in CONFIGS for r in RATIOS]:
            counts = [0, 0, 0]
            for trial in range(40):
                if trial % 8 == 0:  # -128 / 127 alternating along both dims
                    q = np.fromfunction(lambda n, c, h, w: np.where((h + w + c) % 2, 127, -128),
                                        (1, 4, 9, 11)).astype(np.int64)
                else:
                    q = rng.integers(-128, 128, size=(1, 4, 9, 11))
                zp_in, zp_out = (int(v) for v in rng.integers(-20, 20, size=2))
                s_in = float(np.float32(rng.uniform(0.005, 0.05)))
                s_out = float(np.float32(s_in / ratio))
                x_scales = scales
                ref, pre = pytorch(q, zp_in, s_in, s_out, zp_out, size, x_scales, align)
                got = kernel(q, zp_in, s_in, s_out, zp_out, ref.shape[2:], x_scales, align)
                diff = np.abs(got - ref)
                dist = np.abs(np.abs(pre - np.floor(pre)) - 0.5)
                tie = (diff == 1) & (dist < TIE)
                counts[0] += diff.size
                counts[1] += int(tie.sum())
                counts[2] += int(((diff != 0) & ~tie).sum())
                if tie.any():
                    nearest = max(nearest, float(dist[tie].max()))
            total, ties, real = total + counts[0], ties + counts[1], real + counts[2]
            lines.append(f"    {name:17s} s_in/s_out {ratio:4.2f}: {counts[0]:7d} values, "
                         f"{counts[1]:5d} 1 off at ties, {counts[2]} other differences")
        print("\n  bilinear vs PyTorch's reference-quantized model:\n" + "\n".join(lines) +
              f"\n  {total} values: {ties} at ties (PyTorch's value at most {nearest:.2e} from a "
              f"half-integer), {real} other differences", file=sys.stderr)
        self.assertEqual(real, 0)
        self.assertLess(nearest, TIE)


if __name__ == "__main__":
    unittest.main()
