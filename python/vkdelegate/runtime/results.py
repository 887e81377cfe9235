"""What a program describes: its tensors (TensorSpec) and, after a run, where the time went
(StepTiming per step, Dispatch per GPU dispatch), read from libvkdmodel on request."""
from typing import NamedTuple, Tuple

import numpy as np

from vkdelegate.runtime import _capi
from vkdelegate.runtime.errors import VkdError

_NUMPY_DTYPES = {code: dtype for dtype, code in _capi.DTYPE_CODES.items()}


class TensorSpec(NamedTuple):
    """One input or output: its name, shape and the dtype run() takes or gives."""
    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype


class Dispatch(NamedTuple):
    """One GPU dispatch of the last run, timed by Vulkan timestamp queries (`vkd run
    --profile`): the backend op, the shader variant (the route it took), its GPU time and its
    tensors ("out: y [1,8,64,64] int8x4 ...; in: ...")."""
    step: int
    op: str
    kernel: str
    gpu_us: float
    tensors: str


class StepTiming(NamedTuple):
    """One step of the last run: "gpu" (a blob's delegate) or "host" (the reference
    interpreter), its label ("step 1 (host node 3 (aten.max_pool2d))"), its host wall time and
    its dispatches (empty on the host or with profiling=False)."""
    step: int
    place: str
    label: str
    wall_us: float
    dispatches: Tuple[Dispatch, ...]


def tensor_spec(info) -> TensorSpec:
    return TensorSpec(_capi.text(info.name), tuple(info.sizes[:info.rank]),
                      _NUMPY_DTYPES[info.dtype])


def _dispatch(lib, handle, index, node, step) -> Dispatch:
    entry = _capi.sized(_capi.NodeProfile)
    status = lib.vkd_model_profile_entry(handle, index, node, entry)
    if status != 0:  # another thread's run in between changed the profile
        raise VkdError(status, _capi.text(lib.vkd_model_last_error(handle)))
    return Dispatch(step, _capi.text(entry.op), _capi.text(entry.kernel), entry.gpu_us,
                    _capi.text(entry.tensors))


def read_timings(lib, handle) -> list:
    """The StepTimings of the handle's last execute ([] before the first or after a failure)."""
    timings = []
    for index in range(lib.vkd_model_timing_count(handle)):
        t = _capi.sized(_capi.StepTiming)
        status = lib.vkd_model_timing(handle, index, t)
        if status != 0:
            raise VkdError(status, _capi.text(lib.vkd_model_last_error(handle)))
        dispatches = tuple(_dispatch(lib, handle, index, n, t.step)
                           for n in range(t.profile_count))
        place = "gpu" if t.place == _capi.STEP_GPU else "host"
        timings.append(StepTiming(t.step, place, _capi.text(t.label), t.wall_us, dispatches))
    return timings
