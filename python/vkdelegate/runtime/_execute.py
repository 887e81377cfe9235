"""How run() calls vkd_model_execute. Two bindings of one plan, chosen once, at import (BINDING
says which): the extension module vkd_execute (python/native/vkd_execute.c, CPython's stable
ABI for 3.11+) where it lies next to libvkdmodel, else ctypes. A plan (CallPlan) describes a
program's tensors once, at load; bind(plan) gives the function a run calls, with the program's
lock held:

    call(inputs, outputs) -> the C API's status, or None (nothing called) when an argument is
    not exactly what its tensor takes: a numpy.ndarray (not a subclass) of its dtype and shape,
    C-contiguous, an output writable and sharing no byte with another argument. run() then
    checks and converts them with the error messages (arguments.py) and calls again.

Both bindings accept and refuse the same arguments; test_runtime.py runs both.
"""
import ctypes
import functools
import importlib.util
import sys
import warnings

import numpy as np

from vkdelegate import _native
from vkdelegate.runtime import _capi
from vkdelegate.runtime.arguments import data_address

_addressof, _char_view = ctypes.addressof, ctypes.c_char.from_buffer

EXTENSION_FILE = "vkd_execute.abi3.so"
_MODULE_NAME = "vkdelegate.runtime.vkd_execute"  # PyInit_vkd_execute


class CallPlan(ctypes.Structure):  # vkd_execute.c's vkd_call_plan
    _fields_ = [("execute", ctypes.c_void_p),  # vkd_model_execute, or a stand-in with its type
                ("handle", ctypes.c_void_p),
                ("inputs", ctypes.POINTER(_capi.Tensor)),
                ("input_count", ctypes.c_size_t),
                ("outputs", ctypes.POINTER(_capi.Tensor)),
                ("output_count", ctypes.c_size_t)]


def tensor_slots(specs):
    """A vkd_tensor array describing `specs` (TensorSpec); a call fills in the data pointers."""
    slots = (_capi.Tensor * len(specs))()
    for slot, spec in zip(slots, specs):
        slot.bytes = int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
        slot.dtype = _capi.DTYPE_CODES[spec.dtype]
        slot.rank = len(spec.shape)
        slot.sizes[:len(spec.shape)] = spec.shape
    return slots


def make_plan(execute_address: int, handle, input_specs, output_specs) -> CallPlan:
    """The plan of a program: `execute_address` (a function of vkd_model_execute's type) called
    on `handle` with tensors of the specs. The plan keeps its tensor arrays alive."""
    plan = CallPlan()
    plan.execute = execute_address
    plan.handle = handle
    # Kept on the plan as Python attributes too: the ctypes binding fills them in and checks
    # arguments against the specs.
    plan.input_slots, plan.output_slots = tensor_slots(input_specs), tensor_slots(output_specs)
    plan.inputs, plan.input_count = plan.input_slots, len(input_specs)
    plan.outputs, plan.output_count = plan.output_slots, len(output_specs)
    plan.specs = (tuple(input_specs), tuple(output_specs))
    return plan


def function_address(function) -> int:
    """Where a ctypes function (lib.vkd_model_execute) lies."""
    return ctypes.cast(function, ctypes.c_void_p).value


class _CtypesCall:
    """The ctypes binding: the plan's tensor arrays filled in place (so calls must not overlap:
    run() holds the program's lock) and one ctypes call."""
    _prototype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_capi.Tensor),
                                  ctypes.c_size_t, ctypes.POINTER(_capi.Tensor), ctypes.c_size_t)

    def __init__(self, plan: CallPlan):
        self._plan = plan
        self._execute = self._prototype(plan.execute)
        self._handle = plan.handle
        self._in_specs, self._out_specs = plan.specs
        self._in_slots, self._out_slots = plan.input_slots, plan.output_slots
        self._in_bytes = [s.bytes for s in self._in_slots]
        self._out_bytes = [s.bytes for s in self._out_slots]

    def __call__(self, inputs, outputs):
        if (type(outputs) not in (list, tuple) or len(inputs) != len(self._in_specs)
                or len(outputs) != len(self._out_specs)):
            return None
        in_addresses = []
        for v, s in zip(inputs, self._in_specs):
            if (type(v) is not np.ndarray or v.dtype != s.dtype or v.shape != s.shape
                    or not v.flags.c_contiguous):
                return None
            in_addresses.append(data_address(v))  # read-only ones too
        out_addresses = []
        for v, s in zip(outputs, self._out_specs):
            if type(v) is not np.ndarray or v.dtype != s.dtype or v.shape != s.shape:
                return None
            try:  # ctypes' view exists only of a C-contiguous, writable buffer
                out_addresses.append(_addressof(_char_view(v)))
            except (TypeError, ValueError):
                return None
        if self._outputs_overlap(in_addresses, out_addresses):
            return None
        for address, slot in zip(in_addresses, self._in_slots):
            slot.data = address
        for address, slot in zip(out_addresses, self._out_slots):
            slot.data = address
        return self._execute(self._handle, self._in_slots, len(in_addresses), self._out_slots,
                             len(out_addresses))

    def _outputs_overlap(self, in_addresses, out_addresses):
        """Whether an output shares a byte with another argument (the extension checks the
        same)."""
        ranges = list(zip(in_addresses, self._in_bytes))
        for address, size in zip(out_addresses, self._out_bytes):
            for other, other_size in ranges:
                if size and other_size and address < other + other_size and other < address + size:
                    return True
            ranges.append((address, size))
        return False


def ctypes_call(plan: CallPlan):
    return _CtypesCall(plan)


def _load_extension():
    """vkd_execute from the libraries' folder, or None where it is absent or this Python cannot
    load it (not CPython, or older than 3.11, the ABI it is built for). One that is there but
    fails to load is a warning, and ctypes serves."""
    if sys.implementation.name != "cpython" or sys.version_info < (3, 11):
        return None
    try:
        path = _native.library_dir() / EXTENSION_FILE
    except _native.LibraryNotFoundError:
        return None  # load() says so, naming every folder looked at
    if not path.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if module.PLAN_SIZE != ctypes.sizeof(CallPlan):
            raise ImportError(f"its plan is {module.PLAN_SIZE} bytes, this package's "
                              f"{ctypes.sizeof(CallPlan)}: it was built from another version")
    except ImportError as error:
        warnings.warn(f"vkdelegate.runtime: {path} not used ({error}); calling the library "
                      "through ctypes", RuntimeWarning, stacklevel=2)
        return None
    return module


_extension = _load_extension()


def extension_call(plan: CallPlan):
    """The extension binding (vkd_execute.execute on the plan); None where it is not loaded.
    The caller keeps the plan alive."""
    if _extension is None:
        return None
    return functools.partial(_extension.execute, ctypes.addressof(plan))


BINDING = "extension" if _extension is not None else "ctypes"
bind = extension_call if _extension is not None else ctypes_call
