"""python3 -m vkdelegate.export: export a PyTorch model to vkdelegate's graph IR.

Loads FACTORY from a module or a .py file, builds the model under torch.manual_seed(SEED) (so
random weights are reproducible), quantizes it to int8 on calibration inputs and writes, into
OUT_DIR: NAME.json (graph IR), NAME.safetensors (weights), NAME.calibration.json (observed
ranges) and NAME.input.npy (a sample input); with --compile also NAME.vkd and NAME.report.txt.
User errors are one line on stderr and exit status 2; a failed compile, vkd's message and 1.
"""
import argparse
import ast
import importlib
import importlib.util
import os
import sys
from time import perf_counter

import numpy as np
import torch

from .errors import ExportError
from .pipeline import check_outputs, export, output_paths

DEFAULT_SHAPE = (1, 3, 224, 224)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="python3 -m vkdelegate.export",
        description="Quantize a PyTorch model to int8 and write vkdelegate's graph IR.")
    ap.add_argument("--model", required=True, metavar="MODULE_OR_FILE:FACTORY",
                    help="a module path (torchvision.models.quantization) or a .py file, and "
                         "the callable in it that returns the nn.Module")
    ap.add_argument("--model-arg", action="append", default=[], metavar="K=V",
                    help="keyword argument for FACTORY (V a Python literal, else a string); "
                         "repeatable")
    ap.add_argument("--input-shape", metavar="N,C,H,W",
                    help="the input's shape (default 1,3,224,224, or the calibration files')")
    ap.add_argument("--calibration", default="random:8", metavar="random:N|DIR",
                    help="N seeded random normal inputs, or a directory of .npy inputs "
                         "(default random:8)")
    weights = ap.add_mutually_exclusive_group()
    weights.add_argument("--per-channel", dest="per_channel", action="store_true", default=True,
                         help="one weight scale per output channel (default)")
    weights.add_argument("--per-tensor", dest="per_channel", action="store_false",
                         help="one weight scale per tensor")
    ap.add_argument("--observer", choices=("histogram", "minmax"), default="histogram",
                    help="activation observer (default histogram, as qnnpack)")
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

def load_factory(spec):
    """The callable named by MODULE_OR_FILE:FACTORY."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise ExportError(f"--model wants MODULE_OR_FILE:FACTORY, got '{spec}'")
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
        except (ValueError, SyntaxError):
            kwargs[key] = text
    return kwargs


def build_model(factory, kwargs, seed):
    torch.manual_seed(seed)
    call = f"{factory.__name__}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
    try:
        model = factory(**kwargs)
    except Exception as e:  # a bad --model-arg, or the factory's own failure
        raise ExportError(f"{call} failed: {type(e).__name__}: {e}") from e
    if not isinstance(model, torch.nn.Module):
        raise ExportError(f"{call} returned {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


# ---- inputs -----------------------------------------------------------------------------------

def parse_shape(text):
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise ExportError(f"--input-shape wants positive integers like 1,3,224,224, got '{text}'")
    return shape


def random_inputs(shape, count, seed):
    """`count` standard normal inputs from a generator seeded with `seed`."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for _ in range(count)]


def calibration_inputs(spec, shape, seed):
    """(input shape, calibration samples) for --calibration random:N or DIR."""
    if spec.startswith("random:"):
        count = spec[len("random:"):]
        if not count.isdigit() or int(count) < 1:
            raise ExportError(f"--calibration random:N wants N >= 1, got '{spec}'")
        shape = shape or DEFAULT_SHAPE
        return shape, random_inputs(shape, int(count), seed)
    if not os.path.isdir(spec):
        raise ExportError(f"--calibration wants random:N or a directory of .npy files, "
                          f"got '{spec}'")
    files = sorted(f for f in os.listdir(spec) if f.endswith(".npy"))
    if not files:
        raise ExportError(f"--calibration: no .npy files in '{spec}'")
    samples = []
    for f in files:
        array = np.load(os.path.join(spec, f), allow_pickle=False)
        shape = shape or array.shape
        if tuple(array.shape) != tuple(shape):
            raise ExportError(f"--calibration: '{f}' has shape {list(array.shape)}, expected "
                              f"{list(shape)}")
        samples.append(torch.from_numpy(array.astype(np.float32)))
    return tuple(shape), samples


# ---- main -------------------------------------------------------------------------------------

def log_step(step, seconds, detail=""):
    print(f"  {step:<24} {seconds:8.2f} s  {detail}".rstrip(), flush=True)


def run(args):
    factory = load_factory(args.model)
    name = args.name or factory.__name__
    vkd = args.compile
    if vkd is not None and not (os.path.isfile(vkd) and os.access(vkd, os.X_OK)):
        raise ExportError(f"--compile: '{vkd}' is not an executable file")
    check_outputs(output_paths(args.output_dir, name, vkd is not None), args.force)
    shape = parse_shape(args.input_shape) if args.input_shape else None

    t = perf_counter()
    model = build_model(factory, model_kwargs(args.model_arg), args.seed)
    log_step("build model", perf_counter() - t, f"{type(model).__name__}, seed {args.seed}")
    shape, calibration = calibration_inputs(args.calibration, shape, args.seed + 1)
    sample = random_inputs(shape, 1, args.seed + 2)[0]
    paths = export(model, (sample,), args.output_dir, name, calibration,
                   per_channel=args.per_channel, observer=args.observer, vkd=vkd,
                   force=args.force, log=log_step)
    for path in paths.values():
        print(f"  wrote {path}")


def main(argv=None):
    args = parse_args(argv)
    print(f"vkdelegate.export: {args.model}", flush=True)
    start = perf_counter()
    try:
        run(args)
    except ExportError as e:
        print(f"vkdelegate.export: error: {e}", file=sys.stderr)
        return e.status
    log_step("total", perf_counter() - start)
    return 0
