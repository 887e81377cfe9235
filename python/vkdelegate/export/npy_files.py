"""The exporter's input files, .npy arrays and .npz archives of them, judged before they are read.

Every array is first checked by its header alone (format 1.0 or 2.0, a real-number dtype, a
shape check_shape accepts, not truncated) and only then read, with allow_pickle=False: an
object array is refused by its header and never unpickled. A failure is one ExportError line
starting with `where` (the option and the file).
"""
import math
import os
import zipfile

import numpy as np

from .errors import ExportError

_NPY_MAGIC = b"\x93NUMPY"


def _checked_header(f, where, size, check_shape):
    """(shape, dtype) of the .npy stream `f` (`size` bytes), from its header."""
    try:
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
        raise ExportError(f"{where} has dtype {dtype}; the model's inputs are real numbers "
                          "(float or integer arrays)")
    check_shape(shape, where)
    need = data_start + math.prod(shape) * dtype.itemsize
    if size < need:
        raise ExportError(f"{where} is truncated: shape {list(shape)} {dtype} needs {need} "
                          f"bytes, the file has {size}")
    return tuple(shape), dtype


def _npy_header(f):
    """(version, (shape, fortran order, dtype), data offset) of an open .npy stream, read from
    its start; (version, (None, None, None), None) for a version numpy's public readers lack."""
    f.seek(0)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        header = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        header = np.lib.format.read_array_header_2_0(f)
    else:
        return version, (None, None, None), None
    return version, header, f.tell()


def _regular_file(path, where):
    if not os.path.isfile(path):  # a FIFO would hang the read, a folder cannot be read
        raise ExportError(f"{where} is not a regular file")


def checked_npy(path, where, check_shape):
    """(shape, dtype) of the array in .npy file `path`, from its header alone."""
    _regular_file(path, where)
    try:
        with open(path, "rb") as f:
            return _checked_header(f, where, os.path.getsize(path), check_shape)
    except OSError as e:
        raise ExportError(f"{where}: cannot read: {e.strerror}") from e


def checked_npz(path, where, check_shape):
    """[(array name, shape, dtype)] of the arrays in .npz file `path` (np.savez's zip of .npy
    members: `x.npy` holds the array named x), from their headers alone."""
    _regular_file(path, where)
    try:
        with zipfile.ZipFile(path) as archive:
            found = []
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if not info.filename.endswith(".npy"):
                    raise ExportError(f"{where}: member '{info.filename}' is not a .npy array")
                with archive.open(info) as member:
                    shape, dtype = _checked_header(member, f"{where}, array "
                                                           f"'{info.filename[:-4]}'",
                                                   info.file_size, check_shape)
                found.append((info.filename[:-4], shape, dtype))
    except ExportError:
        raise
    except OSError as e:
        raise ExportError(f"{where}: cannot read: {e.strerror}") from e
    except Exception as e:  # zipfile.BadZipFile, a compression it lacks, ...
        raise ExportError(f"{where} is not a .npz file: {type(e).__name__}: {e}") from e
    if not found:
        raise ExportError(f"{where} holds no arrays")
    return found


def as_model_input(array, where):
    """A float array as float32 (the model's float type; NaN or infinity refused, as float32),
    an integer array as it is (token ids stay integer)."""
    if array.dtype.kind != "f":
        return array
    array = array.astype(np.float32)
    if not np.isfinite(array).all():
        raise ExportError(f"{where} holds {int(np.isnan(array).sum())} NaN and "
                          f"{int(np.isinf(array).sum())} infinite value(s) (as float32)")
    return array


def load_npy(path, where):
    """The array of a .npy file checked by checked_npy, as_model_input."""
    try:
        with open(path, "rb") as f:
            array = np.lib.format.read_array(f, allow_pickle=False)
    except OSError as e:
        raise ExportError(f"{where}: cannot read: {e.strerror}") from e
    except Exception as e:  # the file changed since checked_npy read its header
        raise ExportError(f"{where}: {type(e).__name__}: {e}") from e
    return as_model_input(array, where)


def load_npz(path, where):
    """{array name: array} of a .npz file checked by checked_npz, each as_model_input."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except OSError as e:
        raise ExportError(f"{where}: cannot read: {e.strerror}") from e
    except Exception as e:  # the file changed since checked_npz read its headers
        raise ExportError(f"{where}: {type(e).__name__}: {e}") from e
    return {key: as_model_input(array, f"{where}, array '{key}'")
            for key, array in arrays.items()}
