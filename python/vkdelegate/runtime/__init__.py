"""vkdelegate.runtime: run a compiled model from Python.

    from vkdelegate import runtime
    with runtime.load("model.vkd") as program:        # or MODEL.partition.json
        print(program.inputs, program.device)        # TensorSpec(name, shape, dtype), ...
        (y,) = program.run(x)                         # numpy in, numpy out (torch in, torch out)
        program.run(x, out=[y])                       # into arrays of the caller's
        program.last_timings, program.last_profile    # per step; per GPU dispatch

A binding of libvkdmodel's C API (vkd_model.h), found by vkdelegate._native: a run's C call goes
through the extension module vkd_execute where it is built, else ctypes (_execute.py); numpy is
its only dependency (torch is used only when a tensor is passed). Failures raise VkdError with
the library's status and message; LibraryNotFoundError when the library is nowhere to be found.
"""
from vkdelegate._native import LibraryNotFoundError
from vkdelegate.runtime.errors import Status, VkdError
from vkdelegate.runtime.program import Program, load
from vkdelegate.runtime.results import Dispatch, StepTiming, TensorSpec

__all__ = ["load", "Program", "TensorSpec", "StepTiming", "Dispatch", "VkdError", "Status",
           "LibraryNotFoundError"]
