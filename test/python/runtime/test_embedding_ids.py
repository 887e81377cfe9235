"""Token ids and embeddings end to end (issue 35): a small model with BERT's embedding pattern
(nn.Embedding(100, 32) word rows + a position nn.Embedding over a position_ids buffer, added,
then a Linear) quantized with vkdelegate.export.quantize, its ids an int64 graph input as torch
gives them. `vkd compile --partition` must put everything on the GPU (no host step: the word
rows become q8ta_embedding, the add of the constant position rows q8ta_add); the Python runtime
must take int64 ids (numpy and torch), and int32 ones, and give the converted model's output
within one output step; `vkd run` an int64 .npy the same. An id outside the table is one clear
error (VkdError INVALID_ARGUMENT; vkd run exit 2), as is an id outside int32. Validation layer on
(CTest sets VKD_VALIDATION=1), zero messages."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vkdelegate import runtime
from vkdelegate.export import quantize, safetensors, to_graph_ir
from vkdelegate.export.ir import to_json_text
from vkdelegate.runtime.errors import Status, VkdError

TOKENS, VOCAB = 8, 100


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, 32)
        self.pos = nn.Embedding(TOKENS, 32)
        self.lin = nn.Linear(32, 8)
        self.register_buffer("position_ids", torch.arange(TOKENS).unsqueeze(0))

    def forward(self, ids):
        return self.lin(self.word(ids) + self.pos(self.position_ids))


def output_step(converted):
    """The scale of the dequantize that gives the output."""
    (out,) = [n for n in converted.graph.nodes if n.op == "output"]
    node = out.args[0][0] if isinstance(out.args[0], (tuple, list)) else out.args[0]
    assert "dequantize_per_tensor" in str(node.target), node.target
    return float(node.args[1])


class EmbeddingIdsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="vkd_embedding_ids_"))
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        cls.ids = torch.randint(0, VOCAB, (1, TOKENS), generator=gen)
        cls.ids[0, :2] = torch.tensor([0, VOCAB - 1])  # the table's first and last rows
        calibration = [(torch.randint(0, VOCAB, (1, TOKENS), generator=gen),) for _ in range(3)]
        cls.converted = quantize(Embeddings().eval(), (cls.ids,), calibration).converted
        graph, tensors = to_graph_ir(cls.converted, (cls.ids,), name="emb")
        assert graph["values"]["ids"]["dtype"] == "int64"
        (cls.dir / "m.json").write_text(to_json_text(graph))
        safetensors.save(str(cls.dir / "m.safetensors"), tensors)
        done = subprocess.run([os.environ["VKD"], "compile", str(cls.dir / "m.json"), "--weights",
                               str(cls.dir / "m.safetensors"), "--partition", "--report", "-o",
                               str(cls.dir / "m.vkd")], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        cls.report = done.stdout
        cls.plan = cls.dir / "m.partition.json"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def load(self):
        program = runtime.load(str(self.plan))
        self.addCleanup(program.close)
        self.addCleanup(lambda: self.assertEqual(program.validation_message_count, 0))
        return program

    def assert_matches_pytorch(self, got):
        want = self.converted(self.ids).detach().numpy()
        step = output_step(self.converted)
        self.assertEqual(got.shape, want.shape)
        self.assertGreater(np.abs(want).max(), 10 * step)  # not a constant output
        self.assertLessEqual(np.abs(np.asarray(got) - want).max(), step * 1.001)  # one step

    def test_everything_runs_on_the_gpu(self):
        plan = json.loads(self.plan.read_text())
        self.assertEqual([s for s in plan["steps"] if "delegate" not in s], [],
                         self.report)
        self.assertIn("into q8ta_embedding 'embedding_q'", self.report)
        self.assertIn("dq, dq -> aten.add.Tensor -> q (node", self.report)
        self.assertIn("into q8ta_add 'add_q'", self.report)

    def test_int64_and_int32_ids_give_pytorchs_output(self):
        program = self.load()
        self.assertEqual(program.inputs[0].dtype, np.dtype(np.int32))
        for ids in (self.ids, self.ids.numpy(), self.ids.numpy().astype(np.int32)):
            (got,) = program.run(ids)
            self.assert_matches_pytorch(got)

    def test_vkd_run_takes_an_int64_npy(self):
        np.save(self.dir / "ids.npy", self.ids.numpy())
        self.assertEqual(np.load(self.dir / "ids.npy").dtype, np.int64)
        out = self.dir / "out"
        run = subprocess.run([os.environ["VKD"], "run", str(self.plan), "--input",
                              f"ids={self.dir / 'ids.npy'}", "--output-dir", str(out)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        (result,) = sorted(out.glob("*.npy"))
        self.assert_matches_pytorch(np.load(result))

    def test_an_id_outside_the_table_is_one_clear_error(self):
        program = self.load()
        bad = self.ids.clone()
        bad[0, 5] = VOCAB
        with self.assertRaises(VkdError) as caught:
            program.run(bad)
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)
        self.assertIn(f"element 5 is {VOCAB}, not a row of the embedding table [0, {VOCAB})",
                      str(caught.exception))
        huge = self.ids.clone()
        huge[0, 3] = 1 << 40
        with self.assertRaises(VkdError) as caught:
            program.run(huge)
        self.assertIn(f"element 3 is {1 << 40}, outside int32", str(caught.exception))
        (got,) = program.run(self.ids)  # the program still runs
        self.assert_matches_pytorch(got)
        np.save(self.dir / "bad.npy", bad.numpy())
        run = subprocess.run([os.environ["VKD"], "run", str(self.plan), "--input",
                              f"ids={self.dir / 'bad.npy'}", "--output-dir",
                              str(self.dir / "bad_out")], capture_output=True, text=True)
        self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
        self.assertIn(f"element 5 is {VOCAB}, not a row of the embedding table", run.stderr)


if __name__ == "__main__":
    unittest.main()
