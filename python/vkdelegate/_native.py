"""Where the native parts live: libvkdelegate, libvkdmodel and the `vkd` binary.

One lookup for everything that needs them (the runtime's ctypes binding, the `vkd` console
script), in this order:
  1. the folder named by the environment variable VKD_LIBRARY_DIR (when set, only there);
  2. vkdelegate/_native/ inside the installed package (the wheel puts them there);
  3. <checkout>/build, for the source tree (python/vkdelegate/../../build);
  4. PREFIX/lib, for `cmake --install build --prefix PREFIX`, which puts this package in
     PREFIX/lib/python3/dist-packages/vkdelegate and `vkd` in PREFIX/bin (the install
     test checks it).
A folder counts when it holds libvkdmodel.so.0 (the name the wheel gives the library; a build
tree has it as a link). The folder _native/ and this module share a name: the module wins the
import, the folder holds no Python.
"""
import os
from pathlib import Path

LIBRARY_DIR_VARIABLE = "VKD_LIBRARY_DIR"
MODEL_LIBRARY = "libvkdmodel.so.0"
DELEGATE_LIBRARY = "libvkdelegate.so.0"
VKD_BINARY = "vkd"

_PACKAGE_DIR = Path(__file__).resolve().parent


class LibraryNotFoundError(RuntimeError):
    """The native library (or the vkd binary) is in none of the places looked at."""


def _candidates():
    """(what, folder) in lookup order; only VKD_LIBRARY_DIR when it is set."""
    chosen = os.environ.get(LIBRARY_DIR_VARIABLE)
    if chosen:
        return [(LIBRARY_DIR_VARIABLE, Path(chosen))]
    return [("the package", _PACKAGE_DIR / "_native"),
            ("the source tree", _PACKAGE_DIR.parent.parent / "build"),
            ("the install prefix", _PACKAGE_DIR.parents[2])]


def library_dir() -> Path:
    """The folder holding libvkdmodel.so.0 and libvkdelegate.so.0 (and normally `vkd`)."""
    looked = []
    for what, folder in _candidates():
        if (folder / MODEL_LIBRARY).is_file():
            return folder
        looked.append(f"{folder} ({what})")
    hint = (f"; build it (cmake --build build --target vkdmodel) or set {LIBRARY_DIR_VARIABLE}"
            if not os.environ.get(LIBRARY_DIR_VARIABLE) else "")
    raise LibraryNotFoundError(f"{MODEL_LIBRARY} not found in " + ", ".join(looked) + hint)


def vkd_binary() -> Path:
    """The `vkd` command-line tool next to the libraries."""
    folder = library_dir()
    binary = folder / VKD_BINARY
    if not binary.is_file() and (folder.parent / "bin" / VKD_BINARY).is_file():
        binary = folder.parent / "bin" / VKD_BINARY  # an install prefix: PREFIX/bin/vkd
    if not binary.is_file():
        raise LibraryNotFoundError(f"{binary} not found (the vkd binary lies next to "
                                   f"{MODEL_LIBRARY})")
    return binary
