"""--calibration: random:N, or a folder of .npy files (one-input models: one sample each) or of
.npz files (one sample each, its arrays named as --example-inputs names them).

A CalibrationSource checks every file by its headers when it is made, before any work; once the
model is built, samples() matches them with the model's inputs (shape, dtype) and returns the
samples, each read from its file when calibration reaches it.
"""
import os

import numpy as np
import torch

from .errors import ExportError
from .inputs import RandomInputs, bind_arrays, check_shape
from .npy_files import checked_npy, checked_npz, load_npy, load_npz


def _where(path):
    return f"--calibration: '{path}'"


class CalibrationSource:
    """`random` (N samples drawn) or the checked files of a folder: `npy` [(path, shape,
    dtype)] or `npz` [(path, [(array name, shape, dtype)])]."""

    def __init__(self, spec):
        self.random, self.npy, self.npz = None, [], []
        if spec.startswith("random:"):
            count = spec[len("random:"):]
            if not count.isdigit() or int(count) < 1:
                raise ExportError(f"--calibration random:N wants N >= 1, got '{spec}'")
            self.random = int(count)
            return
        if not os.path.isdir(spec):
            raise ExportError(f"--calibration wants random:N or a directory of .npy or .npz "
                              f"files, got '{spec}'")
        try:
            files = sorted(os.listdir(spec))
        except OSError as e:
            raise ExportError(f"--calibration: cannot list '{spec}': {e.strerror}") from e
        npy = [os.path.join(spec, f) for f in files if f.endswith(".npy")]
        npz = [os.path.join(spec, f) for f in files if f.endswith(".npz")]
        if npy and npz:
            raise ExportError(f"--calibration: '{spec}' holds both .npy and .npz files (.npy: "
                              "one input each, .npz: one sample of every input each); keep one "
                              "kind")
        if not npy and not npz:
            raise ExportError(f"--calibration: no .npy or .npz files in '{spec}'")
        for path in npy:
            shape, dtype = checked_npy(path, _where(path), check_shape)
            if self.npy and shape != self.npy[0][1]:
                raise ExportError(f"{_where(path)} has shape {list(shape)}, expected "
                                  f"{list(self.npy[0][1])}")
            self.npy.append((path, shape, dtype))
        self.npz = [(path, checked_npz(path, _where(path), check_shape)) for path in npz]

    def npy_shape(self):
        """The shape of the .npy files (None for other sources): the input's shape when no
        option gives it."""
        return self.npy[0][1] if self.npy else None

    def samples(self, model, specs, seed):
        """The calibration samples of `model` (built) whose inputs are `specs` (InputSpecs in
        forward() order); random ones drawn from generators seeded with `seed`."""
        if self.random is not None:
            return RandomInputs(specs, self.random, seed)
        if self.npy:
            if len(specs) != 1:
                raise ExportError(f"--calibration: .npy files hold one input each, and the model "
                                  f"takes {len(specs)} ({', '.join(s.name for s in specs)}): "
                                  "give a folder of .npz files, one sample of every input each")
            for path, shape, dtype in self.npy:
                _match(_where(path), shape, dtype, specs[0])
            return FileSamples([(path, None) for path, _, _ in self.npy], specs)
        bound = []
        for path, headers in self.npz:
            names, keys = bind_arrays(model, [k for k, _, _ in headers], _where(path))
            if names != [s.name for s in specs]:
                raise ExportError(f"{_where(path)} holds the arguments {names}, the example "
                                  f"inputs are {[s.name for s in specs]}")
            found = {k: (shape, dtype) for k, shape, dtype in headers}
            for key, spec in zip(keys, specs):
                _match(f"{_where(path)}, array '{key}'", *found[key], spec)
            bound.append((path, keys))
        return FileSamples(bound, specs)


def _match(where, shape, dtype, spec):
    """Refuses a calibration array that cannot stand for input `spec`: another shape, or a
    float (or a wider integer) where the input is integer."""
    if tuple(shape) != spec.shape:
        raise ExportError(f"{where} has shape {list(shape)}, expected {list(spec.shape)} (the "
                          f"input '{spec.name}')")
    if not spec.is_float and not (dtype.kind in "iu" and np.can_cast(dtype, spec.dtype)):
        raise ExportError(f"{where} has dtype {dtype}; the input '{spec.name}' is {spec.dtype} "
                          "(integer arrays that fit it)")


class FileSamples:
    """Calibration samples read from files when iterated: [(path, None)] .npy files of one
    input, or [(path, array names in forward() order)] .npz files; each array cast to its
    input's dtype (float inputs: float32)."""

    def __init__(self, files, specs):
        self.files, self.specs = files, specs

    def __len__(self):
        return len(self.files)

    def __iter__(self):
        for path, keys in self.files:
            if keys is None:
                arrays = [load_npy(path, _where(path))]
            else:
                loaded = load_npz(path, _where(path))
                arrays = [loaded[k] for k in keys]
            sample = tuple(torch.from_numpy(np.ascontiguousarray(a.astype(s.dtype, copy=False)))
                           for a, s in zip(arrays, self.specs))
            yield sample[0] if len(sample) == 1 else sample
