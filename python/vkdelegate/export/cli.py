"""python3 -m vkdelegate.export: export a PyTorch model to vkdelegate's graph IR.

Loads FACTORY from a module or a .py file, builds the model under torch.manual_seed(SEED) (so
random weights are reproducible), quantizes it to int8 on calibration inputs and writes, into
OUT_DIR: NAME.json (graph IR), NAME.safetensors (weights), NAME.calibration.json (observed
ranges), NAME.input.npy (a sample input; NAME.input.<argument>.npy for each of several) and
NAME.accuracy.json (the int8 model against the float model, also printed); with --compile also
NAME.vkd and NAME.report.txt. User errors are one line on stderr and exit status 2; a failed
compile, vkd's message and 1.
"""
import argparse
import ast
import importlib
import importlib.util
import json
import os
import shlex
import sys
from time import perf_counter

import numpy as np
import torch

from .. import accuracy
from .calibration import CalibrationSource
from .errors import ExportError
from .inputs import (DEFAULT_SHAPE, ExampleFile, InputSpec, RandomInputs, check_seed,
                     input_names, parse_shape)
from .pipeline import export, input_paths, output_paths, outputs_checked


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as ExportError: one line, exit status 2, like every other."""

    def error(self, message):
        raise ExportError(f"{message} (see --help)")


def parse_args(argv):
    ap = _Parser(
        prog="python3 -m vkdelegate.export",
        description="Quantize a PyTorch model to int8 and write vkdelegate's graph IR.")
    ap.add_argument("--model", required=True, metavar="MODULE_OR_FILE:FACTORY",
                    help="a module path (torchvision.models.quantization) or a .py file, and "
                         "the callable in it that returns the nn.Module")
    ap.add_argument("--model-arg", action="append", default=[], metavar="K=V",
                    help="keyword argument for FACTORY (V a Python literal, else a string); "
                         "repeatable")
    ap.add_argument("--input-shape", action="append", default=[], metavar="N,C,H,W",
                    help="a float input's shape, once per forward() argument in order "
                         "(default: one input of 1,3,224,224, or the calibration files')")
    ap.add_argument("--example-inputs", metavar="FILE.npz",
                    help="the example inputs instead: one array per forward() argument, named "
                         "after it or saved in order (np.savez: arr_0, arr_1, ...); float "
                         "arrays are read as float32, integer ones (token ids) keep their "
                         "dtype; they are the sample input")
    ap.add_argument("--calibration", default="random:8", metavar="random:N|DIR",
                    help="N seeded random inputs: standard normal floats for float inputs, "
                         "for integer inputs integers drawn uniformly in the example's [min, "
                         "max]; or a directory of .npy files (one-input models) or .npz files "
                         "(one sample each, arrays as for --example-inputs) (default random:8)")
    weights = ap.add_mutually_exclusive_group()
    weights.add_argument("--per-channel", dest="per_channel", action="store_true", default=True,
                         help="one weight scale per output channel (default)")
    weights.add_argument("--per-tensor", dest="per_channel", action="store_false",
                         help="one weight scale per tensor")
    ap.add_argument("--observer", choices=("histogram", "minmax"), default="histogram",
                    help="activation observer (default histogram, as qnnpack)")
    ap.add_argument("--per-layer", action="store_true",
                    help="the accuracy report also ranks every layer by SQNR against the float "
                         "model (on the sample input)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seeds the model's weights (SEED), the calibration inputs (SEED+1) and "
                         "the sample input (SEED+2); default 0")
    ap.add_argument("-o", "--output-dir", required=True, metavar="OUT_DIR")
    ap.add_argument("--name", help="file name stem (default: FACTORY)")
    ap.add_argument("--compile", metavar="PATH_TO_VKD",
                    help="also run `vkd compile ... --report` with this vkd binary")
    ap.add_argument("--force", action="store_true", help="replace existing output files")
    return ap.parse_args(argv)


# ---- the model --------------------------------------------------------------------------------

def split_model_spec(spec):
    """(MODULE_OR_FILE, FACTORY) of --model."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise ExportError(f"--model wants MODULE_OR_FILE:FACTORY, got '{spec}'")
    return where, name


def load_factory(spec):
    """The callable named by MODULE_OR_FILE:FACTORY."""
    where, name = split_model_spec(spec)
    module = _load_file(where) if where.endswith(".py") else _import(where)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ExportError(f"--model: '{where}' has no callable '{name}'")
    return factory


def _load_file(path):
    if not os.path.isfile(path):
        raise ExportError(f"--model: no file '{path}'")
    stem = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(stem, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's file failed: say how, without our traceback
        raise ExportError(f"--model: loading '{path}' failed: {type(e).__name__}: {e}") from e
    return module


def _import(name):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise ExportError(f"--model: no module named '{name}'") from e
        raise ExportError(f"--model: importing '{name}' failed: {e}") from e
    except Exception as e:  # the module's own import code failed
        raise ExportError(f"--model: importing '{name}' failed: {type(e).__name__}: {e}") from e


def model_kwargs(pairs):
    """--model-arg K=V pairs as keyword arguments (V a Python literal when it parses as one)."""
    kwargs = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise ExportError(f"--model-arg wants K=V with K a Python name, got '{pair}'")
        try:
            kwargs[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            kwargs[key] = text
    return kwargs


def build_model(factory, kwargs, seed):
    torch.manual_seed(seed)
    name = getattr(factory, "__name__", type(factory).__name__)  # a functools.partial has none
    call = f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
    try:
        model = factory(**kwargs)
    except Exception as e:  # a bad --model-arg, or the factory's own failure
        raise ExportError(f"{call} failed: {type(e).__name__}: {e}") from e
    if not isinstance(model, torch.nn.Module):
        raise ExportError(f"{call} returned {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


# ---- main -------------------------------------------------------------------------------------

def log_step(step, seconds, detail=""):
    print(f"  {step:<24} {seconds:8.2f} s  {detail}".rstrip(), flush=True)


def run(args):
    """Every argument, output path and input file is checked before the model is loaded; the
    sample input files, named after forward()'s arguments, once it is built (before any
    quantization)."""
    check_seed(args.seed)
    name = split_model_spec(args.model)[1] if args.name is None else args.name
    shapes = [parse_shape(text) for text in args.input_shape]
    if shapes and args.example_inputs:
        raise ExportError("--input-shape and --example-inputs both give the inputs; give one")
    vkd = args.compile
    if vkd is not None and not (os.path.isfile(vkd) and os.access(vkd, os.X_OK)):
        raise ExportError(f"--compile: '{vkd}' is not an executable file")
    examples = ExampleFile(args.example_inputs) if args.example_inputs else None
    count = len(examples.headers) if examples else max(len(shapes), 1)
    paths = output_paths(args.output_dir, name, vkd is not None, None if count == 1 else ())
    with outputs_checked(args.output_dir, paths, args.force):
        source = CalibrationSource(args.calibration)
        factory = load_factory(args.model)
        t = perf_counter()
        model = build_model(factory, model_kwargs(args.model_arg), args.seed)
        log_step("build model", perf_counter() - t, f"{type(model).__name__}, seed {args.seed}")
        specs, sample = example_inputs(model, examples, shapes, source, args.seed)
        calibration = source.samples(model, specs, args.seed + 1)
        paths = export(model, sample, args.output_dir, name, calibration,
                       per_channel=args.per_channel, observer=args.observer, vkd=vkd,
                       force=args.force, log=log_step, per_layer=args.per_layer,
                       input_names=[s.name for s in specs])
    for path in paths.values():
        print(f"  wrote {path}")
    with open(paths["accuracy"], encoding="utf-8") as f:
        print(accuracy.format_report(json.load(f)))
    print(run_line(paths, vkd))


def example_inputs(model, examples, shapes, source, seed):
    """([InputSpec], sample tuple): the example inputs the model is exported with, also the
    sample input: --example-inputs' arrays, else random normal ones (seeded with `seed` + 2) of
    the --input-shape shapes (default: the calibration .npy files' or DEFAULT_SHAPE)."""
    if examples is not None:
        specs, arrays = examples.specs_and_arrays(model)
        return specs, tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)
    what = "--input-shape" if shapes else "--input-shape (not given: one input)"
    shapes = shapes or [source.npy_shape() or DEFAULT_SHAPE]
    names = input_names(model, len(shapes), what)
    specs = [InputSpec(n, shape) for n, shape in zip(names, shapes)]
    sample = next(iter(RandomInputs(specs, 1, seed + 2)))
    return specs, sample if isinstance(sample, tuple) else (sample,)


def run_line(paths, vkd):
    """The `vkd run` command for the written sample inputs, under the graph IR's input names."""
    with open(paths["graph"], encoding="utf-8") as f:
        names = json.load(f)["inputs"]
    blob = paths.get("blob") or os.path.splitext(paths["graph"])[0] + ".vkd"
    given = " ".join(f"--input {n}={shlex.quote(p)}" for n, p in zip(names, input_paths(paths)))
    then = "run it" if "blob" in paths else "run it (after vkd compile)"
    return f"{then}: {shlex.quote(vkd or 'vkd')} run {shlex.quote(blob)} {given}"


def main(argv=None):
    start = perf_counter()
    try:
        args = parse_args(argv)
        print(f"vkdelegate.export: {args.model}", flush=True)
        run(args)
    except ExportError as e:
        message = str(e)
        if e.status == 2:  # one line, also where the cause (the user's code) said more
            message = " ".join(line.strip() for line in message.splitlines() if line.strip())
        print(f"vkdelegate.export: error: {message}", file=sys.stderr)
        return e.status
    log_step("total", perf_counter() - start)
    return 0
