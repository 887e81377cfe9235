"""vkdelegate.runtime end to end on the default device (lavapipe in CI) under the validation
layer (CTest sets VKD_VALIDATION=1): a blob and a partition plan compiled here from graph IR
(runtime_models.py), run with numpy arrays and torch tensors, into new arrays and into out=;
every output equal, byte for byte, to `vkd run`'s and to a numpy reference written for the test;
the specs, timings and GPU profile the program describes; zero validation messages. Every test
runs through the binding run() chose at import and, where that is the extension module, again
through ctypes (CtypesBindingTest)."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

import numpy as np

import runtime_models as models
from vkdelegate import runtime
from vkdelegate.runtime import _execute


class RuntimeTest(unittest.TestCase):
    bind = None  # the binding run() chose; a subclass names another

    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="vkd_runtime_test_"))
        cls.blob = models.compile_graph(models.TWO_IN_TWO_OUT, cls.dir, "two")
        cls.plan = models.compile_graph(models.POOL_ON_HOST, cls.dir, "pool", partition=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def load(self, path, **options):
        program = runtime.load(path, **options)
        self.addCleanup(self.close_checked, program)
        if self.bind is not None:
            program._call = self.bind(program._plan)
        return program

    def close_checked(self, program):
        self.assertEqual(program.validation_message_count, 0)
        program.close()

    def assert_same_bytes(self, actual, expected):
        self.assertEqual(len(actual), len(expected))
        for a, e in zip(actual, expected):
            self.assertEqual((a.dtype, a.shape), (e.dtype, e.shape))
            self.assertEqual(a.tobytes(), e.tobytes())

    def test_blob_specs(self):
        program = self.load(self.blob)
        f32 = np.dtype(np.float32)
        self.assertEqual(program.inputs, (runtime.TensorSpec("x", models.SHAPE, f32),
                                          runtime.TensorSpec("y", models.SHAPE, f32)))
        self.assertEqual(program.outputs, (runtime.TensorSpec("sum", models.SHAPE, f32),
                                           runtime.TensorSpec("pooled", (1, 4, 3, 5), f32)))
        self.assertTrue(program.device)
        self.assertEqual(program.last_timings, [])  # before the first run

    def test_blob_with_numpy_matches_vkd_run_and_the_reference(self):
        program = self.load(self.blob)
        for seed in (1, 2):
            x, y = models.random_input(seed), models.random_input(seed + 10)
            outputs = program.run(x, y)
            self.assertTrue(all(type(o) is np.ndarray for o in outputs))
            self.assert_same_bytes(outputs, models.reference_two_in_two_out(x, y))
            cli = models.vkd_run(self.blob, {"x": x, "y": y}, self.dir / f"cli_{seed}")
            self.assert_same_bytes(outputs, [cli["sum"], cli["pooled"]])

    def test_each_run_returns_its_own_arrays(self):
        program = self.load(self.blob)
        x, y = models.random_input(3), models.random_input(4)
        first = program.run(x, y)
        kept = [a.copy() for a in first]
        second = program.run(-x, y)
        self.assert_same_bytes(first, kept)  # not overwritten by the second run
        self.assert_same_bytes(second, models.reference_two_in_two_out(-x, y))

    def test_out_writes_into_the_given_arrays(self):
        program = self.load(self.blob)
        out = [np.full(s.shape, np.nan, s.dtype) for s in program.outputs]
        for seed in (13, 14):
            x, y = models.random_input(seed), models.random_input(seed + 10)
            returned = program.run(x, y, out=out)
            self.assertEqual([id(a) for a in returned], [id(a) for a in out])
            self.assert_same_bytes(out, models.reference_two_in_two_out(x, y))
        # A tuple, and arrays the outputs of a plan are written to.
        plan = self.load(self.plan)
        out = (np.zeros(plan.outputs[0].shape, np.float32),)
        x = models.random_input(15)
        self.assertIs(plan.run(x, out=out)[0], out[0])
        self.assert_same_bytes(out, models.reference_pool_on_host(x))

    def test_out_takes_tensors(self):
        import torch
        program = self.load(self.blob)
        out = [torch.full(s.shape, float("nan")) for s in program.outputs]
        x, y = models.random_input(16), models.random_input(17)
        returned = program.run(torch.from_numpy(x), y, out=out)
        self.assertTrue(all(r is o for r, o in zip(returned, out)))
        self.assert_same_bytes([o.numpy() for o in out], models.reference_two_in_two_out(x, y))

    def test_threads_share_a_program(self):
        program = self.load(self.blob)
        results, errors = {}, []

        def work(seed):
            try:
                for k in range(2):
                    x, y = models.random_input(seed + k), models.random_input(seed + k + 50)
                    results[seed, k] = (program.run(x, y), models.reference_two_in_two_out(x, y))
            except Exception as error:  # reported by the main thread
                errors.append(error)
        threads = [threading.Thread(target=work, args=(100 * t,)) for t in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 6)
        for actual, expected in results.values():
            self.assert_same_bytes(actual, expected)

    def test_blob_with_torch_gives_tensors(self):
        import torch
        program = self.load(self.blob)
        x, y = models.random_input(5), models.random_input(6)
        outputs = program.run(torch.from_numpy(x), torch.from_numpy(y))
        self.assertTrue(all(type(o) is torch.Tensor for o in outputs))
        self.assert_same_bytes([o.numpy() for o in outputs], models.reference_two_in_two_out(x, y))
        # Mixed, a tensor that requires grad, a strided one and a lazily negated view.
        xt = torch.from_numpy(x).requires_grad_(True)
        wide = torch.from_numpy(np.concatenate([y, y], axis=3))[..., ::2]
        self.assertFalse(wide.is_contiguous())
        outputs = program.run(xt, wide)
        self.assert_same_bytes([o.numpy() for o in outputs],
                               models.reference_two_in_two_out(x, np.ascontiguousarray(
                                   np.concatenate([y, y], axis=3)[..., ::2])))
        negated = torch._neg_view(torch.from_numpy(x))
        self.assertTrue(negated.is_neg())
        outputs = program.run(negated, y)
        self.assert_same_bytes([o.numpy() for o in outputs],
                               models.reference_two_in_two_out(-x, y))

    def test_numpy_views_and_read_only_arrays(self):
        program = self.load(self.blob)
        x, y = models.random_input(7), models.random_input(8)
        transposed = np.ascontiguousarray(np.swapaxes(x, 2, 3)).swapaxes(2, 3)  # == x, strided
        self.assertFalse(transposed.flags.c_contiguous)
        y.flags.writeable = False
        self.assert_same_bytes(program.run(transposed, y), models.reference_two_in_two_out(x, y))

    def test_torch_is_imported_only_when_a_tensor_is_passed(self):
        script = ("import sys, numpy as np; from vkdelegate import runtime; "
                  f"p = runtime.load({str(self.blob)!r}); "
                  "p.run(*(np.zeros(s.shape, s.dtype) for s in p.inputs)); "
                  "print('torch' in sys.modules)")
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                env=dict(os.environ), check=True)
        self.assertEqual(result.stdout.strip(), "False")

    def test_profile_of_the_last_run(self):
        program = self.load(self.blob)
        program.run(models.random_input(9), models.random_input(10))
        (step,) = program.last_timings
        self.assertEqual((step.step, step.place), (0, "gpu"))
        self.assertEqual(step.label, f"step 0 (GPU {self.blob})")
        self.assertGreater(step.wall_us, 0.0)
        ops = [d.op for d in program.last_profile]
        self.assertEqual(ops, ["q8ta_quantize", "q8ta_quantize", "q8ta_add", "q8ta_dequantize",
                               "q8ta_max_pool2d", "q8ta_dequantize"])
        self.assertEqual(program.last_profile, list(step.dispatches))
        for d in program.last_profile:
            self.assertTrue(d.kernel.startswith(d.op.split("_")[0]), d)
            self.assertGreaterEqual(d.gpu_us, 0.0)
            self.assertIn("out: ", d.tensors)
        unprofiled = self.load(self.blob, profiling=False)
        unprofiled.run(models.random_input(9), models.random_input(10))
        self.assertEqual(len(unprofiled.last_timings), 1)
        self.assertEqual(unprofiled.last_profile, [])

    def test_partition_plan(self):
        program = self.load(self.plan)
        self.assertEqual([s.name for s in program.inputs], ["x"])
        self.assertEqual(program.outputs[0].shape, (1, 4, 3, 5))
        for seed in (11, 12):
            x = models.random_input(seed)
            outputs = program.run(x)
            self.assert_same_bytes(outputs, models.reference_pool_on_host(x))
            cli = models.vkd_run(self.plan, {"x": x}, self.dir / f"plan_cli_{seed}")
            self.assert_same_bytes(outputs, [cli["y"]])
        timings = program.last_timings
        self.assertEqual([(t.step, t.place) for t in timings], [(0, "gpu"), (1, "host"),
                                                                 (2, "gpu")])
        self.assertEqual(timings[1].label, "step 1 (host node 2 (aten.max_pool2d))")
        self.assertEqual(timings[1].dispatches, ())
        self.assertTrue(timings[0].dispatches and timings[2].dispatches)
        self.assertEqual({d.step for d in program.last_profile}, {0, 2})

    def test_context_manager_closes(self):
        with runtime.load(self.blob) as program:
            program.run(models.random_input(1), models.random_input(2))
            self.assertEqual(program.validation_message_count, 0)
        self.assertIn("closed", repr(program))
        program.close()  # again: nothing happens


@unittest.skipIf(_execute.BINDING != "extension", "RuntimeTest ran through ctypes already")
class CtypesBindingTest(RuntimeTest):
    """RuntimeTest again, through the ctypes binding, the fallback where the extension module
    is not built or cannot be loaded."""
    bind = staticmethod(_execute.ctypes_call)


class BindingChoiceTest(unittest.TestCase):
    def test_the_extension_module_serves_where_it_is_built(self):
        # CTest says whether this build made it (python/CMakeLists.txt: Python headers found).
        expected = {"1": "extension", "0": "ctypes"}[os.environ["VKD_EXPECT_EXTENSION"]]
        self.assertEqual(_execute.BINDING, expected)


if __name__ == "__main__":
    unittest.main()
