"""Issue 33's model tests through ExecuTorch (VkdPartitioner -> .pte -> executorch.runtime with
VkdBackend), on the default device under the validation layer:
- mobilenet_v2 and tiny_unet at 64x64, VkdQuantizer-quantized: one VkdBackend call and no CPU
  operator; the runtime's output equals `vkd run` of the delegate payload byte for byte, and the
  converted (PyTorch reference-quantized) model's within 1 output LSB everywhere, cosine >= 0.999.
- Partly delegated: convs around a LayerNorm and the custom op vkd_test::shift (its ExecuTorch
  kernel: vkd_test_shift_kernel.cpp), and an attention block (LayerNorm, self-attention, the
  custom op) between convs, only the custom op on the CPU. The .pte also returns every
  delegate's inputs and outputs (delegate_taps): each delegate's output equals `vkd run` of
  its payload on the inputs ExecuTorch gave it byte for byte, and PyTorch's reference of its
  partition within one LSB; vkd_et_runner's outputs equal executorch.runtime's byte for byte;
  the model's output agrees with the converted model's (cosine >= 0.999: the CPU ops are
  ExecuTorch's float kernels).
- Attention kept whole (issue 35): BERT's attention in small (the additive mask made from a 0/1
  mask, q / k / v linears, F.scaled_dot_product_attention, the out projection, a residual
  LayerNorm) and sentence-transformers' masked mean + F.normalize: one delegate, no CPU
  operator (ExecuTorch's edge lowering would decompose the SDPA and the norm into ops the
  compiler does not take); the outputs equal `vkd run` of the payload byte for byte, the
  converted model's within 1 LSB (the pooled one within an LSB / the kept tokens).
- A device that cannot run a kernel (VKD_DISABLE_FLOAT16=1, a float16 blob): loading the .pte
  raises RuntimeError naming the failure, in a child process that must exit normally.
- Token ids (issue 35): BERT's embedding pattern (word rows by int64 id + position rows, a
  LayerNorm, a linear), VkdQuantizer-quantized, lowered whole: the one delegate holds the
  embedding and takes the int64 ids torch.export gives; VkdBackend narrows them to int32.
  executorch.runtime's output equals `vkd run` of the payload byte for byte and the converted
  model's within 1 LSB; vkd_et_runner on an int64 .npy the same bytes. An id outside the table
  (and one outside int32) is an ExecuTorch error whose log line names the input, the element,
  the id (and the table's rows), in process and in the runner, and the method runs on after.
Environment (CMake): PYTHONPATH (python/, test/python/), VKD, VKD_ET_RUNNER, VKD_TEST_KERNELS;
VKD_VALIDATION=1.
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from cli_models import _register_shift as register_shift
from delegate_taps import check_delegates, tap_delegates, vkd_run
from test_executorch_aot import instructions, lower, quantized_program, run_blob
from vkdelegate import accuracy, examples_models
from vkdelegate import executorch as vkd_executorch  # registers VkdBackend with the runtime
from vkdelegate.executorch import VkdPartitioner
from vkdelegate.export import quantize
from executorch.exir import to_edge_transform_and_lower
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.runtime import Runtime

# The custom op's CPU kernel, registered with the runtime executorch.runtime loaded.
ctypes.CDLL(os.environ["VKD_TEST_KERNELS"])

HERE = Path(__file__).resolve().parent
TOKENS, VOCAB = 8, 100


def output_lsb(converted):
    """The scale of the dequantize that makes the converted model's (first) output."""
    (out,) = [n for n in converted.graph.nodes if n.op == "output"]
    first = out.args[0][0] if isinstance(out.args[0], (tuple, list)) else out.args[0]
    assert "dequantize_per_tensor" in str(first.target), first.target
    return float(first.args[1])


def program_of(pte):
    program = deserialize_pte_binary(pte)
    return getattr(program, "program", program)


def execute(pte, inputs):
    return Runtime.get().load_program(pte).load_method("forward").execute(inputs)


class FullyDelegated(unittest.TestCase):
    def setUp(self):
        self.assertIsNone(vkd_executorch.RUNTIME_BACKEND_ERROR)

    def check(self, model, out_shape):
        converted, x, ep = quantized_program(model, (1, 3, 64, 64))
        program, _, pte = lower(ep)
        (plan,) = program.execution_plan
        self.assertEqual(instructions(plan), [("delegate", "VkdBackend")])
        self.assertEqual([o.name for o in plan.operators], [])  # no CPU operator
        (got,) = execute(pte, [x])
        got = got.numpy()
        self.assertEqual(got.shape, out_shape)
        with tempfile.TemporaryDirectory() as tmp:
            payload = Path(tmp) / "payload.vkd"
            payload.write_bytes(program.backend_delegate_data[0].data)
            want = run_blob(payload, x, Path(tmp))
        self.assertEqual(got.tobytes(), want.tobytes())
        ref = converted(x).detach().numpy()
        lsb = output_lsb(converted)
        self.assertLessEqual(np.abs(got - ref).max(), lsb * 1.001)  # 1 LSB: a rounding tie
        self.assertGreaterEqual(accuracy.cosine(ref, got), 0.999)
        self.assertGreater(np.abs(ref).max(), 20 * lsb)  # not a near-constant output

    def test_mobilenet_v2_64(self):
        torch.manual_seed(0)
        self.check(examples_models.torchvision_quantizable(
            "mobilenet_v2", input_size=64, residual_gamma=0.1), (1, 1000))

    def test_tiny_unet_64(self):
        torch.manual_seed(0)
        self.check(examples_models.tiny_unet(), (1, 4, 64, 64))


class ConvsAroundCpuOps(nn.Module):
    """conv, LayerNorm, conv (one delegate: ExecuTorch's aten.native_layer_norm is walked as
    aten.layer_norm), the custom op vkd_test::shift (CPU), conv."""

    def __init__(self):
        super().__init__()
        register_shift()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.LayerNorm(32)
        self.b = nn.Conv2d(8, 8, 3, padding=1)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.norm(torch.relu(self.a(x)))
        return self.c(torch.ops.vkd_test.shift(torch.relu(self.b(y)), 0.5))


class AttentionBlock(nn.Module):
    """conv, then its pixels as tokens through LayerNorm and self-attention (a residual), the
    custom op, back to an image, conv."""

    def __init__(self):
        super().__init__()
        register_shift()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.norm = nn.LayerNorm(16)
        self.attention = nn.MultiheadAttention(16, 4, batch_first=True)
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        n, c, h, w = y.shape
        tokens = self.norm(y.flatten(2).transpose(1, 2))
        attended, _ = self.attention(tokens, tokens, tokens, need_weights=False)
        y = y + torch.ops.vkd_test.shift(attended, 0.5).transpose(1, 2).reshape(n, c, h, w)
        return self.head(y)


def lower_tapped(model, shape):
    """(converted model, input, .pte bytes, the Delegates, the partitioner's report): the .pte
    also returns every delegate's inputs and outputs (delegate_taps)."""
    torch.manual_seed(0)
    converted, x, ep = quantized_program(model, shape)
    printed = []
    edge = to_edge_transform_and_lower(ep, partitioner=[VkdPartitioner(log=printed.append)])
    delegates = tap_delegates(edge)
    return converted, x, edge.to_executorch().buffer, delegates, printed


def run_cpp_runner(pte, x, expect_failure=False):
    """The outputs of vkd_et_runner (with the custom op's kernel library) on `x`; with
    `expect_failure`, the runner's stderr (it must fail)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "m.pte").write_bytes(pte)
        np.save(folder / "x.npy", x.numpy())
        r = subprocess.run([os.environ["VKD_ET_RUNNER"], str(folder / "m.pte"), "--input",
                            str(folder / "x.npy"), "--output-dir", str(folder / "out"),
                            "--kernels", os.environ["VKD_TEST_KERNELS"]],
                           capture_output=True, text=True, timeout=300)
        if expect_failure:
            assert r.returncode == 1, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
            return r.stderr
        assert r.returncode == 0, r.stderr[-2000:]
        count = len(list((folder / "out").glob("output*.npy")))
        return [np.load(folder / "out" / f"output{i}.npy") for i in range(count)]


class PartlyDelegated(unittest.TestCase):
    """Each delegate checked alone on what ExecuTorch handed it (delegate_taps), the C++ runner
    equal to executorch.runtime byte for byte, the model's output close to PyTorch's."""

    def check(self, model, shape):
        converted, x, pte, delegates, printed = lower_tapped(model, shape)
        outputs = [o.numpy() for o in execute(pte, [x])]
        check_delegates(self, delegates, outputs)
        cpp = run_cpp_runner(pte, x)
        self.assertEqual([o.tobytes() for o in cpp], [o.tobytes() for o in outputs])
        ref = converted(x).detach().numpy()
        self.assertGreaterEqual(accuracy.cosine(ref, outputs[0]), 0.999)
        self.assertGreater(np.abs(ref).max(), 20 * output_lsb(converted))
        left = [line for line in printed if line.strip().startswith("left ")]
        self.assertTrue(any("vkd_test.shift: not supported by the backend" in line
                            for line in left), printed)
        return program_of(pte), delegates, printed

    def test_layer_norm_and_custom_op(self):
        program, _, _ = self.check(ConvsAroundCpuOps(), (1, 3, 32, 32))
        self.assertEqual(instructions(program.execution_plan[0]),
                         [("delegate", "VkdBackend"), ("kernel", "vkd_test::shift"),
                          ("delegate", "VkdBackend")])

    def test_attention_block_and_custom_op(self):
        program, delegates, printed = self.check(AttentionBlock(), (1, 3, 8, 8))
        steps = instructions(program.execution_plan[0])
        # The convolutions, the layer norm and the attention (its SDPA kept whole) on the GPU,
        # only the custom op between them on the CPU.
        self.assertEqual(steps, [("delegate", "VkdBackend"), ("kernel", "vkd_test::shift"),
                                 ("delegate", "VkdBackend")])
        (first,) = [line for line in printed if "delegated vkd0" in line]
        self.assertIn("aten::scaled_dot_product_attention x1", first)
        print(f"attention block: {len(delegates)} VkdBackend delegates, "
              f"{sum(1 for s in steps if s[0] == 'kernel')} CPU kernel calls", file=sys.stderr)


class BertEmbeddings(nn.Module):
    """BERT's embedding pattern: word rows by id + position rows (a position_ids buffer), a
    LayerNorm, then a linear."""

    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, 32)
        self.pos = nn.Embedding(TOKENS, 32)
        self.norm = nn.LayerNorm(32)
        self.lin = nn.Linear(32, 16)
        self.register_buffer("position_ids", torch.arange(TOKENS).unsqueeze(0))

    def forward(self, ids):
        return self.lin(self.norm(self.word(ids) + self.pos(self.position_ids)))


class StderrOfThisProcess:
    """What C code of this process (ExecuTorch's ET_LOG) writes to fd 2 inside the block, in
    `.text`."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")
        self.file.close()


class TokenIds(unittest.TestCase):
    """int64 token ids into a delegate that holds the embedding (VkdBackend narrows them)."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        cls.ids = torch.randint(0, VOCAB, (1, TOKENS), generator=gen)
        cls.ids[0, :2] = torch.tensor([0, VOCAB - 1])  # the table's first and last rows
        calibration = [(torch.randint(0, VOCAB, (1, TOKENS), generator=gen),) for _ in range(3)]
        cls.converted = quantize(BertEmbeddings().eval(), (cls.ids,), calibration).converted
        ep = torch.export.export(cls.converted, (cls.ids,))
        cls.program, cls.printed, cls.pte = lower(ep)
        cls.method = Runtime.get().load_program(cls.pte).load_method("forward")

    def test_embedding_delegated_with_int64_ids(self):
        (plan,) = self.program.execution_plan
        self.assertEqual(instructions(plan), [("delegate", "VkdBackend")])
        self.assertEqual([o.name for o in plan.operators], [])  # no CPU operator, no cast
        (delegated,) = [line for line in self.printed if "delegated vkd0" in line]
        self.assertIn("aten::embedding", delegated)
        self.assertIn("VkdPartitioner: 0 node(s) left", "\n".join(self.printed))
        self.assertEqual(self.ids.dtype, torch.int64)
        (got,) = self.method.execute([self.ids])
        got = got.numpy()
        self.assertEqual(got.shape, (1, TOKENS, 16))
        with tempfile.TemporaryDirectory() as tmp:
            payload = Path(tmp) / "payload.vkd"
            payload.write_bytes(self.program.backend_delegate_data[0].data)
            want = run_blob(payload, self.ids, Path(tmp))  # `vkd run` narrows an int64 .npy
        self.assertEqual(got.tobytes(), want.tobytes())
        ref = self.converted(self.ids).detach().numpy()
        lsb = output_lsb(self.converted)
        self.assertLessEqual(np.abs(got - ref).max(), lsb * 1.001)  # 1 LSB: a rounding tie
        self.assertGreaterEqual(accuracy.cosine(ref, got), 0.999)
        self.assertGreater(np.abs(ref).max(), 20 * lsb)  # not a near-constant output
        (cpp,) = run_cpp_runner(self.pte, self.ids)
        self.assertEqual(cpp.tobytes(), got.tobytes())

    def check_refused(self, element, value, message):
        bad = self.ids.clone()
        bad[0, element] = value
        with StderrOfThisProcess() as log, self.assertRaises(RuntimeError):
            self.method.execute([bad])
        self.assertIn(message, log.text)
        self.assertIn(message, run_cpp_runner(self.pte, bad, expect_failure=True))
        (again,) = self.method.execute([self.ids])  # the method runs on
        want = self.converted(self.ids).detach().numpy()
        self.assertLessEqual(np.abs(again.numpy() - want).max(),
                             output_lsb(self.converted) * 1.001)

    def test_id_outside_the_table_is_an_error(self):
        self.check_refused(3, VOCAB, f"input 'ids': element 3 is {VOCAB}, not a row of the "
                           f"embedding table [0, {VOCAB})")
        self.check_refused(5, -1, "input 'ids': element 5 is -1, not a row of the embedding "
                           f"table [0, {VOCAB})")

    def test_id_outside_int32_is_an_error(self):
        self.check_refused(2, 2**40, "input 0 ('ids'): element 2 is 1099511627776, outside "
                           "int32, not a row of the embedding table")


class SentenceAttention(nn.Module):
    """BERT's attention and sentence-transformers' pooling in small: the additive mask made from
    the 0/1 mask in the graph ((1 - keep) * -10000, as SentenceEncoder makes it), q / k / v
    linears split into heads, F.scaled_dot_product_attention with that float mask, the heads
    merged, the output projection, a residual LayerNorm (output 0); the mean over the kept
    tokens, L2-normalised (output 1)."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = (nn.Linear(width, width) for _ in range(4))
        self.norm = nn.LayerNorm(width)

    def forward(self, x, keep):
        b, t, c = x.shape
        additive = ((1.0 - keep) * -10000.0)[:, None, None, :]

        def split(y):
            return y.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)),
                                           attn_mask=additive)
        hidden = self.norm(x + self.out(a.transpose(1, 2).reshape(b, t, c)))
        weights = keep.unsqueeze(-1)
        mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return hidden, F.normalize(mean, p=2, dim=1)


def payload_kernels(payload):
    """The kernel of each dispatch of a delegate payload, as `vkd inspect` prints them."""
    with tempfile.TemporaryDirectory() as tmp:
        blob = Path(tmp) / "payload.vkd"
        blob.write_bytes(payload)
        r = subprocess.run([os.environ["VKD"], "inspect", str(blob)], capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return re.findall(r"^ +node \d+.*?: kernel (\w+)", r.stdout, re.M)


class AttentionKeptWhole(unittest.TestCase):
    """ExecuTorch's edge lowering would decompose the SDPA into bmm / softmax / masking ops and
    F.normalize's norm into pow / sum, which the compiler does not take (they ran on ExecuTorch's
    CPU kernels between a dozen delegates); VkdPartitioner keeps them whole where the compiler
    takes them, so the block is one delegate."""

    def test_attention_and_pooling_in_one_delegate(self):
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(0)
        keep = torch.ones(1, TOKENS)
        keep[0, -3:] = 0.0  # three padding tokens: their scores masked, left out of the mean
        x = torch.randn(1, TOKENS, 32, generator=gen)
        calibration = [(torch.randn(1, TOKENS, 32, generator=gen), keep) for _ in range(2)]
        converted = quantize(SentenceAttention().eval(), (x, keep), calibration).converted
        program, printed, pte = lower(torch.export.export(converted, (x, keep)))
        (plan,) = program.execution_plan
        self.assertEqual(instructions(plan), [("delegate", "VkdBackend")], printed)
        self.assertEqual([o.name for o in plan.operators], [])  # no CPU operator
        (delegated,) = [line for line in printed if "delegated vkd0" in line]
        for op in ("aten::scaled_dot_product_attention x1", "aten::linalg_vector_norm x1"):
            self.assertIn(op, delegated)
        self.assertIn("VkdPartitioner: 0 node(s) left", "\n".join(printed))
        kernels = payload_kernels(program.backend_delegate_data[0].data)
        # The SDPA with its head moves one int8 attention that makes the mask from the 0/1 mask
        # itself (no float element-wise step before it), the pooling one masked mean.
        self.assertEqual(sum("q8ta_attention" in k for k in kernels), 1, kernels)
        self.assertFalse([k for k in kernels if k.startswith("float_elementwise")], kernels)
        self.assertEqual(sum("masked_mean" in k and "normalize" in k for k in kernels), 1,
                         kernels)
        got = [o.numpy() for o in execute(pte, [x, keep])]
        want = vkd_run(program.backend_delegate_data[0].data, [x.numpy(), keep.numpy()])
        self.assertEqual([g.tobytes() for g in got], [w.tobytes() for w in want])
        hidden, pooled = (r.detach().numpy() for r in converted(x, keep))
        lsb = output_lsb(converted)
        self.assertLessEqual(np.abs(got[0] - hidden).max(), lsb * 1.001)  # 1 LSB: a rounding tie
        self.assertGreaterEqual(accuracy.cosine(hidden, got[0]), 0.999)
        self.assertGreater(np.abs(hidden).max(), 20 * lsb)  # not a near-constant output
        # The pooled embedding: a mean of int8 steps, normalised (a step of `hidden` / 5 tokens
        # at most where a tie rounded the other way).
        self.assertLessEqual(np.abs(got[1] - pooled).max(), lsb / 5 * 1.001)
        self.assertAlmostEqual(float(np.linalg.norm(got[1])), 1.0, places=5)


# A float16-only blob (x -> clone -> z, float16), made into a .pte by test_vkd_backend's
# make_pte (its own VkdBackend class, hence a child process without vkdelegate.executorch's),
# then loaded through executorch.runtime with VkdBackend registered.
FLOAT16_GRAPH = {"vkd_graph": 1, "inputs": ["x"], "outputs": ["z"],
                 "values": {"x": {"dtype": "float16", "shape": [1, 4, 5, 6]}},
                 "nodes": [{"op": "aten.clone", "inputs": ["x"], "args": {}, "outputs": ["z"]}]}
LOAD_FLOAT16_PTE = """
import sys
from test_vkd_backend import make_pte
make_pte(sys.argv[2], open(sys.argv[1], 'rb').read(), [1, 4, 5, 6])
import vkdelegate.executorch
from executorch.runtime import Runtime
try:
    Runtime.get().load_program(sys.argv[2]).load_method('forward')
except RuntimeError as e:
    print('RuntimeError:', e)
    sys.exit(3)
"""


class DeviceThatCannotRunAKernel(unittest.TestCase):
    def test_float16_blob_without_float16_is_a_runtime_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "g.json").write_text(json.dumps(FLOAT16_GRAPH))
            r = subprocess.run([os.environ["VKD"], "compile", str(folder / "g.json"), "-o",
                                str(folder / "g.vkd")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([sys.executable, "-c", LOAD_FLOAT16_PTE, str(folder / "g.vkd"),
                                str(folder / "g.pte")], capture_output=True, text=True,
                               timeout=120, cwd=HERE, env=dict(os.environ, VKD_DISABLE_FLOAT16="1"))
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr[-2000:])  # raised, no crash
        self.assertIn("RuntimeError:", r.stdout)
        self.assertIn("VkdBackend: cannot load the delegate blob", r.stderr)
        self.assertIn("is float16, expected float32", r.stderr)


if __name__ == "__main__":
    unittest.main()
