"""Registers VkdBackend with ExecuTorch's runtime in this process: loads libvkd_executorch.so
(executorch_backend/), whose static initializer adds VkdBackend to the backend registry of the
libexecutorch that `executorch.runtime` loaded, so a .pte with VkdBackend delegates runs
through executorch.runtime.Runtime."""
import ctypes

from vkdelegate._native import LibraryNotFoundError, library_dir

RUNTIME_LIBRARY = "libvkd_executorch.so"


def runtime_library_path():
    """libvkd_executorch.so next to the project's libraries (an install, the wheel) or in the
    build tree's executorch_backend/."""
    folder = library_dir()
    candidates = [folder / RUNTIME_LIBRARY, folder / "executorch_backend" / RUNTIME_LIBRARY]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise LibraryNotFoundError(f"{RUNTIME_LIBRARY} not found in {folder} or "
                               f"{folder / 'executorch_backend'} (build the CMake target "
                               "vkd_executorch, built when the executorch package is present)")


def load_runtime_backend():
    """Loads the library, ExecuTorch's runtime first (the library resolves its registry
    there); returns the ctypes handle, which must stay loaded."""
    import executorch.runtime  # noqa: F401  (loads libexecutorch, the registry's home)
    return ctypes.CDLL(str(runtime_library_path()))
