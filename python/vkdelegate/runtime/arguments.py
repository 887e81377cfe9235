"""run()'s inputs: numpy arrays or torch CPU tensors, checked against the program's input specs
and handed to the C API by address, without a copy where the memory is already C-contiguous
(a non-contiguous one is copied once). torch is never imported here: a tensor can only be
passed once the caller has imported it (sys.modules)."""
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


def _what(index, spec) -> str:
    return f"input {index} '{spec.name}'"


def _check(index, spec, dtype, shape):
    if dtype != spec.dtype:
        raise invalid_argument(f"{_what(index, spec)} is {spec.dtype}, got {dtype}")
    if tuple(shape) != spec.shape:
        raise invalid_argument(f"{_what(index, spec)} has shape {shape_text(shape)}, the model "
                               f"was compiled for {shape_text(spec.shape)}")


def _array(value, index, spec):
    _check(index, spec, value.dtype, value.shape)
    array = value if value.flags.c_contiguous else np.ascontiguousarray(value)
    return array, data_address(array)


def _tensor(value, index, spec, torch):
    if not value.is_cpu:
        raise invalid_argument(f"{_what(index, spec)} is a tensor on {value.device}; pass a CPU "
                               "tensor (.cpu())")
    expected = getattr(torch, spec.dtype.name)
    if value.dtype != expected:
        raise invalid_argument(f"{_what(index, spec)} is {spec.dtype}, got {value.dtype}")
    _check(index, spec, spec.dtype, value.shape)
    if value.is_neg() or not value.is_contiguous():  # a lazily negated view, a strided one
        value = value.detach().resolve_neg().contiguous()
    return value, value.data_ptr()


def prepare_inputs(inputs, specs):
    """(objects to keep alive during the call, their data addresses, the torch module when a
    tensor was passed else None). VkdError (INVALID_ARGUMENT) naming the input for another
    dtype, shape or device; TypeError for a value that is neither an array nor a tensor."""
    torch = sys.modules.get("torch")
    if torch is not None and not any(isinstance(v, torch.Tensor) for v in inputs):
        torch = None
    held, addresses = [], []
    for index, (value, spec) in enumerate(zip(inputs, specs)):
        if isinstance(value, np.ndarray):
            value, address = _array(value, index, spec)
        elif torch is not None and isinstance(value, torch.Tensor):
            value, address = _tensor(value, index, spec, torch)
        else:
            raise TypeError(f"{_what(index, spec)}: expected a numpy array or a torch CPU "
                            f"tensor, got {type(value).__name__}")
        held.append(value)
        addresses.append(address)
    return held, addresses, torch
