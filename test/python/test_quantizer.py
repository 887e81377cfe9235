"""vkdelegate.quantizer.VkdQuantizer used as a PT2E user does (run by CTest `python_exporter`):
torch.export, prepare_pt2e with it, calibration, convert_pt2e, on small graphs. The
parameters convert_pt2e writes into the graph are checked against ranges computed here from the
float model: int8 weights symmetric in [-127, 127] per output channel (per tensor on request,
and for transposed convs), activations int8 affine over their observed range (MinMax
observers: the range is exactly the data's), a relu after a conv / linear / add observed only
after the relu, byte moves sharing their input's parameters and a cat's inputs sharing one set,
sigmoid / tanh / softmax with their fixed output ranges, a GELU with an observer of its own
(dq -> gelu -> q: `vkd compile` makes it one q8ta_lut, `vkd run` agrees with PyTorch).
"""
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch
from torch import nn
from torchao.quantization.pt2e.observer import HistogramObserver, MinMaxObserver
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from vkdelegate.examples_models import tiny_unet
from vkdelegate.export import quantize, to_graph_ir
from vkdelegate.quantizer import VkdQuantizer
import test_exporter as reference  # its vkd binary and graph writer; not its tests

ops = torch.ops.quantized_decomposed
Q = ops.quantize_per_tensor.default
DQ = ops.dequantize_per_tensor.default
DQ_CHANNEL = ops.dequantize_per_channel.default


def pt2e(model, samples, quantizer):
    """The PT2E flow of the README: export, prepare, calibrate, convert."""
    captured = torch.export.export(model.eval(), (samples[0],)).module()
    prepared = prepare_pt2e(captured, quantizer)
    with torch.no_grad():
        for x in samples:
            prepared(x)
    return prepared, convert_pt2e(prepared)


def samples(shape, count=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for _ in range(count)]


def quantize_of(converted, name):
    """(scale, zero point, quant_min, quant_max, dtype) of the quantize that reads node `name`."""
    (q,) = [n for n in converted.graph.nodes if n.target == Q and n.args[0].name == name]
    return tuple(q.args[1:6])


def weight_of(converted, dq):
    """The int8 data, scales and zero points behind a weight dequantize node."""
    def value(arg):
        return getattr(converted, arg.target) if isinstance(arg, torch.fx.Node) else arg
    return value(dq.args[0]), value(dq.args[1]), value(dq.args[2])


def affine(lo, hi):
    """MinMaxObserver's int8 affine parameters for the range [lo, hi] (0 included)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255)
    return float(scale), int(-128 - round(lo / float(scale)))


class ConvNet(nn.Module):
    def __init__(self, transposed=False):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.deconv = nn.ConvTranspose2d(6, 4, 2, stride=2) if transposed else None

    def forward(self, x):
        y = self.conv(x)
        return self.deconv(y) if self.deconv is not None else y


class Fusions(nn.Module):
    """conv + relu, add + relu, linear + relu6."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.side = nn.Conv2d(3, 4, 1)
        self.fc = nn.Linear(4, 8)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        z = torch.relu(y + self.side(x))
        return nn.functional.relu6(self.fc(z))


class ByteMoves(nn.Module):
    """A max pool and a view after a conv; a cat of two branches of different ranges."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.wide = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        a = nn.functional.max_pool2d(self.conv(x), 2).view(1, 4, 16)
        b = (self.wide(x) * 4.0)[:, :, ::2, ::2].reshape(1, 4, 16)
        return torch.cat([a, b], 1)


class FixedRanges(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        gate = torch.sigmoid(y)
        return gate * y, nn.functional.max_pool2d(gate, 2), torch.tanh(y), torch.softmax(y, -1)


class CatTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        return torch.cat([y, y], 1)


class SharedConvOutput(nn.Module):
    """The conv's result read by a batch norm and by something else (the residual add of a
    pre-activation block, a DenseNet cat; here the model's first output)."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        with torch.no_grad():  # a batch norm far from the identity, so folding it shows
            self.bn.weight.uniform_(2.0, 3.0)
            self.bn.bias.uniform_(1.0, 2.0)
            self.bn.running_mean.uniform_(-1.0, 1.0)

    def forward(self, x):
        y = self.conv(x)
        return y, torch.relu(self.bn(y))


class GeluNet(nn.Module):
    """conv -> GELU (erf) -> conv -> GELU (tanh), the last one the model's output."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.b(nn.functional.gelu(self.a(x)))
        return nn.functional.gelu(y, approximate="tanh")


class MaskedAttention(nn.Module):
    """A BERT-style attention: q, k, v projections, heads split, SDPA with an additive mask made
    from a 0/1 token mask, heads merged, then a LayerNorm."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(16, 16) for _ in range(3))
        self.norm = nn.LayerNorm(16)

    def forward(self, x, mask):
        heads = [p(x).view(1, -1, 2, 8).transpose(1, 2) for p in (self.q, self.k, self.v)]
        additive = ((1.0 - mask) * -10000.0)[:, None, None, :]
        y = nn.functional.scaled_dot_product_attention(*heads, attn_mask=additive)
        return self.norm(y.transpose(1, 2).reshape(1, -1, 16))


class PostNormBlock(nn.Module):
    """BERT's feed-forward half: LayerNorm, then x + Linear(GELU(Linear(x))) into a
    LayerNorm."""

    def __init__(self):
        super().__init__()
        self.norm_in, self.norm_out = nn.LayerNorm(16), nn.LayerNorm(16)
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        h = self.norm_in(x)
        y = self.down(nn.functional.gelu(self.up(h)))
        return self.norm_out(nn.functional.dropout(y, 0.1, False) + h)


class MaskedMeanPooling(nn.Module):
    """A LayerNorm's tokens pooled as sentence-transformers does: the mean over the tokens a
    0/1 mask keeps, then F.normalize."""

    def __init__(self):
        super().__init__()
        self.fc, self.norm = nn.Linear(16, 16), nn.LayerNorm(16)

    def forward(self, x, mask):
        hidden = self.norm(self.fc(x))
        keep = mask.unsqueeze(-1)
        mean = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1e-9)
        return nn.functional.normalize(mean, p=2, dim=1)


class VkdQuantizerTest(unittest.TestCase):
    def test_weights_per_channel_symmetric(self):
        """Per output channel, scale max|w_c| / 127, zero point 0, ints in [-127, 127]."""
        torch.manual_seed(0)
        model = ConvNet()
        _, converted = pt2e(model, samples((1, 3, 8, 8)), VkdQuantizer(observer="minmax"))
        (dq,) = [n for n in converted.graph.nodes if n.target == DQ_CHANNEL]
        self.assertEqual(dq.args[3:], (0, -127, 127, torch.int8))
        ints, scales, zero_points = weight_of(converted, dq)
        w = model.conv.weight.detach()
        expected_scales = w.abs().amax(dim=(1, 2, 3)) / 127
        torch.testing.assert_close(scales, expected_scales, rtol=1e-6, atol=0)
        self.assertFalse(zero_points.any())
        expected = torch.clamp(torch.round(w / scales.view(-1, 1, 1, 1)), -127, 127)
        self.assertEqual(ints.dtype, torch.int8)
        self.assertLessEqual((ints.float() - expected).abs().max().item(), 0)
        self.assertEqual(ints.abs().amax(dim=(1, 2, 3)).tolist(), [127] * 6)

    def test_weights_per_tensor(self):
        """per_channel=False: one scale max|w| / 127 per weight; a transposed conv's weight is
        per tensor with the default too."""
        torch.manual_seed(0)
        model = ConvNet(transposed=True)
        for per_channel in (False, True):
            with self.subTest(per_channel=per_channel):
                _, converted = pt2e(model, samples((1, 3, 8, 8)),
                                    VkdQuantizer(per_channel=per_channel, observer="minmax"))
                weights = [n for n in converted.graph.nodes if n.target in (DQ, DQ_CHANNEL)
                           and n.args[0].op == "get_attr"]
                targets = [n.target for n in weights]
                self.assertEqual(targets, [DQ_CHANNEL if per_channel else DQ, DQ])
                for dq, module in zip(weights, (model.conv, model.deconv)):
                    if dq.target != DQ:
                        continue
                    ints, scale, zero_point = weight_of(converted, dq)
                    self.assertEqual(dq.args[3:], (-127, 127, torch.int8))
                    self.assertEqual(zero_point, 0)
                    amax = module.weight.detach().abs().max().item()
                    self.assertAlmostEqual(scale, amax / 127, delta=amax * 1e-7)

    def test_activation_fused_into_its_op(self):
        """conv + relu, add + relu, linear + F.relu6: no quantize between the op and its
        activation; the activation's output observed: [0, max] on int8, zero point -128."""
        torch.manual_seed(0)
        model = Fusions().eval()
        xs = samples((1, 3, 4, 4))
        _, converted = pt2e(model, xs, VkdQuantizer(observer="minmax"))
        quantized = {n.args[0].name for n in converted.graph.nodes if n.target == Q}
        self.assertFalse(quantized & {"conv2d", "add", "linear"}, quantized)
        with torch.no_grad():
            ranges = {"relu": [], "relu_1": [], "relu6": []}
            for x in xs:
                y = torch.relu(model.conv(x))
                z = torch.relu(y + model.side(x))
                ranges["relu"].append(y)
                ranges["relu_1"].append(z)
                ranges["relu6"].append(nn.functional.relu6(model.fc(z)))
        for name, values in ranges.items():
            scale, zero_point, lo, hi, dtype = quantize_of(converted, name)
            expected_scale, expected_zp = affine(0.0, max(v.max().item() for v in values))
            self.assertEqual((zero_point, lo, hi, dtype), (-128, -128, 127, torch.int8), name)
            self.assertEqual(expected_zp, -128)
            self.assertAlmostEqual(scale, expected_scale, delta=expected_scale * 1e-6)
        graph, _ = to_graph_ir(converted, (xs[0],), "fusions")  # F.relu6: ATen's own op
        (relu6,) = [n for n in graph["nodes"] if n["outputs"] == ["relu6"]]
        self.assertEqual((relu6["op"], relu6["args"]),
                         ("aten.hardtanh", {"min_val": 0.0, "max_val": 6.0}))

    def test_byte_moves_share_their_input_parameters(self):
        """A max pool, a view, a slice, a reshape keep their input's parameters; a cat's
        inputs and output share one set: one observer over every value of the group."""
        torch.manual_seed(0)
        model = ByteMoves().eval()
        xs = samples((1, 3, 8, 8))
        _, converted = pt2e(model, xs, VkdQuantizer(observer="minmax"))
        params = {n.args[0].name: tuple(n.args[1:3]) for n in converted.graph.nodes
                  if n.target == Q}
        self.assertEqual(params["max_pool2d"], params["conv2d"])
        self.assertEqual(params["view"], params["conv2d"])
        self.assertEqual(params["slice_2"], params["mul"])
        self.assertEqual(params["cat"], params["view"])
        self.assertEqual(params["reshape"], params["view"])
        with torch.no_grad():  # one observer sees every value of the group, before the moves
            group = [t for x in xs for t in (model.conv(x), model.wide(x) * 4.0)]
        lo = min(t.min().item() for t in group)
        hi = max(t.max().item() for t in group)
        scale, zero_point = affine(lo, hi)
        self.assertAlmostEqual(params["cat"][0], scale, delta=scale * 1e-6)
        self.assertEqual(params["cat"][1], zero_point)

    def test_fixed_parameters_of_bounded_ops(self):
        """sigmoid and softmax: [0, 1) as scale 1/256, zero point -128; tanh [-1, 1) as 2/256,
        0, whatever the calibration saw. Their consumers read that int8 tensor as it is (a mul,
        a max pool sharing it), no second quantize."""
        torch.manual_seed(0)
        _, converted = pt2e(FixedRanges(), samples((1, 3, 4, 4)), VkdQuantizer())
        self.assertEqual(quantize_of(converted, "sigmoid")[:2], (1 / 256, -128))
        self.assertEqual(quantize_of(converted, "max_pool2d")[:2], (1 / 256, -128))
        (mul,) = [n for n in converted.graph.nodes if n.target == torch.ops.aten.mul.Tensor]
        dequantized = [a.args[0].args[0].name for a in mul.args]  # dq <- q <- the value
        self.assertEqual(dequantized, ["sigmoid", "conv2d"])
        self.assertEqual(quantize_of(converted, "tanh")[:2], (2 / 256, 0))
        self.assertEqual(quantize_of(converted, "softmax")[:2], (1 / 256, -128))

    def test_gelu_between_int8_runs_as_a_table(self):
        """Both GELUs (erf, tanh) get an observer of their own, also the one whose output is
        the model's (left float before): each is dq -> aten.gelu -> q in the graph IR with its
        approximation, `vkd compile` fuses each into one q8ta_lut, and `vkd run` gives the
        converted model's output within one output step."""
        torch.manual_seed(0)
        xs = samples((1, 3, 8, 8), 3)
        converted = quantize(GeluNet(), (xs[0],), xs, observer="minmax").converted
        output_scale = quantize_of(converted, "gelu_1")[0]
        graph, tensors = to_graph_ir(converted, (xs[0],), "gelu")
        gelus = [n["args"] for n in graph["nodes"] if n["op"] == "aten.gelu"]
        self.assertEqual(gelus, [{}, {"approximate": "tanh"}])
        vkd = reference.vkd_binary(self)
        with tempfile.TemporaryDirectory() as d:
            graph_path, weights_path, x_path = reference.write_graph(d, "m", graph, tensors, xs[0])
            blob = os.path.join(d, "m.vkd")
            done = subprocess.run([vkd, "compile", graph_path, "--weights", weights_path, "-o",
                                   blob, "--report"], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            fused = [line for line in done.stdout.splitlines()
                     if line.strip().startswith("fused dq -> aten.gelu -> q ")
                     and "into q8ta_lut" in line]
            self.assertEqual(len(fused), 2, done.stdout)
            run = subprocess.run([vkd, "run", blob, "--input", f"x={x_path}", "--output-dir",
                                  os.path.join(d, "run")], capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            got = np.load(os.path.join(d, "run", "output.npy"))
        with torch.no_grad():
            want = converted(xs[0]).numpy()
        self.assertEqual(got.shape, want.shape)
        self.assertGreater(np.abs(want).max(), 20 * output_scale)  # not a flat output
        self.assertLessEqual(np.abs(got - want).max(), output_scale * (1 + 1e-6))

    def test_attention_int8_with_a_float_mask_and_layer_norm_observed(self):
        """SDPA: its query, key and value come dequantized from int8, its output is quantized;
        the mask made from the 0/1 token mask (rsub, mul, views) stays float all the way; the
        layer norm's output has an observer of its own (the model's output, nothing after it
        would give it one)."""
        torch.manual_seed(0)
        model = MaskedAttention().eval()
        x, mask = torch.randn(1, 5, 16), torch.tensor([[1.0, 1.0, 1.0, 0.0, 0.0]])
        calibration = [(x, mask)] + [(torch.randn(1, 5, 16), mask) for _ in range(3)]
        converted = quantize(model, (x, mask), calibration).converted
        (sdpa,) = [n for n in converted.graph.nodes
                   if n.target == torch.ops.aten.scaled_dot_product_attention.default]
        for qkv in sdpa.args[:3]:
            self.assertEqual(qkv.target, DQ, qkv)
        (user,) = sdpa.users
        self.assertEqual(user.target, Q)
        mask_node = sdpa.args[3] if len(sdpa.args) > 3 else sdpa.kwargs["attn_mask"]
        seen = [mask_node]
        while seen[-1].op == "call_function":
            self.assertNotIn(seen[-1].target, (Q, DQ), seen)
            seen.append(seen[-1].args[0])
        self.assertEqual(seen[-1].name, "mask")
        (norm,) = [n for n in converted.graph.nodes
                   if n.target == torch.ops.aten.layer_norm.default]
        self.assertEqual([u.target for u in norm.users], [Q])
        with torch.no_grad():  # the int8 model stays close to the float one
            got, want = converted(x, mask), model(x, mask)
        self.assertLess((got - want).abs().max().item(), 0.15)

    def test_masked_mean_stays_float(self):
        """The pooling after the LayerNorm has no quantize: the mask, its view, the mul, both
        sums, the clamp of the token count, the divisions and F.normalize's norm stay float;
        the hidden states reach the mul as the LayerNorm's int8 output dequantized."""
        torch.manual_seed(0)
        x, mask = torch.randn(2, 5, 16), torch.tensor([[1.0, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
        calibration = [(x, mask)] + [(torch.randn(2, 5, 16), mask) for _ in range(3)]
        model = MaskedMeanPooling().eval()
        converted = quantize(model, (x, mask), calibration).converted
        (norm,) = [n for n in converted.graph.nodes
                   if n.target == torch.ops.aten.layer_norm.default]
        self.assertEqual([u.target for u in norm.users], [Q])
        (mul,) = [n for n in converted.graph.nodes if n.target == torch.ops.aten.mul.Tensor]
        self.assertEqual(mul.args[0].target, DQ)
        self.assertEqual(mul.args[0].args[0].args[0], norm)
        self.assertEqual(mul.args[1].target, torch.ops.aten.unsqueeze.default)
        self.assertEqual(mul.args[1].args[0].name, "mask")
        after = [n for n in converted.graph.nodes if n.op == "call_function" and
                 n.target not in (Q, DQ)][-9:]  # mul, sum, sum, clamp, div, norm, ..., div
        self.assertIn(mul, after)
        for node in after + [mul.args[1]]:
            self.assertNotIn(Q, [u.target for u in node.users], node)
            for arg in node.args:
                if isinstance(arg, torch.fx.Node) and arg is not mul.args[0]:
                    self.assertNotIn(arg.target, (Q, DQ), node)
        self.assertEqual(sum(n.target == torch.ops.aten.sum.dim_IntList for n in after), 2)
        with torch.no_grad():  # the int8 model stays close to the float one
            got, want = converted(x, mask), model(x, mask)
        cosine = nn.functional.cosine_similarity(got, want, dim=1)
        self.assertGreater(cosine.min().item(), 0.999)

    def test_residual_stream_stays_float(self):
        """The add a LayerNorm reads is float, and so are its operands: the down projection's
        output (int8 input and weights, no quantize after it) and the first LayerNorm's output
        as the add reads it; the up projection still reads that LayerNorm through a quantize."""
        torch.manual_seed(0)
        x = torch.randn(1, 6, 16) * 3
        converted = quantize(PostNormBlock(), (x,), [(x,), (torch.randn(1, 6, 16),)]).converted
        nodes = {n.name: n for n in converted.graph.nodes}
        (add,) = [n for n in nodes.values() if n.target == torch.ops.aten.add.Tensor]
        self.assertNotIn(Q, [u.target for u in add.users])
        for operand in add.args:
            while operand.target == torch.ops.aten.dropout.default:
                operand = operand.args[0]
            self.assertIn(operand.target, (torch.ops.aten.linear.default,
                                           torch.ops.aten.layer_norm.default), operand)
        up, down = (n for n in nodes.values() if n.target == torch.ops.aten.linear.default)
        for linear in (up, down):
            self.assertEqual(linear.args[0].target, DQ)
            self.assertEqual(linear.args[1].target, DQ_CHANNEL)
        # The up projection's only user is the GELU: no quantize between them (the GELU runs
        # in the GEMM's epilogue), the GELU's output is quantized for the down projection.
        (gelu,) = up.users
        self.assertEqual(gelu.target, torch.ops.aten.gelu.default)
        self.assertEqual([u.target for u in gelu.users], [Q])
        self.assertNotIn(Q, [u.target for u in down.users])

    def test_linear_gelu_is_one_quantized_op(self):
        """A linear whose only user is gelu (erf or tanh) has no output observer, the gelu's
        output has one; a linear whose output something else also reads keeps its own (then
        dq -> gelu -> q is a table as before)."""
        class LinearGelu(nn.Module):
            def __init__(self, approximate, shared):
                super().__init__()
                self.fc, self.approximate, self.shared = nn.Linear(8, 12), approximate, shared

            def forward(self, x):
                y = self.fc(x)
                g = nn.functional.gelu(y, approximate=self.approximate)
                return g + y if self.shared else g

        torch.manual_seed(0)
        x = torch.randn(2, 8)
        for approximate in ("none", "tanh"):
            for shared in (False, True):
                with self.subTest(approximate=approximate, shared=shared):
                    converted = quantize(LinearGelu(approximate, shared), (x,),
                                         [(x,), (torch.randn(2, 8),)]).converted
                    (linear,) = [n for n in converted.graph.nodes
                                 if n.target == torch.ops.aten.linear.default]
                    (gelu,) = [n for n in converted.graph.nodes
                               if n.target == torch.ops.aten.gelu.default]
                    self.assertEqual([u.target for u in gelu.users], [Q])
                    if shared:
                        self.assertEqual([u.target for u in linear.users], [Q])
                        self.assertEqual(gelu.args[0].target, DQ)
                    else:
                        self.assertIs(gelu.args[0], linear)

    def test_cat_of_one_tensor_twice(self):
        """torch.cat([y, y]): one input edge (prepare_pt2e recursed without end before)."""
        torch.manual_seed(0)
        _, converted = pt2e(CatTwice(), samples((1, 3, 4, 4)), VkdQuantizer(observer="minmax"))
        self.assertEqual(quantize_of(converted, "cat")[:2], quantize_of(converted, "conv2d")[:2])

    def test_batch_norm_of_a_shared_conv_is_kept(self):
        """A batch norm whose conv's result has another reader stays standalone: prepare_pt2e
        folds it into the conv regardless, and the other reader then got normalized values
        (cosine 0.4-0.6 against the float model on the architecture patterns before). The
        quantized model's conv output must stay within int8 error of the float one."""
        torch.manual_seed(0)
        model = SharedConvOutput().eval()
        xs = samples((1, 3, 8, 8), 4)
        converted = quantize(model, (xs[0],), xs, observer="minmax").converted
        with torch.no_grad():
            want, got = (m(xs[1])[0].numpy().ravel() for m in (model, converted))
        cosine = float(want @ got / np.linalg.norm(want) / np.linalg.norm(got))
        self.assertGreater(cosine, 0.999)
        targets = [str(n.target) for n in converted.graph.nodes]
        self.assertIn("aten.batch_norm.default", targets)

    def test_observers_and_activation_range(self):
        """Histogram observers by default, MinMax on request; activations int8 over the full
        range [-128, 127]; an unknown observer is refused by name."""
        torch.manual_seed(0)
        for observer, cls in (("histogram", HistogramObserver), ("minmax", MinMaxObserver)):
            prepared, converted = pt2e(ConvNet(), samples((1, 3, 4, 4), 1),
                                       VkdQuantizer(observer=observer))
            kinds = {type(m) for m in prepared.modules() if "Observer" in type(m).__name__}
            self.assertIn(cls, kinds, observer)
            self.assertEqual(quantize_of(converted, "x")[2:], (-128, 127, torch.int8))
        with self.assertRaisesRegex(ValueError, "unknown observer 'median'"):
            VkdQuantizer(observer="median")

    def test_user_flow_gives_quantize_s_graph(self):
        """prepare_pt2e / convert_pt2e with VkdQuantizer run by the user give the graph IR
        vkdelegate.export.quantize() gives (the same nodes, arguments and weights)."""
        x = samples((1, 3, 16, 16), 1)[0]
        torch.manual_seed(0)
        model = tiny_unet().eval()
        _, converted = pt2e(model, [x], VkdQuantizer(observer="minmax"))
        ours = quantize(model, (x,), [x], observer="minmax").converted
        (graph, weights), (their_graph, their_weights) = (to_graph_ir(m, (x,), "m")
                                                          for m in (converted, ours))
        self.assertEqual(graph, their_graph)
        self.assertEqual(weights.keys(), their_weights.keys())
        for k in weights:
            np.testing.assert_array_equal(weights[k], their_weights[k])


if __name__ == "__main__":
    unittest.main()
