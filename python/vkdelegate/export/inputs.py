"""The model's inputs as the CLI takes them: --input-shape (once per forward() argument, float
inputs), --example-inputs FILE.npz (one array per argument, by name or in order), --seed; each
checked before any work and refused with one line naming the problem. The calibration samples
are calibration.py's.

Nothing is allocated before its size is checked: a shape above MAX_INPUT_ELEMENTS is refused,
.npz arrays are judged by their headers (never unpickled), random inputs are made one at a time.
"""
import inspect
import math

import numpy as np
import torch

from .errors import ExportError
from .npy_files import checked_npz, load_npz

DEFAULT_SHAPE = (1, 3, 224, 224)
MAX_RANK = 6  # the graph IR's values have rank 0 to 6
MAX_INPUT_ELEMENTS = 1 << 28  # 1 GiB of float32 per input; the device's tensors stop at 2^31
MAX_SEED = (1 << 64) - 3  # SEED, SEED+1 and SEED+2 seed PyTorch's 64-bit generators


def check_shape(shape, what):
    """Refuses a shape that is no input of the graph IR or too large to allocate."""
    if not 1 <= len(shape) <= MAX_RANK or any(d <= 0 for d in shape):
        raise ExportError(f"{what}: shape {list(shape)}: an input has 1 to {MAX_RANK} "
                          "dimensions, each positive")
    count = math.prod(shape)
    if count > MAX_INPUT_ELEMENTS:
        raise ExportError(f"{what}: shape {list(shape)} has {count} elements; an input has at "
                          f"most 2^28 = {MAX_INPUT_ELEMENTS} (1 GiB of float32)")
    return tuple(shape)


def parse_shape(text):
    """--input-shape N,C,H,W as a tuple."""
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ExportError(f"--input-shape wants positive integers like 1,3,224,224, "
                          f"got '{text}'") from None
    return check_shape(shape, "--input-shape")


def check_seed(seed):
    if not 0 <= seed <= MAX_SEED:
        raise ExportError(f"--seed wants 0 <= S <= 2^64 - 3 = {MAX_SEED} (S, S+1 and S+2 seed "
                          f"the weights and inputs), got {seed}")
    return seed


class InputSpec:
    """One input of the model: its forward() argument `name`, `shape` and numpy `dtype`
    (float32, or an integer type), and for an integer input the range [low, high] random
    calibration draws from (the example's min and max)."""

    def __init__(self, name, shape, dtype=np.float32, low=None, high=None):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)
        self.low, self.high = low, high

    @classmethod
    def of(cls, name, array):
        if array.dtype.kind == "f":
            return cls(name, array.shape, np.float32)
        return cls(name, array.shape, array.dtype, int(array.min()), int(array.max()))

    @property
    def is_float(self):
        return self.dtype.kind == "f"

    def describe(self):
        """'x [1, 3, 8, 8] float32'."""
        return f"{self.name} {list(self.shape)} {self.dtype}"


# ---- forward()'s arguments --------------------------------------------------------------------

def forward_parameters(model):
    """(names of forward()'s positional parameters, how many have no default, whether it takes
    *args) of a model."""
    names, required, varargs = [], 0, False
    for p in inspect.signature(model.forward).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
            required += p.default is p.empty
        elif p.kind is p.VAR_POSITIONAL:
            varargs = True
    return names, required, varargs


def _signature(names, varargs):
    return f"forward({', '.join(names + (['*args'] if varargs else []))})"


def input_names(model, count, what):
    """The names of the forward() arguments `count` inputs given in order stand for (input<k>
    for those *args takes); `what` (the option) names the problem when they do not fit."""
    names, required, varargs = forward_parameters(model)
    if required <= count and (count <= len(names) or varargs):
        return names[:count] + [f"input{k}" for k in range(len(names), count)]
    if varargs:
        takes = f"at least {required}"
    elif required == len(names):
        takes = str(required)
    else:
        takes = f"{required} to {len(names)}"
    raise ExportError(f"{what}: {count} input(s) given, but the model's "
                      f"{_signature(names, varargs)} takes {takes}")


def bind_arrays(model, keys, where):
    """The forward() argument names, in order, of the arrays named `keys` in an .npz: named
    after forward()'s parameters (those with a default may be left out, from the end), or all
    in order as np.savez names them (arr_0, arr_1, ...). Returns (argument names, keys in
    forward() order)."""
    names, required, varargs = forward_parameters(model)
    in_order = [f"arr_{k}" for k in range(len(keys))]
    if sorted(keys) == sorted(in_order) and not set(keys) & set(names):
        return input_names(model, len(keys), where), in_order
    extra = [k for k in keys if k not in names]
    if extra:
        raise ExportError(f"{where}: array '{extra[0]}' names no argument of the model's "
                          f"{_signature(names, varargs)} (name each array after its argument, "
                          "or save them in order: arr_0, arr_1, ...)")
    count = max(names.index(k) for k in keys) + 1
    missing = [n for n in names[:max(count, required)] if n not in keys]
    if missing:
        raise ExportError(f"{where} has no array for the argument '{missing[0]}' of the "
                          f"model's {_signature(names, varargs)}")
    return names[:count], names[:count]


# ---- where the example inputs come from -------------------------------------------------------

class ExampleFile:
    """--example-inputs FILE.npz, its arrays' headers checked when made (before any work), read
    and bound to forward()'s arguments by specs()."""

    def __init__(self, path):
        self.path, self.where = path, f"--example-inputs: '{path}'"
        self.headers = checked_npz(path, self.where, check_shape)

    def specs_and_arrays(self, model):
        """([InputSpec], [array]) in forward() order."""
        names, keys = bind_arrays(model, [key for key, _, _ in self.headers], self.where)
        arrays = load_npz(self.path, self.where)
        ordered = [arrays[k] for k in keys]
        return [InputSpec.of(n, a) for n, a in zip(names, ordered)], ordered


class RandomInputs:
    """`count` samples for `specs` (InputSpecs, or one input's shape) from generators seeded with
    `seed`, each made when it is read (a long calibration holds one at a time): a float input
    standard normal (torch.randn), an integer input uniform over [low, high] of its dtype. A
    sample is a tensor for one input, a tuple of tensors for several."""

    def __init__(self, specs, count, seed):
        if all(isinstance(d, int) for d in specs):  # one float input's shape
            specs = [InputSpec("x", specs)]
        self.specs, self.count, self.seed = list(specs), count, seed

    def __len__(self):
        return self.count

    def __iter__(self):
        floats = torch.Generator().manual_seed(self.seed)
        ints = np.random.default_rng(self.seed)
        for _ in range(self.count):
            sample = tuple(
                torch.randn(s.shape, generator=floats) if s.is_float else
                torch.from_numpy(ints.integers(s.low, s.high, size=s.shape, dtype=s.dtype,
                                               endpoint=True))
                for s in self.specs)
            yield sample[0] if len(sample) == 1 else sample


def random_inputs(shape, count, seed):
    """`count` standard normal inputs from a generator seeded with `seed`, as a list."""
    return list(RandomInputs(shape, count, seed))
