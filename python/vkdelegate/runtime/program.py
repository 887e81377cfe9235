"""load() and Program: a .vkd blob or a partition plan loaded through libvkdmodel (vkd_model.h)
and run on numpy arrays or torch CPU tensors.

A run is one C call, through the extension module vkd_execute where it is built, else ctypes
(_execute.py chooses at import): the vkd_tensor arrays are described once, at load; a run
allocates its outputs (or writes into out=) and hands the arrays' memory over. Anything that is
not already a plain array of its spec goes through arguments.py's checks and conversions.
"""
import ctypes
import os
import threading

import numpy as np

from vkdelegate.runtime import _capi, _execute
from vkdelegate.runtime.arguments import prepare_inputs, prepare_outputs, tensor_views
from vkdelegate.runtime.errors import Status, VkdError, invalid_argument
from vkdelegate.runtime.options import make_options
from vkdelegate.runtime.results import read_timings, tensor_spec

_empty = np.empty  # looked up once: run() is on the per-call path


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
            low, high = ctypes.c_int64(), ctypes.c_int64()
            self._check(lib.vkd_model_length_range(handle, ctypes.byref(low), ctypes.byref(high)))
            self._length_range = (low.value, high.value) if high.value else None
        except BaseException:
            self.close()
            raise
        self._at_length = {}  # a dynamic length's (call, input specs, output specs) by length
        # The one C call of a run, and what run() allocates for the outputs.
        self._plan = _execute.make_plan(_execute.function_address(lib.vkd_model_execute),
                                        handle, self._inputs, self._outputs)
        self._call = _execute.bind(self._plan)
        self._output_layouts = tuple((s.shape, s.dtype) for s in self._outputs)

    def _specs(self, count, describe):
        specs = []
        for index in range(count(self._handle)):
            info = _capi.sized(_capi.TensorInfo)
            self._check(describe(self._handle, index, info))  # a host-only tensor of rank > 4
            specs.append(tensor_spec(info))
        return tuple(specs)

    def _check(self, status):
        if status != 0:
            raise VkdError(status, _capi.text(self._lib.vkd_model_last_error(self._handle)))

    @property
    def length_range(self):
        """(min, max) of a blob compiled for a maximum sequence length (run() takes inputs of
        any length in it; `inputs` / `outputs` are the shapes at max), else None."""
        return self._length_range

    def _length_call(self, inputs):
        """For a model with a dynamic length, given inputs whose shapes are not the maximum's:
        (call, input specs, output specs) at the inputs' length, built once per length; None
        when the shapes are the maximum's or not those of tensors. A length out of range is the
        library's VkdError naming the input, the dim and the limit."""
        shapes = [getattr(x, "shape", None) for x in inputs]
        if len(shapes) != len(self._inputs) or any(s is None or len(s) > 4 for s in shapes):
            return None
        if all(tuple(s) == spec.shape for s, spec in zip(shapes, self._inputs)):
            return None
        tensors = (_capi.Tensor * len(shapes))()
        for t, shape in zip(tensors, shapes):
            t.rank = len(shape)
            t.sizes[:len(shape)] = [int(n) for n in shape]
        length = ctypes.c_int64()
        self._check(self._lib.vkd_model_length_of_inputs(self._handle, tensors, len(shapes),
                                                         ctypes.byref(length)))
        if length.value == self._length_range[1]:
            return None
        found = self._at_length.get(length.value)
        if found is None:
            lib, handle, n = self._lib, self._handle, length.value
            ins = self._specs(lib.vkd_model_input_count,
                              lambda h, i, info: lib.vkd_model_input_info_at_length(h, n, i, info))
            outs = self._specs(lib.vkd_model_output_count,
                               lambda h, i, info: lib.vkd_model_output_info_at_length(h, n, i,
                                                                                      info))
            plan = _execute.make_plan(_execute.function_address(lib.vkd_model_execute), handle,
                                      ins, outs)
            found = self._at_length[n] = (_execute.bind(plan), ins, outs, plan)
        return found[:3]

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

    def run(self, *inputs, out=None) -> list:
        """One inference. Inputs in the order of `inputs`: numpy arrays, or torch CPU tensors
        (then the outputs are tensors too), each of its spec's dtype and shape (a non-contiguous
        one is copied first). Returns the outputs in the order of `outputs`, new arrays each run;
        with `out` (a list or tuple of arrays or tensors, one per output, each of its dtype and
        shape, C-contiguous, writable and sharing no memory with an input or another output)
        they are written there instead and `out`'s elements returned."""
        # Straight-line code for the common case, plain arrays as the model takes them: after a
        # long device run the caller's caches are cold, and every line run here costs a miss.
        outputs = [_empty(shape, dtype) for shape, dtype in self._output_layouts] \
            if out is None else out
        torch = None
        with self._lock:
            self._last_run_ok = False  # until this run succeeds: no timings of an earlier one
            handle = self._handle
            if handle is None:
                raise self._closed()
            status = self._call(inputs, outputs)
            if status is None and self._length_range is not None:  # another length?
                at = self._length_call(inputs)
                if at is not None:
                    call, in_specs, out_specs = at
                    outputs = [_empty(o.shape, o.dtype) for o in out_specs] \
                        if out is None else out
                    status = call(inputs, outputs)
                    if status is None:
                        status, outputs, torch = self._call_converted(inputs, out, outputs, *at)
            if status is None:  # not all plain arrays of their specs
                status, outputs, torch = self._call_converted(inputs, out, outputs)
            if status != 0:
                raise VkdError(status, _capi.text(self._lib.vkd_model_last_error(handle)))
            self._last_run_ok = True
        if out is not None:
            return list(out)
        if torch is not None:
            return [torch.from_numpy(a) for a in outputs]
        return outputs

    def _call_converted(self, inputs, out, outputs, call=None, in_specs=None, out_specs=None):
        """run()'s call for arguments the plain call refused, with the lock held: tensors seen
        as arrays (the quick way), else every argument checked (one clear error each) and
        converted. (status, the arrays written, the torch module when tensors came in). `call`
        and the specs: those of the inputs' length (a dynamic length), else the program's."""
        call = call or self._call
        in_specs, out_specs = in_specs or self._inputs, out_specs or self._outputs
        if out is None:
            views, torch = tensor_views(inputs)
            if views is not None:
                status = call(views, outputs)
                if status is not None:
                    return status, outputs, torch
        inputs, torch = prepare_inputs(inputs, in_specs)
        if out is not None:
            outputs = prepare_outputs(out, out_specs, inputs, in_specs)
        status = call(inputs, outputs)
        if status is None:  # prepare_* pass only what the call takes
            raise VkdError(Status.INTERNAL, "run(): the binding refused the checked arguments")
        return status, outputs, torch

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
