"""run()'s arguments when they are not already what the C call takes as it is (_execute.py):
numpy arrays or torch CPU tensors, checked against the program's specs with one clear message
each, and turned into C-contiguous numpy arrays over the same memory where it already is
C-contiguous (a non-contiguous input is copied once; a tensor is seen through .numpy()).
torch is never imported here: a tensor can only be passed once the caller has imported it
(sys.modules)."""
import ctypes
import sys

import numpy as np

from vkdelegate.runtime.errors import invalid_argument

_addressof, _char_view = ctypes.addressof, ctypes.c_char.from_buffer


def data_address(array: np.ndarray) -> int:
    """Where a C-contiguous array's bytes start. ctypes' view of a writable buffer is the cheap
    way (~0.2 us; array.ctypes.data builds a helper object, ~1 us, and far more with the cold
    caches a device's run leaves behind); a read-only or empty array takes array.ctypes."""
    try:
        return _addressof(_char_view(array))
    except (TypeError, ValueError):
        return array.ctypes.data


def shape_text(shape) -> str:
    return "[" + ",".join(str(s) for s in shape) + "]"  # the library's form: [1,3,8,8]


def _input(index, spec) -> str:
    return f"input {index} '{spec.name}'"


def _output(index, spec) -> str:
    return f"out[{index}] '{spec.name}'"


def _check(what, spec, dtype, shape):
    if dtype != spec.dtype:
        raise invalid_argument(f"{what} is {spec.dtype}, got {dtype}")
    if tuple(shape) != spec.shape:
        raise invalid_argument(f"{what} has shape {shape_text(shape)}, the model was compiled "
                               f"for {shape_text(spec.shape)}")


_INT32 = np.dtype(np.int32)
_INT32_RANGE = (np.iinfo(np.int32).min, np.iinfo(np.int32).max)


def _narrowed_ids(array, what):
    """An int64 array (token ids as torch and HF tokenizers give them) for an int32 input, as
    int32; a value outside int32 is an error naming the input, the element and the value (the
    ids' own range, the table's rows, the library checks)."""
    outside = np.flatnonzero((array < _INT32_RANGE[0]) | (array > _INT32_RANGE[1]))
    if outside.size:
        i = int(outside[0])
        raise invalid_argument(f"{what}: element {i} is {int(array.reshape(-1)[i])}, outside "
                               "int32 (the model holds these ids as int32)")
    return np.ascontiguousarray(array, dtype=np.int32)


def _tensor_as_array(value, what, spec, torch, writable):
    if not value.is_cpu:
        raise invalid_argument(f"{what} is a tensor on {value.device}; pass a CPU tensor "
                               "(.cpu())")
    if value.dtype != getattr(torch, spec.dtype.name):
        raise invalid_argument(f"{what} is {spec.dtype}, got {value.dtype}")
    _check(what, spec, spec.dtype, value.shape)
    if not writable:  # a lazily negated view, a strided one: materialized once
        value = value.detach()
        if value.is_neg() or not value.is_contiguous():
            value = value.resolve_neg().contiguous()
        return value.numpy()
    if value.requires_grad:
        raise invalid_argument(f"{what} requires grad; pass one that does not (.detach())")
    if value.is_neg() or not value.is_contiguous():
        raise invalid_argument(f"{what} is not contiguous; the outputs are written whole")
    return value.numpy()


def _torch_if_passed(values):
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(v, torch.Tensor) for v in values):
        return torch
    return None


def tensor_views(inputs):
    """(each input's .numpy() view, the torch module) when every input is a torch.Tensor that
    .numpy() shows as it is (on the CPU, not requiring grad, not lazily negated), else (None,
    None): the quick way for tensors, taken before prepare_inputs' checks; the call checks
    dtypes, shapes and contiguity, and a refusal sends them through prepare_inputs."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    views = []
    for value in inputs:
        if type(value) is not torch.Tensor:
            return None, None
        try:
            views.append(value.numpy())
        except (RuntimeError, TypeError):  # grad, negation, device, a dtype numpy lacks
            return None, None
    return tuple(views), torch


def prepare_inputs(inputs, specs):
    """(a tuple of C-contiguous numpy arrays, one per input, the torch module when a tensor was
    passed else None). int64 values for an int32 input (token ids) are narrowed, checked to fit.
    VkdError (INVALID_ARGUMENT) for the wrong count, or naming the input of another dtype, shape
    or device; TypeError for a value that is neither an array nor a tensor."""
    if len(inputs) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise invalid_argument(f"run() takes {len(specs)} input(s) ({names}), got {len(inputs)}")
    torch = _torch_if_passed(inputs)
    arrays = []
    for index, (value, spec) in enumerate(zip(inputs, specs)):
        what = _input(index, spec)
        if spec.dtype == _INT32 and torch is not None and isinstance(value, torch.Tensor) \
                and value.dtype == torch.int64 and value.is_cpu:
            value = value.detach().resolve_neg().numpy()
        if isinstance(value, np.ndarray) and spec.dtype == _INT32 and value.dtype == np.int64:
            _check(what, spec, spec.dtype, value.shape)
            arrays.append(_narrowed_ids(value, what))
        elif isinstance(value, np.ndarray):
            _check(what, spec, value.dtype, value.shape)
            arrays.append(np.asarray(value, order="C"))  # a plain ndarray; copied if strided
        elif torch is not None and isinstance(value, torch.Tensor):
            arrays.append(_tensor_as_array(value, what, spec, torch, writable=False))
        else:
            raise TypeError(f"{what}: expected a numpy array or a torch CPU tensor, got "
                            f"{type(value).__name__}")
    return tuple(arrays), torch


def prepare_outputs(out, specs, inputs, input_specs):
    """run(out=...): a list of numpy arrays over the memory of `out`'s arrays or tensors, which
    the library writes the outputs into. Each must be of its output's dtype and shape,
    C-contiguous, writable, and share no memory with an input (`inputs`, the prepared arrays,
    described by `input_specs`) or another output. VkdError (INVALID_ARGUMENT) naming the one
    that is not; TypeError for `out` not a list or tuple, or an element neither an array nor a
    tensor."""
    if not isinstance(out, (list, tuple)):
        raise TypeError(f"run(): out= takes a list or tuple of arrays, one per output, got "
                        f"{type(out).__name__}")
    if len(out) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise invalid_argument(f"run(): out= takes {len(specs)} array(s) ({names}), got "
                               f"{len(out)}")
    torch = _torch_if_passed(out)
    arrays = []
    for index, (value, spec) in enumerate(zip(out, specs)):
        what = _output(index, spec)
        if isinstance(value, np.ndarray):
            _check(what, spec, value.dtype, value.shape)
            if not value.flags.writeable:
                raise invalid_argument(f"{what} is read-only")
            if not value.flags.c_contiguous:
                raise invalid_argument(f"{what} is not C-contiguous; the outputs are written "
                                       "whole")
            array = np.asarray(value)
        elif torch is not None and isinstance(value, torch.Tensor):
            array = _tensor_as_array(value, what, spec, torch, writable=True)
        else:
            raise TypeError(f"{what}: expected a numpy array or a torch CPU tensor, got "
                            f"{type(value).__name__}")
        for other_index, other in enumerate(inputs):
            if np.may_share_memory(array, other):
                raise invalid_argument(f"{what} shares memory with "
                                       f"{_input(other_index, input_specs[other_index])}")
        for other_index, other in enumerate(arrays):
            if np.may_share_memory(array, other):
                raise invalid_argument(f"{what} shares memory with "
                                       f"{_output(other_index, specs[other_index])}")
        arrays.append(array)
    return arrays
