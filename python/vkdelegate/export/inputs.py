"""The CLI's inputs to the model: --input-shape, --seed and --calibration (random:N or a folder
of .npy files), each checked before any work and refused with one line naming the problem.

Nothing is allocated before its size is checked: a shape above MAX_INPUT_ELEMENTS is refused,
.npy files are judged by their headers (never unpickled), random inputs are made one at a time.
"""
import math
import os

import numpy as np
import torch

from .errors import ExportError

DEFAULT_SHAPE = (1, 3, 224, 224)
MAX_RANK = 6  # the graph IR's values have rank 0 to 6
MAX_INPUT_ELEMENTS = 1 << 28  # 1 GiB of float32 per input; the device's tensors stop at 2^31
MAX_SEED = (1 << 64) - 3  # SEED, SEED+1 and SEED+2 seed PyTorch's 64-bit generators
_NPY_MAGIC = b"\x93NUMPY"


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


class RandomInputs:
    """`count` standard normal tensors of `shape` from a generator seeded with `seed`, each made
    when it is read: a long calibration holds one at a time."""

    def __init__(self, shape, count, seed):
        self.shape, self.count, self.seed = tuple(shape), count, seed

    def __len__(self):
        return self.count

    def __iter__(self):
        gen = torch.Generator().manual_seed(self.seed)
        for _ in range(self.count):
            yield torch.randn(self.shape, generator=gen)


def random_inputs(shape, count, seed):
    """`count` standard normal inputs from a generator seeded with `seed`, as a list."""
    return list(RandomInputs(shape, count, seed))


class NpyInputs:
    """The .npy files of a calibration folder, each checked by its header (checked_npy) and
    loaded when it is read."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __iter__(self):
        for path in self.paths:
            yield torch.from_numpy(load_npy(path))


def calibration_inputs(spec, shape, seed):
    """(input shape, calibration samples) for --calibration random:N or DIR; `shape` is
    --input-shape's (None when not given). Every file is checked here, before any work."""
    if spec.startswith("random:"):
        count = spec[len("random:"):]
        if not count.isdigit() or int(count) < 1:
            raise ExportError(f"--calibration random:N wants N >= 1, got '{spec}'")
        shape = shape or DEFAULT_SHAPE
        return shape, RandomInputs(shape, int(count), seed)
    if not os.path.isdir(spec):
        raise ExportError(f"--calibration wants random:N or a directory of .npy files, "
                          f"got '{spec}'")
    try:
        names = sorted(f for f in os.listdir(spec) if f.endswith(".npy"))
    except OSError as e:
        raise ExportError(f"--calibration: cannot list '{spec}': {e.strerror}") from e
    if not names:
        raise ExportError(f"--calibration: no .npy files in '{spec}'")
    paths = [os.path.join(spec, f) for f in names]
    for path in paths:
        file_shape = checked_npy(path)
        shape = shape or check_shape(file_shape, f"--calibration: '{path}'")
        if file_shape != tuple(shape):
            raise ExportError(f"--calibration: '{path}' has shape {list(file_shape)}, expected "
                              f"{list(shape)}")
    return tuple(shape), NpyInputs(paths)


def checked_npy(path):
    """The shape of the array in .npy file `path`, from its header alone: a regular file of
    format 1.0 or 2.0, not truncated, whose dtype is a real number (no objects: nothing is
    unpickled)."""
    where = f"--calibration: '{path}'"
    if not os.path.isfile(path):
        raise ExportError(f"{where} is not a regular file")
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_NPY_MAGIC))
            if magic == _NPY_MAGIC:
                version, (shape, _, dtype), data_start = _npy_header(f)
    except OSError as e:
        raise ExportError(f"{where}: cannot read: {e.strerror}") from e
    except Exception as e:  # numpy's header parser: ValueError, tokenize.TokenError, ...
        raise ExportError(f"{where}: malformed .npy header: {type(e).__name__}: {e}") from e
    if magic != _NPY_MAGIC:
        raise ExportError(f"{where} is not a .npy file (no \\x93NUMPY magic)")
    if version not in ((1, 0), (2, 0)):
        raise ExportError(f"{where}: .npy format version {version[0]}.{version[1]} (1.0 and "
                          "2.0 are read)")
    if dtype.hasobject or dtype.kind not in "fiu":
        raise ExportError(f"{where} has dtype {dtype}; calibration inputs are real numbers "
                          "(float or integer arrays)")
    check_shape(shape, where)
    need = data_start + math.prod(shape) * dtype.itemsize
    size = os.path.getsize(path)
    if size < need:
        raise ExportError(f"{where} is truncated: shape {list(shape)} {dtype} needs {need} "
                          f"bytes, the file has {size}")
    return tuple(shape)


def _npy_header(f):
    """(version, (shape, fortran order, dtype), data offset) of an open .npy file, read from its
    start; (version, (None, None, None), None) for a version numpy's public readers lack."""
    f.seek(0)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        header = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        header = np.lib.format.read_array_header_2_0(f)
    else:
        return version, (None, None, None), None
    return version, header, f.tell()


def load_npy(path):
    """A calibration file checked by checked_npy, as float32; NaN or infinity is refused."""
    try:
        with open(path, "rb") as f:
            array = np.lib.format.read_array(f, allow_pickle=False).astype(np.float32)
    except OSError as e:
        raise ExportError(f"--calibration: '{path}': cannot read: {e.strerror}") from e
    except Exception as e:  # the file changed since checked_npy read its header
        raise ExportError(f"--calibration: '{path}': {type(e).__name__}: {e}") from e
    if not np.isfinite(array).all():
        raise ExportError(f"--calibration: '{path}' holds {int(np.isnan(array).sum())} NaN and "
                          f"{int(np.isinf(array).sum())} infinite value(s) (as float32)")
    return array
