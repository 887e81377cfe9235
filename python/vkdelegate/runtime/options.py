"""load()'s device and keyword options, checked and turned into vkd_options (vkd_delegate.h)
plus the weights path vkd_model_load takes."""
import os

from vkdelegate.runtime import _capi

# keyword: what it sets (the docstring of load() and python/README.md list the same)
OPTIONS = {
    "validation": "bool: the Khronos validation layer (also on when VKD_VALIDATION=1)",
    "profiling": "bool: a GPU timestamp pair around every dispatch (default True)",
    "pipeline_cache_file": "path: the VkPipelineCache file; 'off' = none (default: per user)",
    "constant_batch_bytes": "int > 0: staging bound while uploading constants",
    "gpu_timeout_ms": "int > 0: a GPU wait longer than this fails with Status.TIMEOUT",
    "weights": "path: the graph's .safetensors, when a plan's host step reads a constant",
}
_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1


def _flag(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return int(value)


def _path(name, value):
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {value!r}")
    return os.fsencode(value)


def _count(name, value, maximum):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if not 0 < value <= maximum:
        raise ValueError(f"{name} must be in 1..{maximum}, got {value}")
    return value


def _device(device):
    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"device index must be >= 0, got {device}")
        return str(device).encode()
    if isinstance(device, str):
        return device.encode()
    raise TypeError(f"device must be an index (int) or a name substring (str), got {device!r}")


def make_options(device, options: dict):
    """(vkd_options, weights path bytes or None) for vkd_model_load; TypeError for an unknown
    keyword or a wrong type, ValueError for a value out of range. The options struct's strings
    point into bytes objects it keeps referenced (ctypes c_char_p fields do)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"load() got unknown option(s) {', '.join(unknown)}; the options are "
                        f"device and {', '.join(OPTIONS)}")
    c_options = _capi.Options()
    _capi.library().vkd_options_init(c_options)
    c_options.device = _device(device)
    if options.get("validation") is not None:
        c_options.validation = _flag("validation", options["validation"])
    if options.get("profiling") is not None:
        c_options.profiling = _flag("profiling", options["profiling"])
    if options.get("pipeline_cache_file") is not None:
        c_options.pipeline_cache_file = _path("pipeline_cache_file",
                                              options["pipeline_cache_file"])
    if options.get("constant_batch_bytes") is not None:
        c_options.constant_batch_bytes = _count("constant_batch_bytes",
                                                options["constant_batch_bytes"], _UINT64_MAX)
    if options.get("gpu_timeout_ms") is not None:
        c_options.gpu_timeout_ms = _count("gpu_timeout_ms", options["gpu_timeout_ms"],
                                          _UINT32_MAX)
    weights = options.get("weights")
    return c_options, None if weights is None else _path("weights", weights)
