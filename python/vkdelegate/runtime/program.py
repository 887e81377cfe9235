"""load() and Program: a .vkd blob or a partition plan loaded through libvkdmodel (ctypes over
vkd_model.h) and run on numpy arrays or torch CPU tensors.

A run costs the binding a few microseconds: the input and output vkd_tensor arrays are built at
load, a run only writes their data pointers (inputs passed by pointer, outputs allocated per
run, so every run's results are the caller's own) and makes one C call.
"""
import ctypes
import os
import threading

import numpy as np

from vkdelegate.runtime import _capi
from vkdelegate.runtime.arguments import data_address, prepare_inputs
from vkdelegate.runtime.errors import VkdError, invalid_argument
from vkdelegate.runtime.options import make_options
from vkdelegate.runtime.results import read_timings, tensor_spec

_ndarray, _empty = np.ndarray, np.empty  # looked up once: run() is on the per-call path


def load(path, device=None, **options) -> "Program":
    """Loads `path`: a name ending in .json is a partition plan (`vkd compile --partition`), any
    other a blob (`vkd compile`). `device`: an index or a name substring (None: $VKD_DEVICE,
    else the first device). Options (keywords): validation, profiling, pipeline_cache_file,
    constant_batch_bytes, gpu_timeout_ms (vkd_options' fields) and weights (the graph's
    .safetensors, for a plan whose host step reads a constant). VkdError with the library's
    status and message when it cannot be loaded; TypeError for an unknown option."""
    c_options, weights = make_options(device, options)
    lib = _capi.library()
    handle = ctypes.c_void_p()
    status = lib.vkd_model_load(os.fsencode(path), weights, c_options, ctypes.byref(handle))
    if status != 0:
        raise VkdError(status, _capi.text(lib.vkd_model_load_error()))
    return Program(lib, handle, os.fspath(path))


def _tensor_slots(specs):
    """A vkd_tensor array describing `specs`; a run fills in only the data pointers."""
    slots = (_capi.Tensor * len(specs))()
    for slot, spec in zip(slots, specs):
        slot.bytes = int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
        slot.dtype = _capi.DTYPE_CODES[spec.dtype]
        slot.rank = len(spec.shape)
        slot.sizes[:len(spec.shape)] = spec.shape
    return slots


class Program:
    """A loaded model. `inputs` / `outputs`: TensorSpec(name, shape, dtype) in the model's order;
    run(*inputs) -> list of outputs; last_timings / last_profile: where the last run's time
    went; close() (or a with block) frees the device resources. Calls on one program are
    serialized (it may be shared between threads)."""

    def __init__(self, lib, handle, path):
        self._lib = lib
        self._handle = handle
        self._lock = threading.Lock()
        self._last_run_ok = False
        self.path = path
        try:
            self._inputs = self._specs(lib.vkd_model_input_count, lib.vkd_model_input_info)
            self._outputs = self._specs(lib.vkd_model_output_count, lib.vkd_model_output_info)
        except BaseException:
            self.close()
            raise
        self._in_slots = _tensor_slots(self._inputs)
        self._out_slots = _tensor_slots(self._outputs)
        self._execute = lib.vkd_model_execute  # the one C call of a run

    def _specs(self, count, describe):
        specs = []
        for index in range(count(self._handle)):
            info = _capi.sized(_capi.TensorInfo)
            status = describe(self._handle, index, info)
            if status != 0:  # a host-only tensor of rank > 4
                raise VkdError(status, _capi.text(self._lib.vkd_model_last_error(self._handle)))
            specs.append(tensor_spec(info))
        return tuple(specs)

    @property
    def inputs(self):
        return self._inputs

    @property
    def outputs(self):
        return self._outputs

    def _closed(self):
        return invalid_argument(f"the program of {self.path} is closed")

    def _live_handle(self):
        if self._handle is None:
            raise self._closed()
        return self._handle

    def run(self, *inputs) -> list:
        """One inference. Inputs in the order of `inputs`: numpy arrays, or torch CPU tensors
        (then the outputs are tensors too), each of its spec's dtype and shape (a non-contiguous
        one is copied first). Returns the outputs in the order of `outputs`."""
        self._last_run_ok = False  # until this run succeeds: no timings of an earlier one
        specs = self._inputs
        if len(inputs) != len(specs):
            names = ", ".join(s.name for s in specs)
            raise invalid_argument(f"run() takes {len(specs)} input(s) ({names}), got "
                                   f"{len(inputs)}")
        # Straight-line code for the common case, numpy arrays as the model takes them: after a
        # long device run the caller's caches are cold, and every extra frame costs there.
        held, addresses, torch = inputs, [], None
        for v, s in zip(inputs, specs):
            if (type(v) is not _ndarray or v.dtype != s.dtype or v.shape != s.shape
                    or not v.flags.c_contiguous):
                held, addresses, torch = prepare_inputs(inputs, specs)
                break
            addresses.append(data_address(v))
        outputs = [_empty(s.shape, s.dtype) for s in self._outputs]
        with self._lock:
            handle = self._handle
            if handle is None:
                raise self._closed()
            for address, slot in zip(addresses, self._in_slots):
                slot.data = address
            for array, slot in zip(outputs, self._out_slots):
                slot.data = data_address(array)
            status = self._execute(handle, self._in_slots, len(held), self._out_slots,
                                   len(outputs))
            if status != 0:
                raise VkdError(status, _capi.text(self._lib.vkd_model_last_error(handle)))
            self._last_run_ok = True
        if torch is not None:
            return [torch.from_numpy(a) for a in outputs]
        return outputs

    @property
    def last_timings(self) -> list:
        """StepTiming per step of the last run, in execution order ([] before the first run and
        after a failed one)."""
        with self._lock:
            handle = self._live_handle()
            return read_timings(self._lib, handle) if self._last_run_ok else []

    @property
    def last_profile(self) -> list:
        """Every GPU dispatch of the last run, in execution order (Dispatch; empty with
        profiling=False)."""
        return [d for t in self.last_timings for d in t.dispatches]

    @property
    def device(self) -> str:
        """The Vulkan device of the first GPU step ("none (every step runs on the host)")."""
        with self._lock:
            return _capi.text(self._lib.vkd_model_device_name(self._live_handle()))

    @property
    def validation_message_count(self) -> int:
        """Khronos validation messages so far (0 unless validation is on)."""
        with self._lock:
            return self._lib.vkd_model_validation_message_count(self._live_handle())

    def close(self):
        """Frees the program (waits for the GPU first); later calls raise VkdError. Idempotent."""
        with self._lock:
            handle, self._handle = self._handle, None
            if handle is not None:
                self._lib.vkd_model_destroy(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and getattr(self, "_lock", None):
            self.close()

    def __repr__(self):
        state = ("closed" if self._handle is None
                 else f"{len(self._inputs)} input(s), {len(self._outputs)} output(s)")
        return f"<vkdelegate.runtime.Program {self.path!r}: {state}>"
