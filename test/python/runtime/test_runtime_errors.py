"""Every way vkdelegate.runtime refuses: a model that cannot be loaded (missing, a folder, not a
blob, a blob with one byte changed, a malformed plan, no such device), options it does not know
or of the wrong type, run() arguments of the wrong count, dtype, shape, kind or device, a closed
program, a library it cannot find. Each is one exception with a clear message (VkdError with the
library's status and words, TypeError / ValueError for Python-side misuse), never a crash."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

import runtime_models as models
from vkdelegate import _native, runtime
from vkdelegate.runtime import Status, VkdError, _execute


class LoadErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="vkd_runtime_errors_"))
        cls.blob = models.compile_graph(models.TWO_IN_TWO_OUT, cls.dir, "two")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def assert_load_fails(self, path, message, status=Status.INVALID_ARGUMENT, **options):
        with self.assertRaises(VkdError) as caught:
            runtime.load(path, **options)
        self.assertEqual(caught.exception.status, status)
        self.assertEqual(str(caught.exception), message)
        self.assertEqual(caught.exception.message, message)

    def test_unreadable_models(self):
        missing = self.dir / "missing.vkd"
        self.assert_load_fails(missing, f"cannot read model file '{missing}': no such file")
        plan = self.dir / "missing.partition.json"
        self.assert_load_fails(plan, f"cannot read partition plan '{plan}': no such file")
        self.assert_load_fails(self.dir, f"cannot read model file '{self.dir}': it is a directory")
        junk = self.dir / "junk.vkd"
        junk.write_bytes(b"not a blob" * 20)
        self.assert_load_fails(junk, f"cannot read model file '{junk}': it is not a vkdelegate "
                                     "blob")

    def test_a_changed_byte_is_caught(self):
        data = bytearray(self.blob.read_bytes())
        data[len(data) // 2] ^= 0x40
        changed = self.dir / "changed.vkd"
        changed.write_bytes(bytes(data))
        with self.assertRaises(VkdError) as caught:
            runtime.load(changed)
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)
        self.assertIn("checksum", str(caught.exception))

    def test_malformed_plan(self):
        plan = self.dir / "bad.partition.json"
        plan.write_text('{"steps": ')
        with self.assertRaises(VkdError) as caught:
            runtime.load(plan)
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)
        self.assertTrue(str(caught.exception).startswith(f"{plan}: malformed JSON"))

    def test_no_such_device(self):
        with self.assertRaises(VkdError) as caught:
            runtime.load(self.blob, device="no such gpu")
        self.assertIn("no such gpu", str(caught.exception))
        with self.assertRaises(VkdError) as caught:
            runtime.load(self.blob, device=99)
        self.assertIn("99", str(caught.exception))

    def test_options(self):
        with self.assertRaises(TypeError) as caught:
            runtime.load(self.blob, validaton=True)
        self.assertEqual(str(caught.exception),
                         "load() got unknown option(s) validaton; the options are device and "
                         "validation, profiling, pipeline_cache_file, constant_batch_bytes, "
                         "gpu_timeout_ms, weights")
        for options, error in [({"validation": 1}, TypeError), ({"profiling": "yes"}, TypeError),
                               ({"gpu_timeout_ms": 1.5}, TypeError),
                               ({"gpu_timeout_ms": 0}, ValueError),
                               ({"gpu_timeout_ms": 2**32}, ValueError),
                               ({"constant_batch_bytes": -1}, ValueError),
                               ({"pipeline_cache_file": 3}, TypeError), ({"weights": 3}, TypeError),
                               ({"device": True}, TypeError), ({"device": -1}, ValueError),
                               ({"device": 1.0}, TypeError)]:
            with self.subTest(options=options), self.assertRaises(error) as caught:
                runtime.load(self.blob, **options)
            self.assertIn(next(iter(options)), str(caught.exception))

    def test_valid_options_load(self):
        cache = self.dir / "pipelines.bin"
        with runtime.load(self.blob, device=0, validation=True, profiling=True,
                          pipeline_cache_file=cache, constant_batch_bytes=1 << 20,
                          gpu_timeout_ms=60000) as program:
            program.run(models.random_input(1), models.random_input(2))
            self.assertEqual(program.validation_message_count, 0)
        self.assertTrue(cache.is_file())  # the program wrote its pipeline cache there


class RunErrorsTest(unittest.TestCase):
    bind = None  # the binding run() chose; a subclass names another

    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="vkd_runtime_errors_"))
        cls.program = runtime.load(models.compile_graph(models.TWO_IN_TWO_OUT, cls.dir, "two"))
        if cls.bind is not None:
            cls.program._call = cls.bind(cls.program._plan)

    @classmethod
    def tearDownClass(cls):
        cls.program.close()
        shutil.rmtree(cls.dir)

    def assert_run_fails(self, args, message, out=None):
        with self.assertRaises(VkdError) as caught:
            self.program.run(*args, out=out)
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)
        self.assertEqual(str(caught.exception), message)

    def test_argument_errors(self):
        x = models.random_input(1)
        self.assert_run_fails([x], "run() takes 2 input(s) (x, y), got 1")
        self.assert_run_fails([x, x, x], "run() takes 2 input(s) (x, y), got 3")
        self.assert_run_fails([x.astype(np.float64), x],
                              "input 0 'x' is float32, got float64")
        self.assert_run_fails([x, x[..., :9]], "input 1 'y' has shape [1,4,6,9], the model was "
                                               "compiled for [1,4,6,10]")
        self.assert_run_fails([x, x[0]], "input 1 'y' has shape [4,6,10], the model was "
                                         "compiled for [1,4,6,10]")
        self.assert_run_fails([x.astype(">f4"), x], "input 0 'x' is float32, got >f4")
        with self.assertRaises(TypeError) as caught:
            self.program.run(x, x.tolist())
        self.assertEqual(str(caught.exception),
                         "input 1 'y': expected a numpy array or a torch CPU tensor, got list")
        self.assertEqual(self.program.last_timings, [])  # a failed run leaves none

    def test_out_errors(self):
        import torch
        x, y = models.random_input(1), models.random_input(2)
        good = [np.full(s.shape, 7.0, s.dtype) for s in self.program.outputs]
        shared = np.zeros(good[0].size + good[1].size - 10, np.float32)
        overlapping = [shared[:good[0].size].reshape(good[0].shape),
                       shared[-good[1].size:].reshape(good[1].shape)]
        read_only = good[0].copy()
        read_only.flags.writeable = False
        strided = np.zeros(good[0].shape[:3] + (20,), np.float32)[..., ::2]
        cases = [
            ([good[0]], "run(): out= takes 2 array(s) (sum, pooled), got 1"),
            ([good[0].astype(np.float64), good[1]], "out[0] 'sum' is float32, got float64"),
            ([good[0], good[1][..., :4]], "out[1] 'pooled' has shape [1,4,3,4], the model was "
                                          "compiled for [1,4,3,5]"),
            ([read_only, good[1]], "out[0] 'sum' is read-only"),
            ([strided, good[1]], "out[0] 'sum' is not C-contiguous; the outputs are written "
                                 "whole"),
            ([x, good[1]], "out[0] 'sum' shares memory with input 0 'x'"),
            ([good[0], y[:, :, :3, :5]], "out[1] 'pooled' is not C-contiguous; the outputs are "
                                         "written whole"),
            (overlapping, "out[1] 'pooled' shares memory with out[0] 'sum'"),
            ([torch.zeros(good[0].shape, requires_grad=True), good[1]],
             "out[0] 'sum' requires grad; pass one that does not (.detach())"),
            ([torch.zeros(good[0].shape, dtype=torch.float64), good[1]],
             "out[0] 'sum' is float32, got torch.float64"),
            ([torch.zeros(strided.shape[:3] + (20,))[..., ::2], good[1]],
             "out[0] 'sum' is not contiguous; the outputs are written whole"),
        ]
        def contents(o):
            return (o.detach().numpy() if isinstance(o, torch.Tensor) else o).tobytes()

        for out, message in cases:
            with self.subTest(message=message):
                before = [contents(o) for o in out]
                self.assert_run_fails([x, y], message, out=out)
                # Nothing the caller gave is written to.
                self.assertEqual([contents(o) for o in out], before)
        for out in (good[0], "sum"):
            with self.subTest(out=out), self.assertRaises(TypeError) as caught:
                self.program.run(x, y, out=out)
            self.assertEqual(str(caught.exception), "run(): out= takes a list or tuple of "
                             f"arrays, one per output, got {type(out).__name__}")
        with self.assertRaises(TypeError) as caught:
            self.program.run(x, y, out=[good[0], good[1].tolist()])
        self.assertEqual(str(caught.exception),
                         "out[1] 'pooled': expected a numpy array or a torch CPU tensor, got list")
        self.assertEqual(self.program.last_timings, [])  # a failed run leaves none

    def test_tensor_errors(self):
        import torch
        x = torch.from_numpy(models.random_input(1))
        self.assert_run_fails([x, x.double()], "input 1 'y' is float32, got torch.float64")
        self.assert_run_fails([x, x.to(torch.bfloat16)],
                              "input 1 'y' is float32, got torch.bfloat16")
        self.assert_run_fails([x.to("meta"), x],
                              "input 0 'x' is a tensor on meta; pass a CPU tensor (.cpu())")
        self.assert_run_fails([x, x[:, :2]], "input 1 'y' has shape [1,2,6,10], the model was "
                                             "compiled for [1,4,6,10]")

    def test_a_good_run_after_errors(self):
        x, y = models.random_input(3), models.random_input(4)
        self.assert_run_fails([x], "run() takes 2 input(s) (x, y), got 1")
        outputs = self.program.run(x, y)
        for actual, expected in zip(outputs, models.reference_two_in_two_out(x, y)):
            self.assertEqual(actual.tobytes(), expected.tobytes())
        self.assertEqual(self.program.validation_message_count, 0)

    def test_closed_program(self):
        program = runtime.load(self.program.path)
        program.close()
        x = models.random_input(1)
        for call in (lambda: program.run(x, x), lambda: program.last_timings,
                     lambda: program.device):
            with self.assertRaises(VkdError) as caught:
                call()
            self.assertEqual(str(caught.exception), f"the program of {program.path} is closed")


@unittest.skipIf(_execute.BINDING != "extension", "RunErrorsTest ran through ctypes already")
class CtypesRunErrorsTest(RunErrorsTest):
    """RunErrorsTest again, through the ctypes binding: it refuses the same arguments."""
    bind = staticmethod(_execute.ctypes_call)


class LibraryLookupTest(unittest.TestCase):
    def run_python(self, code, library_dir):
        env = dict(os.environ, VKD_LIBRARY_DIR=library_dir)
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env)

    def test_library_dir_is_the_variable_when_set(self):
        folder = os.environ["VKD_LIBRARY_DIR"]  # CTest points it at the build
        self.assertEqual(_native.library_dir(), Path(folder))
        self.assertEqual(_native.vkd_binary(), Path(folder) / "vkd")

    def test_missing_library_is_one_clear_error(self):
        empty = tempfile.mkdtemp(prefix="vkd_no_library_")
        self.addCleanup(shutil.rmtree, empty)
        result = self.run_python(
            "from vkdelegate import runtime\n"
            "try:\n    runtime.load('m.vkd')\n"
            "except RuntimeError as e:\n    print(type(e).__name__, e)\n", empty)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), f"LibraryNotFoundError libvkdmodel.so.0 not "
                                                f"found in {empty} (VKD_LIBRARY_DIR)")


if __name__ == "__main__":
    unittest.main()
