"""Every kind of user error the exporter CLI can meet (run by CTest `python_exporter`): each must
end in exit status 2 and exactly one line on stderr naming the problem, never a traceback, and
leave nothing behind (an output folder the run created is removed again; existing files are
kept). The cases run cli.main in this process (torch is imported once); two run the real
`python3 -m vkdelegate.export` to prove the process's exit status and stderr. An object array
in an .npz would, if unpickled, create a file: it must not appear.
"""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

from vkdelegate.export import cli

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "cli_models.py")
SMALL = ["--input-shape", "1,3,8,8", "--calibration", "random:1", "--observer", "minmax"]


def model(factory):
    return ["--model", f"{MODELS}:{factory}"]


def run_cli(argv):
    """cli.main in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


class _Trap:
    """Unpickled, it creates the file `path` (np.load with allow_pickle=True would)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def write_zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def write_npy_header(path, header, data=b""):
    """A .npy file with a header of our own (format 1.0), padded as numpy pads it."""
    text = header + " " * (-(10 + len(header) + 1) % 64) + "\n"
    write(path, b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + data)


class UserErrorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.file = os.path.join(d, "a_file")
        write(cls.file, b"not a folder\n")
        cls.cal = {}

        def folder(label, files):
            path = os.path.join(d, "cal_" + label)
            os.mkdir(path)
            for name, write in files.items():
                write(os.path.join(path, name))
            cls.cal[label] = path

        good = np.zeros((1, 3, 8, 8), np.float32)
        folder("shape", {"a.npy": lambda p: np.save(p, good),
                         "b.npy": lambda p: np.save(p, np.zeros((1, 3, 9, 8), np.float32))})
        folder("complex", {"a.npy": lambda p: np.save(p, good.astype(np.complex64))})
        folder("text", {"a.npy": lambda p: write(p, b"0.5 0.25\n")})
        folder("object", {"a.npy": lambda p: np.save(p, np.array([{"a": 1}], dtype=object),
                                                     allow_pickle=True)})
        folder("strings", {"a.npy": lambda p: np.save(p, np.array(["abc", "de"]))})
        folder("empty", {"notes.txt": lambda p: write(p, b"no arrays here\n")})
        folder("truncated", {"a.npy": lambda p: write(p, _npy_bytes(good)[:-10])})
        folder("huge_header", {"a.npy": lambda p: write_npy_header(
            p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 100000, 100000), }")})
        folder("bad_header", {"a.npy": lambda p: write_npy_header(p, "{'descr': <f4 !!!")})
        folder("nan", {"a.npy": lambda p: np.save(p, np.where(np.arange(192) % 7 == 0, np.nan,
                                                              0.5).reshape(1, 3, 8, 8))})
        folder("fifo", {"a.npy": os.mkfifo})  # opening it would hang
        folder("two_npy", {"a.npy": lambda p: np.save(p, good)})
        folder("mixed", {"a.npy": lambda p: np.save(p, good),
                         "b.npz": lambda p: np.savez(p, x=good)})
        x, y = good, np.zeros((1, 4, 8, 8), np.float32)
        folder("npz_shape", {"a.npz": lambda p: np.savez(p, x=x, y=np.zeros((1, 4, 8, 9)))})
        ids = np.array([[1, 2, 3, 4]], np.int64)
        feats = np.zeros((1, 4, 8), np.float32)
        folder("npz_float_ids", {"a.npz": lambda p: np.savez(p, input_ids=ids.astype(np.float32),
                                                             feats=feats)})
        cls.npz = {}

        def npz(label, write_it):
            path = os.path.join(d, label + ".npz")
            write_it(path)
            cls.npz[label] = path

        cls.trap = os.path.join(d, "unpickled")
        npz("x_only", lambda p: np.savez(p, x=x))
        npz("xyz", lambda p: np.savez(p, x=x, y=y, z=y))
        npz("three_in_order", lambda p: np.savez(p, x, y, y))
        npz("mixed_names", lambda p: np.savez(p, y=y, arr_0=x))
        npz("object", lambda p: np.savez(p, x=np.array([_Trap(cls.trap)], dtype=object), y=y))
        npz("complex", lambda p: np.savez(p, x=x.astype(np.complex64), y=y))
        npz("bool", lambda p: np.savez(p, x=x > 0, y=y))
        npz("rank0", lambda p: np.savez(p, x=np.float32(1), y=y))
        npz("rank7", lambda p: np.savez(p, x=np.zeros((1,) * 7, np.float32), y=y))
        npz("not_a_zip", lambda p: write(p, b"x,y\n1,2\n"))
        npz("text_member", lambda p: write_zip(p, {"x.npy": _npy_bytes(x), "notes.txt": b"hi"}))
        npz("empty", lambda p: write_zip(p, {}))
        npz("truncated", lambda p: write_zip(p, {"x.npy": _npy_bytes(x)[:-8],
                                                 "y.npy": _npy_bytes(y)}))
        npz("nan", lambda p: np.savez(p, x=np.where(np.arange(192) == 5, np.nan,
                                                    0.5).reshape(1, 3, 8, 8), y=y))
        npz("channels", lambda p: np.savez(p, x=np.zeros((1, 2, 8, 8), np.float32)))
        npz("int_image", lambda p: np.savez(p, x=np.zeros((1, 3, 8, 8), np.int64)))
        npz("tokens", lambda p: np.savez(p, input_ids=ids, feats=feats))
        cls.syntax_error = os.path.join(d, "broken_model.py")
        write(cls.syntax_error, b"def make(:\n    pass\n")
        # an existing export, a directory and a dangling link where outputs go
        cls.existing = os.path.join(d, "existing")
        assert run_cli(model("conv_relu") + SMALL + ["-o", cls.existing])[0] == 0
        cls.dir_in_the_way = os.path.join(d, "dir_in_the_way")
        os.makedirs(os.path.join(cls.dir_in_the_way, "conv_relu.json"))
        cls.existing_two = os.path.join(d, "existing_two")
        os.mkdir(cls.existing_two)
        write(os.path.join(cls.existing_two, "two_inputs.input.y.npy"), b"the user's\n")
        cls.dangling = os.path.join(d, "dangling")
        os.mkdir(cls.dangling)
        os.symlink(os.path.join(d, "nowhere", "x.json"),
                   os.path.join(cls.dangling, "conv_relu.json"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cases(self):
        """(label, argv without -o unless the case is about it, a piece of the message)."""
        m, cal, npz = model("conv_relu"), self.cal, self.npz
        two = model("two_inputs") + ["--calibration", "random:1", "--observer", "minmax"]
        return [
            # outputs, checked before any work
            ("-o names a file", m + SMALL + ["-o", self.file], "exists and is not a directory"),
            ("-o under a file", m + SMALL + ["-o", os.path.join(self.file, "sub")],
             "cannot be created: '" + self.file + "' is not a directory"),
            ("-o cannot be created", m + SMALL + ["-o", "/proc/vkd_export_test/out"],
             "cannot be created"),
            ("an output is a directory", m + SMALL + ["-o", self.dir_in_the_way, "--force"],
             "not a writable regular file"),
            ("an output is a dangling link", m + SMALL + ["-o", self.dangling],
             "would overwrite"),
            ("existing outputs", m + SMALL + ["-o", self.existing], "(use --force)"),
            ("--compile not executable", m + SMALL + ["--compile", "/nonexistent/vkd"],
             "not an executable"),
            ("--compile a folder", m + SMALL + ["--compile", HERE], "not an executable"),
            ("--name with a slash", m + SMALL + ["--name", "a/b"], "is no file name"),
            ("--name empty", m + SMALL + ["--name", ""], "is no file name"),
            ("--name ..", m + SMALL + ["--name", ".."], "is no file name"),
            # calibration files, judged by their headers before any work
            ("calibration shapes differ", m + ["--calibration", cal["shape"]],
             "has shape [1, 3, 9, 8], expected [1, 3, 8, 8]"),
            ("calibration complex", m + ["--calibration", cal["complex"]],
             "has dtype complex64"),
            ("calibration not a .npy", m + ["--calibration", cal["text"]],
             "is not a .npy file"),
            ("calibration object array", m + ["--calibration", cal["object"]],
             "has dtype object"),
            ("calibration strings", m + ["--calibration", cal["strings"]], "has dtype <U3"),
            ("calibration empty folder", m + ["--calibration", cal["empty"]],
             "no .npy or .npz files"),
            ("calibration truncated", m + ["--calibration", cal["truncated"]], "is truncated"),
            ("calibration huge header", m + ["--calibration", cal["huge_header"]],
             "30000000000 elements; an input has at most 2^28"),
            ("calibration bad header", m + ["--calibration", cal["bad_header"]],
             "malformed .npy header"),
            ("calibration NaN", m + ["--calibration", cal["nan"]], "holds 28 NaN"),
            ("calibration fifo", m + ["--calibration", cal["fifo"]], "is not a regular file"),
            ("calibration missing folder", m + ["--calibration", "/nonexistent/cal"],
             "wants random:N or a directory of .npy or .npz files"),
            ("random:0", m + ["--input-shape", "1,3,8,8", "--calibration", "random:0"],
             "random:N wants N >= 1"),
            ("random:-1", m + ["--input-shape", "1,3,8,8", "--calibration", "random:-1"],
             "random:N wants N >= 1"),
            ("random:abc", m + ["--input-shape", "1,3,8,8", "--calibration", "random:abc"],
             "random:N wants N >= 1"),
            # shapes and seeds, refused before anything is allocated
            ("huge --input-shape", m + ["--input-shape", "1,3,100000,100000"],
             "30000000000 elements; an input has at most 2^28"),
            ("--input-shape rank 7", m + ["--input-shape", "1,1,1,1,1,1,1"], "1 to 6 dimensions"),
            ("--input-shape not numbers", m + ["--input-shape", "1,3,x"], "--input-shape"),
            ("--input-shape zero", m + ["--input-shape", "1,0,8,8"], "each positive"),
            ("--seed 2^64", m + SMALL + ["--seed", str(2**64)], "--seed wants 0 <= S"),
            ("--seed -1", m + SMALL + ["--seed", "-1"], "--seed wants 0 <= S"),
            # argparse's own errors
            ("--seed abc", m + SMALL + ["--seed", "abc"], "invalid int value: 'abc'"),
            ("unknown option", m + SMALL + ["--bogus"], "unrecognized arguments: --bogus"),
            ("--observer unknown", m + SMALL + ["--observer", "median"], "invalid choice"),
            ("no --model", SMALL, "--model"),
            # the model
            ("no such module", ["--model", "no_such_module_xyz:f"] + SMALL,
             "no module named 'no_such_module_xyz'"),
            ("no such factory", ["--model", "vkdelegate.examples_models:nope"] + SMALL,
             "has no callable 'nope'"),
            ("no such file", ["--model", "/nonexistent/model.py:f"] + SMALL, "no file"),
            ("--model without :FACTORY", ["--model", "tiny_unet"] + SMALL,
             "MODULE_OR_FILE:FACTORY"),
            ("model file with a syntax error", ["--model", f"{self.syntax_error}:make"] + SMALL,
             "SyntaxError"),
            ("--model-arg unknown", m + SMALL + ["--model-arg", "nope=1"], "unexpected keyword"),
            ("--model-arg without =", m + SMALL + ["--model-arg", "width"],
             "--model-arg wants K=V"),
            ("--model-arg without a name", m + SMALL + ["--model-arg", "=3"],
             "--model-arg wants K=V"),
            ("--model-arg garbage", m + SMALL + ["--model-arg", "width=[1,"],
             "conv_relu(width='[1,') failed: TypeError"),
            ("--model-arg nested too deep", m + SMALL + ["--model-arg", "width=" + "[" * 300],
             "failed: TypeError"),
            ("factory raises", model("raises") + SMALL,
             "raises() failed: RuntimeError: the factory failed on purpose"),
            ("factory returns no module", model("not_a_module") + SMALL,
             "returned int, not a torch.nn.Module"),
            ("model fails on the input", m + ["--input-shape", "1,2,8,8"],
             "the model failed on the example input(s) x [1, 2, 8, 8] float32: RuntimeError"),
            ("model returns a non-tensor", model("non_tensor_output") + SMALL,
             "returns int 3 as its output 'output_1'"),
            ("NaN weight", model("nan_weight") + SMALL,
             "parameter 'conv.weight' holds 1 NaN and 0 infinite value(s) of 108"),
            ("infinite bias", model("inf_bias") + SMALL,
             "parameter 'conv.bias' holds 0 NaN and 1 infinite value(s) of 4"),
            ("NaN activation, minmax", model("nan_activation") + SMALL,
             "calibration sample 1: the value 'log' holds"),
            ("NaN activation, histogram", model("nan_activation") +
             ["--input-shape", "1,3,8,8", "--calibration", "random:2"],
             "calibration sample 1: the value 'log' holds"),
            # several inputs: --input-shape per argument, or --example-inputs FILE.npz
            ("--input-shape once for two arguments", two + ["--input-shape", "1,3,8,8"],
             "--input-shape: 1 input(s) given, but the model's forward(x, y) takes 2"),
            ("--input-shape three times for two", two + ["--input-shape", "1,3,8,8"] * 3,
             "3 input(s) given, but the model's forward(x, y) takes 2"),
            ("no --input-shape for two arguments", two,
             "(not given: one input): 1 input(s) given, but the model's forward(x, y) takes 2"),
            ("--input-shape and --example-inputs", two + ["--input-shape", "1,3,8,8",
                                                          "--example-inputs", npz["xyz"]],
             "--input-shape and --example-inputs both give the inputs"),
            (".npz without an argument", two + ["--example-inputs", npz["x_only"]],
             "has no array for the argument 'y' of the model's forward(x, y)"),
            (".npz with an extra array", two + ["--example-inputs", npz["xyz"]],
             "array 'z' names no argument of the model's forward(x, y)"),
            (".npz in order, one too many", two + ["--example-inputs", npz["three_in_order"]],
             "3 input(s) given, but the model's forward(x, y) takes 2"),
            (".npz names and order mixed", two + ["--example-inputs", npz["mixed_names"]],
             "array 'arr_0' names no argument"),
            (".npz object array", two + ["--example-inputs", npz["object"]],
             "array 'x' has dtype object"),
            (".npz complex array", two + ["--example-inputs", npz["complex"]],
             "array 'x' has dtype complex64"),
            (".npz bool array", two + ["--example-inputs", npz["bool"]],
             "array 'x' has dtype bool"),
            (".npz rank 0", two + ["--example-inputs", npz["rank0"]], "1 to 6 dimensions"),
            (".npz rank 7", two + ["--example-inputs", npz["rank7"]], "1 to 6 dimensions"),
            (".npz not a zip", two + ["--example-inputs", npz["not_a_zip"]],
             "is not a .npz file"),
            (".npz with a text member", two + ["--example-inputs", npz["text_member"]],
             "member 'notes.txt' is not a .npy array"),
            (".npz empty", two + ["--example-inputs", npz["empty"]], "holds no arrays"),
            (".npz truncated array", two + ["--example-inputs", npz["truncated"]],
             "array 'x' is truncated"),
            (".npz NaN", two + ["--example-inputs", npz["nan"]],
             "array 'x' holds 1 NaN and 0 infinite value(s)"),
            (".npz missing", two + ["--example-inputs", "/nonexistent/x.npz"],
             "is not a regular file"),
            (".npz shape the model refuses", m + ["--example-inputs", npz["channels"]],
             "the model failed on the example input(s) x [1, 2, 8, 8] float32"),
            (".npz integer image", m + ["--example-inputs", npz["int_image"]],
             "the model failed on the example input(s) x [1, 3, 8, 8] int64"),
            ("an input file exists", two + ["--input-shape", "1,3,8,8", "--input-shape",
                                            "1,4,8,8", "-o", self.existing_two],
             "would overwrite " + os.path.join(self.existing_two, "two_inputs.input.y.npy")),
            # calibration files for several inputs
            ("calibration .npy for two inputs", two + ["--input-shape", "1,3,8,8",
                                                       "--input-shape", "1,4,8,8",
                                                       "--calibration", cal["two_npy"]],
             ".npy files hold one input each, and the model takes 2 (x, y)"),
            ("calibration .npy and .npz", m + ["--calibration", cal["mixed"]],
             "holds both .npy and .npz files"),
            ("calibration .npz shape", two + ["--input-shape", "1,3,8,8", "--input-shape",
                                              "1,4,8,8", "--calibration", cal["npz_shape"]],
             "array 'y' has shape [1, 4, 8, 9], expected [1, 4, 8, 8] (the input 'y')"),
            ("calibration .npz float token ids", model("tokens") + [
                "--example-inputs", npz["tokens"], "--calibration", cal["npz_float_ids"]],
             "array 'input_ids' has dtype float32; the input 'input_ids' is int64"),
        ]

    def test_each_user_error_is_one_line_and_exit_2(self):
        labels = set()
        for k, (label, argv, message) in enumerate(self.cases()):
            labels.add(label)
            if label == "-o cannot be created" and not os.path.isdir("/proc"):
                continue
            with self.subTest(label):
                fresh = os.path.join(self.tmp.name, f"fresh{k}")  # two levels to create
                if "-o" not in argv:
                    argv = argv + ["-o", os.path.join(fresh, "out")]
                status, _, err = run_cli(argv)
                self.assertEqual(status, 2, err)
                self.assertNotIn("Traceback", err)
                self.assertTrue(err.startswith("vkdelegate.export: error: "), err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertTrue(err.endswith("\n"), err)
                self.assertIn(message, err)
                self.assertFalse(os.path.exists(fresh), "an output folder was left behind")
        self.assertEqual(len(labels), len(self.cases()), "two cases share a label")
        self.assertFalse(os.path.exists(self.trap), "an object array was unpickled")
        print(f"\n  {len(labels)} user errors: each exit 2, one line", file=sys.stderr)

    def test_existing_files_are_kept(self):
        path = os.path.join(self.existing, "conv_relu.json")
        with open(path, "rb") as f:
            before = f.read()
        self.assertEqual(run_cli(model("nan_weight") + SMALL + ["-o", self.existing,
                                                                "--force"])[0], 2)
        self.assertEqual(run_cli(model("conv_relu") + SMALL + ["-o", self.existing])[0], 2)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertTrue(os.path.islink(os.path.join(self.dangling, "conv_relu.json")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "nowhere")))

    def test_real_process_exit_status(self):
        """The headline cases as the user meets them: exit 2, one line, no traceback, and the
        -o check happens before the model is quantized."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        for argv, message in [
                (model("conv_relu") + SMALL + ["-o", self.file], "is not a directory"),
                (model("nan_weight") + SMALL + ["-o", os.path.join(self.tmp.name, "nan")],
                 "holds 1 NaN")]:
            with self.subTest(argv[-1]):
                done = subprocess.run([sys.executable, "-m", "vkdelegate.export", *argv],
                                      capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
                self.assertIn(message, done.stderr)
                self.assertNotIn("torch.export", done.stdout)


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


if __name__ == "__main__":
    unittest.main()
