"""The two bindings of run()'s C call (vkdelegate/runtime/_execute.py: the extension module
vkd_execute, and ctypes), without a device: each is bound to a plan whose function is a recorder
written here, with vkd_model_execute's type, that notes what it was handed and fills every
output with its index. Both must hand over exactly the arrays' memory and the plan's tensor
descriptions, return the function's status, and refuse (None, the function not called) every
argument that is not exactly what its tensor takes. Also which binding is chosen at import:
ctypes where the libraries' folder has no extension module, and with a warning where the one
there cannot be loaded."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

from vkdelegate.runtime import TensorSpec, _capi, _execute

F32, I32, I8 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int8)
# Nine inputs and two outputs: more than the extension handles on its stack (8).
INPUTS = tuple(TensorSpec(f"in{i}", shape, dtype) for i, (shape, dtype) in enumerate(
    [((1, 3, 4, 5), F32), ((2, 7), I32), ((16,), I8), ((1, 1, 1, 1), F32), ((3, 3), F32),
     ((4,), I32), ((2, 2, 2), I8), ((5, 1), F32), ((1, 2, 3, 4), I8)]))
OUTPUTS = (TensorSpec("a", (2, 3, 4), F32), TensorSpec("b", (9,), I8))
HANDLE = 0x1234
CODES = {F32: 0, I32: 1, I8: 2}  # vkd_dtype, as vkd_delegate.h numbers it


class Recorder:
    """A C function of vkd_model_execute's type (through ctypes) noting each call."""

    def __init__(self, status=0):
        self.status, self.calls = status, []
        self.function = _execute._CtypesCall._prototype(self.record)

    def record(self, handle, inputs, input_count, outputs, output_count):
        def described(tensors, count):
            return [(t.data, t.bytes, t.dtype, tuple(t.sizes[:t.rank]))
                    for t in (tensors[i] for i in range(count))]
        self.calls.append((handle, described(inputs, input_count),
                           described(outputs, output_count)))
        for index in range(output_count):
            ctypes.memset(outputs[index].data, index + 1, outputs[index].bytes)
        return self.status

    def address(self):
        return ctypes.cast(self.function, ctypes.c_void_p).value


def arrays(specs, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-100, 100, s.shape).astype(s.dtype) for s in specs]


def described(values, specs):
    """What the function must see for `values`: address, bytes, dtype code, sizes."""
    return [(v.ctypes.data, v.nbytes, CODES[s.dtype], s.shape) for v, s in zip(values, specs)]


class BindingTest(unittest.TestCase):
    def bindings(self):
        found = [("ctypes", _execute.ctypes_call)]
        if _execute.BINDING == "extension":
            found.append(("extension", _execute.extension_call))
        return found

    def bound(self, bind, status=0):
        recorder = Recorder(status)
        plan = _execute.make_plan(recorder.address(), HANDLE, INPUTS, OUTPUTS)
        self.addCleanup(lambda: (recorder, plan))  # alive while the test calls through them
        return recorder, bind(plan)

    def test_hands_over_the_arrays_memory(self):
        for name, bind in self.bindings():
            with self.subTest(binding=name):
                recorder, call = self.bound(bind)
                # Output a and input 3 side by side in one block: adjacent, not overlapping.
                block = np.zeros(25, np.float32)
                inputs = arrays(INPUTS)
                inputs[3] = block[24:].reshape(1, 1, 1, 1)
                inputs[4].flags.writeable = False  # read-only inputs are fine
                inputs = tuple(inputs)
                outputs = [block[:24].reshape(2, 3, 4), np.zeros(9, np.int8)]
                self.assertEqual(call(inputs, outputs), 0)
                self.assertEqual(recorder.calls, [(HANDLE, described(inputs, INPUTS),
                                                   described(outputs, OUTPUTS))])
                for index, output in enumerate(outputs):
                    self.assertTrue((output.view(np.uint8) == index + 1).all())
                # A tuple of outputs, and the function's status returned as it is.
                recorder, call = self.bound(bind, status=5)
                self.assertEqual(call(list(inputs), tuple(outputs)), 5)
                self.assertEqual(len(recorder.calls), 1)

    def test_refuses_what_its_tensor_does_not_take(self):
        class Subclass(np.ndarray):
            pass
        inputs, outputs = arrays(INPUTS), [np.zeros(s.shape, s.dtype) for s in OUTPUTS]
        read_only = outputs[1].copy()
        read_only.flags.writeable = False
        block = np.zeros(24, np.float32)  # output a, and input 3 on its last element
        over_input = inputs[:3] + [block[23:].reshape(1, 1, 1, 1)] + inputs[4:]
        cases = {
            "an input short": (inputs[:-1], outputs),
            "an output more": (inputs, outputs + [outputs[0].copy()]),
            "another dtype": ([inputs[0].astype(np.float64)] + inputs[1:], outputs),
            "int32 for int8": (inputs[:2] + [inputs[2].astype(np.int32)] + inputs[3:], outputs),
            "another shape": ([inputs[0].reshape(1, 3, 5, 4)] + inputs[1:], outputs),
            "strided": ([np.asfortranarray(inputs[0])] + inputs[1:], outputs),
            "big-endian": ([inputs[0].astype(">f4")] + inputs[1:], outputs),
            "a subclass": ([inputs[0].view(Subclass)] + inputs[1:], outputs),
            "a list": ([inputs[0].tolist()] + inputs[1:], outputs),
            "a memoryview": ([memoryview(inputs[0])] + inputs[1:], outputs),
            "outputs an array": (inputs, outputs[0]),
            "a read-only output": (inputs, [outputs[0], read_only]),
            "an output over an input": (over_input, [block.reshape(2, 3, 4), outputs[1]]),
            "outputs over each other": (inputs, [outputs[0],
                                                 outputs[0].reshape(-1).view(np.int8)[:9]]),
        }
        for name, bind in self.bindings():
            for case, (ins, outs) in cases.items():
                with self.subTest(binding=name, case=case):
                    recorder, call = self.bound(bind)
                    self.assertIsNone(call(tuple(ins), outs))
                    self.assertEqual(recorder.calls, [])

    def test_the_extension_checks_its_arguments(self):
        if _execute.BINDING != "extension":
            self.skipTest("the extension module is not loaded")  # BindingChoiceTest says if
        execute = _execute._extension.execute
        with self.assertRaises(TypeError):
            execute(0, ())
        with self.assertRaises(ValueError):
            execute(0, (), [])
        self.assertEqual(_execute._extension.PLAN_SIZE, ctypes.sizeof(_execute.CallPlan))


class ImportChoiceTest(unittest.TestCase):
    """Which binding a fresh Python chooses, with VKD_LIBRARY_DIR a folder holding the build's
    libraries and (not) an extension module."""

    def folder_with_libraries(self):
        folder = Path(tempfile.mkdtemp(prefix="vkd_bindings_"))
        self.addCleanup(shutil.rmtree, folder)
        build = Path(os.environ["VKD_LIBRARY_DIR"])
        for name in ("libvkdmodel.so.0", "libvkdelegate.so.0"):
            (folder / name).symlink_to((build / name).resolve())
        return folder

    def choose(self, folder):
        code = ("import warnings; warnings.simplefilter('always')\n"
                "from vkdelegate.runtime import _execute, _capi\n"
                "print(_execute.BINDING); _capi.library()\n")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(os.environ, VKD_LIBRARY_DIR=str(folder)))

    def test_ctypes_without_the_extension_module(self):
        result = self.choose(self.folder_with_libraries())
        self.assertEqual((result.returncode, result.stdout, result.stderr), (0, "ctypes\n", ""))

    def test_ctypes_and_a_warning_for_one_that_cannot_be_loaded(self):
        folder = self.folder_with_libraries()
        (folder / _execute.EXTENSION_FILE).write_bytes(b"not a shared object")
        result = self.choose(folder)
        self.assertEqual((result.returncode, result.stdout), (0, "ctypes\n"), result.stderr)
        self.assertIn(f"RuntimeWarning: vkdelegate.runtime: {folder / _execute.EXTENSION_FILE} "
                      "not used (", result.stderr)
        self.assertIn("); calling the library through ctypes", result.stderr)


if __name__ == "__main__":
    unittest.main()
