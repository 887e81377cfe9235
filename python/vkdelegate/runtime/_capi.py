"""ctypes declarations of the C API the runtime binds: vkd_delegate.h's structs and options,
vkd_model.h's functions (libvkdmodel). The structs mirror the headers field for field; each
carries its own struct_size, so the library writes only what this binding knows.
"""
import ctypes
import functools

import numpy as np

from vkdelegate import _native

MAX_RANK = 4  # VKD_MAX_RANK

# vkd_dtype
FLOAT32, INT32, INT8 = 0, 1, 2
DTYPE_CODES = {np.dtype(np.float32): FLOAT32, np.dtype(np.int32): INT32, np.dtype(np.int8): INT8}
# vkd_step_timing.place
STEP_GPU, STEP_HOST = 0, 1


class Options(ctypes.Structure):  # vkd_options
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("device", ctypes.c_char_p),
                ("validation", ctypes.c_int),
                ("profiling", ctypes.c_int),
                ("pipeline_cache_file", ctypes.c_char_p),
                ("constant_batch_bytes", ctypes.c_uint64),
                ("gpu_timeout_ms", ctypes.c_uint32)]


class Tensor(ctypes.Structure):  # vkd_tensor
    _fields_ = [("data", ctypes.c_void_p),
                ("bytes", ctypes.c_size_t),
                ("dtype", ctypes.c_int),
                ("rank", ctypes.c_uint32),
                ("sizes", ctypes.c_int64 * MAX_RANK)]


class TensorInfo(ctypes.Structure):  # vkd_tensor_info
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("name", ctypes.c_char_p),
                ("dtype", ctypes.c_int),
                ("rank", ctypes.c_uint32),
                ("sizes", ctypes.c_int64 * MAX_RANK),
                ("bytes", ctypes.c_size_t),
                ("device_dtype", ctypes.c_char_p),
                ("layout", ctypes.c_char_p),
                ("storage", ctypes.c_char_p)]


class NodeProfile(ctypes.Structure):  # vkd_node_profile
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("op", ctypes.c_char_p),
                ("kernel", ctypes.c_char_p),
                ("gpu_us", ctypes.c_double),
                ("tensors", ctypes.c_char_p)]


class StepTiming(ctypes.Structure):  # vkd_step_timing
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("step", ctypes.c_size_t),
                ("place", ctypes.c_int),
                ("label", ctypes.c_char_p),
                ("wall_us", ctypes.c_double),
                ("profile_count", ctypes.c_size_t)]


def sized(struct_type):
    """A zeroed out-struct with its struct_size set, as the C API asks."""
    value = struct_type()
    value.struct_size = ctypes.sizeof(struct_type)
    return value


_Handle = ctypes.c_void_p
_c_size = ctypes.c_size_t
_status = ctypes.c_int

# name: (restype, argtypes)
_PROTOTYPES = {
    "vkd_options_init": (None, [ctypes.POINTER(Options)]),
    "vkd_model_load": (_status, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Options),
                                 ctypes.POINTER(_Handle)]),
    "vkd_model_load_error": (ctypes.c_char_p, []),
    "vkd_model_input_count": (_c_size, [_Handle]),
    "vkd_model_output_count": (_c_size, [_Handle]),
    "vkd_model_input_info": (_status, [_Handle, _c_size, ctypes.POINTER(TensorInfo)]),
    "vkd_model_output_info": (_status, [_Handle, _c_size, ctypes.POINTER(TensorInfo)]),
    "vkd_model_execute": (_status, [_Handle, ctypes.POINTER(Tensor), _c_size,
                                    ctypes.POINTER(Tensor), _c_size]),
    "vkd_model_length_range": (_status, [_Handle, ctypes.POINTER(ctypes.c_int64),
                                         ctypes.POINTER(ctypes.c_int64)]),
    "vkd_model_length_of_inputs": (_status, [_Handle, ctypes.POINTER(Tensor), _c_size,
                                             ctypes.POINTER(ctypes.c_int64)]),
    "vkd_model_input_info_at_length": (_status, [_Handle, ctypes.c_int64, _c_size,
                                                 ctypes.POINTER(TensorInfo)]),
    "vkd_model_output_info_at_length": (_status, [_Handle, ctypes.c_int64, _c_size,
                                                  ctypes.POINTER(TensorInfo)]),
    "vkd_model_timing_count": (_c_size, [_Handle]),
    "vkd_model_timing": (_status, [_Handle, _c_size, ctypes.POINTER(StepTiming)]),
    "vkd_model_profile_entry": (_status, [_Handle, _c_size, _c_size,
                                          ctypes.POINTER(NodeProfile)]),
    "vkd_model_device_name": (ctypes.c_char_p, [_Handle]),
    "vkd_model_validation_message_count": (ctypes.c_uint64, [_Handle]),
    "vkd_model_last_error": (ctypes.c_char_p, [_Handle]),
    "vkd_model_destroy": (None, [_Handle]),
}


@functools.lru_cache(maxsize=None)
def library():
    """libvkdmodel, loaded once from vkdelegate._native.library_dir(), its functions typed.

    libvkdelegate.so.0 from the same folder is loaded first, so libvkdmodel's dependency is
    that one (the loader matches it by SONAME), never another copy on the system's path.
    """
    folder = _native.library_dir()
    ctypes.CDLL(str(folder / _native.DELEGATE_LIBRARY))
    path = folder / _native.MODEL_LIBRARY
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            function = getattr(lib, name)
        except AttributeError:
            raise _native.LibraryNotFoundError(
                f"{path} has no {name}: the library is older than this Python package") from None
        function.restype = restype
        function.argtypes = argtypes
    return lib


def text(value) -> str:
    """A C string from the library as str (NULL as "")."""
    return value.decode("utf-8", "replace") if value else ""
