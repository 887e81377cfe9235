"""CTest `python_package`: the pip package's layout, from the existing build tree.

`pip wheel .` (pyproject.toml, scikit-build-core) builds the native targets and installs CMake
components into the wheel. A second build would cost CI ~6 minutes of its 2 cores, so this runs
the same install rules instead: the CMake components named in pyproject.toml, installed
(stripped, as the wheel is) from BUILD_DIR into a temporary prefix, which then stands for
site-packages:

  1. vkdelegate/ holds every .py file of python/vkdelegate, unchanged; vkdelegate/_native/ holds
     exactly libvkdelegate.so.0, libvkdmodel.so.0, vkd and, where the build made it (--extension),
     the runtime's extension module vkd_execute.abi3.so, regular files (a wheel has no links);
  2. the loader resolves every library they need outside the build tree, libvkdelegate.so.0 in
     _native/ itself (libvkdmodel's RUNPATH $ORIGIN), with LD_LIBRARY_PATH unset;
  3. with only the prefix on sys.path, in a folder outside the source tree and with neither
     LD_LIBRARY_PATH nor VKD_LIBRARY_DIR set, `import vkdelegate` comes from the prefix, its
     _native lookup finds the prefix's libraries and binary, ctypes loads libvkdmodel.so.0 from
     there and calls libvkdelegate's vkd_status_name through it, the runtime binds it through the
     extension module where one was installed (else ctypes), and the `vkd` console script's
     function (pyproject's [project.scripts], called as pip's generated script calls it) runs
     the binary: `--version` prints the version pyproject's regex reads from CMakeLists.txt,
     `help` the usage, and an unknown command exits 2, vkd's own status; with VKD_LIBRARY_DIR
     naming a folder without the binary it prints one line naming it and exits 1;
  4. the `export` extra pins torch, torchvision and torchao to python/requirements.lock's versions;
  5. where the build made the ExecuTorch backend (--executorch), _native/ also holds
     libvkd_executorch.so and vkd_et_runner, whose RUNPATH is exactly $ORIGIN and
     $ORIGIN/../../executorch/lib: with the executorch package beside vkdelegate (a link to
     VKD_PYTHON's, as pip would install both into one site-packages) the loader takes ExecuTorch's
     libraries from there and libvkdelegate.so.0 from _native/, and `import vkdelegate.executorch`
     loads _native's libvkd_executorch.so, which registered VkdBackend.

usage: check_python_package.py --build-dir DIR --source-dir DIR [--cmake CMAKE] [--extension]
                               [--executorch]
VKD_KEEP_INSTALL_TEST=1 keeps the temporary prefix.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

NATIVE_FILES = {"libvkdelegate.so.0", "libvkdmodel.so.0", "vkd"}
EXTENSION_FILE = "vkd_execute.abi3.so"  # python/CMakeLists.txt, where the build makes it
EXPORT_PINNED = ("torch", "torchvision", "torchao")
EXECUTORCH_FILES = {"libvkd_executorch.so", "vkd_et_runner"}  # executorch_backend/, where built
EXECUTORCH_RUNPATH = "$ORIGIN:$ORIGIN/../../executorch/lib"


def fail(message: str) -> None:
    sys.exit(f"FAIL: {message}")


def step(message: str) -> None:
    print(f"\n=== {message}", flush=True)


def run(command: list, **kwargs) -> subprocess.CompletedProcess:
    print("$ " + " ".join(str(c) for c in command), flush=True)
    return subprocess.run(command, text=True, capture_output=True, **kwargs)


def python_lines(code: str, what: str, env: dict, prefix: Path) -> list:
    """The lines `python -s -c code` prints in the installed prefix (echoed); a failure is
    fail() naming `what` with Python's message."""
    result = run([sys.executable, "-s", "-c", code], env=env, cwd=prefix)
    if result.returncode != 0:
        fail(f"{what}: {result.stderr.strip()}")
    print(result.stdout, end="")
    return result.stdout.splitlines()


def check_layout(source_dir: Path, prefix: Path, native_files: set) -> None:
    step("layout")
    package = prefix / "vkdelegate"
    wanted = sorted(p.relative_to(source_dir / "python") for p in
                    (source_dir / "python" / "vkdelegate").rglob("*.py"))
    for relative in wanted:
        installed = prefix / relative
        if not installed.is_file():
            fail(f"not installed: {relative}")
        if installed.read_bytes() != (source_dir / "python" / relative).read_bytes():
            fail(f"{relative} differs from the source tree's")
    print(f"{len(wanted)} Python files, as in python/vkdelegate")
    if any(package.rglob("__pycache__")):
        fail("__pycache__ installed")
    native = package / "_native"
    found = {p.name for p in native.iterdir()} if native.is_dir() else set()
    if found != native_files:
        fail(f"vkdelegate/_native holds {sorted(found)}, not {sorted(native_files)}")
    for name in sorted(native_files):
        path = native / name
        if path.is_symlink() or not path.is_file():
            fail(f"vkdelegate/_native/{name} is not a regular file (a wheel stores no links)")
        print(f"vkdelegate/_native/{name}: {path.stat().st_size} bytes")
    if not os.access(native / "vkd", os.X_OK):
        fail("vkdelegate/_native/vkd is not executable")


def check_loader(build_dir: Path, prefix: Path, env: dict, native_files: set) -> None:
    step("what the loader finds (ldd, LD_LIBRARY_PATH unset)")
    native = prefix / "vkdelegate" / "_native"
    for name in sorted(native_files):
        result = run(["ldd", native / name], env=env)
        print(result.stdout, end="")
        if result.returncode != 0:
            fail(f"ldd {name}: {result.stderr.strip()}")
        loads_delegate = False
        for line in result.stdout.splitlines():
            if "not found" in line:
                fail(f"{name}: {line.strip()}")
            if str(build_dir.resolve()) in line:
                fail(f"{name} loads from the build tree: {line.strip()}")
            fields = line.split()  # NAME => PATH (ADDRESS)
            if fields[0] == "libvkdelegate.so.0":
                loads_delegate = True
                if len(fields) < 3 or Path(fields[2]).resolve() != (native / fields[0]).resolve():
                    fail(f"{name} does not load _native/libvkdelegate.so.0: {line.strip()}")
        if name == "libvkdmodel.so.0" and not loads_delegate:
            fail("libvkdmodel.so.0 does not need libvkdelegate.so.0")


def check_python(prefix: Path, pyproject: dict, version: str, env: dict, binding: str) -> None:
    step("import vkdelegate and run the `vkd` console script, prefix only")
    module, function = pyproject["project"]["scripts"]["vkd"].split(":")
    package = prefix / "vkdelegate"
    # ctypes, as the runtime binds the library: libvkdmodel.so.0 from library_dir(), and through
    # it libvkdelegate.so.0 (vkd_status_name is libvkdelegate's).
    *lines, status_name, found_binding = python_lines(
        "import ctypes, vkdelegate, vkdelegate._native as n; "
        "print(vkdelegate.__file__); print(n.library_dir()); print(n.vkd_binary()); "
        "lib = ctypes.CDLL(str(n.library_dir() / 'libvkdmodel.so.0')); "
        "lib.vkd_status_name.restype = ctypes.c_char_p; lib.vkd_model_load; "
        "print(lib.vkd_status_name(0).decode()); "
        "from vkdelegate.runtime import _execute; print(_execute.BINDING)",
        "import vkdelegate", env, prefix)
    found = [Path(line).resolve() for line in lines]
    expected = [package / "__init__.py", package / "_native", package / "_native" / "vkd"]
    if found != [p.resolve() for p in expected]:
        fail(f"vkdelegate, library_dir(), vkd_binary() are {found}, not {expected}")
    if status_name != "VKD_OK":
        fail(f"vkd_status_name(0) through ctypes is '{status_name}', not VKD_OK")
    if found_binding != binding:
        fail(f"the runtime binds the library through {found_binding}, not {binding}")

    # What the script pip writes for `vkd = "MODULE:FUNCTION"` does.
    script = f"import sys; from {module} import {function}; sys.argv[0] = 'vkd'; " \
             f"sys.exit({function}())"

    def vkd(*args: str, extra_env: dict = None) -> subprocess.CompletedProcess:
        return run([sys.executable, "-s", "-c", script, *args], env=dict(env, **extra_env or {}),
                   cwd=prefix)

    result = vkd("--version")
    print(result.stdout, end="")
    if result.returncode != 0 or result.stdout != f"vkd {version}\n":
        fail(f"vkd --version: status {result.returncode}, '{result.stdout.strip()}' "
             f"(stderr '{result.stderr.strip()}'), not 'vkd {version}'")
    result = vkd("help")
    if result.returncode != 0 or not result.stdout.startswith("usage: vkd <command>"):
        fail(f"vkd help: status {result.returncode}, stdout '{result.stdout[:200]}', "
             f"stderr '{result.stderr.strip()}'")
    print(result.stdout.splitlines()[0])
    result = vkd("no-such-command")
    if result.returncode != 2 or "unknown command 'no-such-command'" not in result.stderr:
        fail(f"vkd no-such-command: status {result.returncode} (not 2), "
             f"stderr '{result.stderr.strip()}'")
    print("vkd no-such-command: exit 2, " + result.stderr.splitlines()[0])
    # No binary where the lookup is told to look: one line and exit 1, no traceback.
    empty = prefix.parent / "empty"
    empty.mkdir()
    result = vkd("--version", extra_env={"VKD_LIBRARY_DIR": str(empty)})
    if result.returncode != 1 or not result.stderr.startswith("vkd: ") or \
            len(result.stderr.splitlines()) != 1 or str(empty) not in result.stderr:
        fail(f"vkd with VKD_LIBRARY_DIR={empty}: status {result.returncode} (not 1), "
             f"stderr '{result.stderr.strip()}' (not one line naming the folder)")
    print(f"VKD_LIBRARY_DIR={empty}: exit 1, {result.stderr.strip()}")


def link_executorch(prefix: Path) -> None:
    """site-packages/executorch: VKD_PYTHON's executorch package, as pip installs it."""
    executorch = Path(subprocess.run(
        [sys.executable, "-c", "import executorch; print(list(executorch.__path__)[0])"],
        text=True, capture_output=True, check=True).stdout.strip())
    (prefix / "executorch").symlink_to(executorch, target_is_directory=True)


def check_executorch(prefix: Path, env: dict) -> None:
    step("the ExecuTorch backend in _native/, executorch beside vkdelegate")
    native = prefix / "vkdelegate" / "_native"
    et_lib = prefix / "executorch" / "lib"
    for name in sorted(EXECUTORCH_FILES):
        result = run(["readelf", "-d", native / name])
        runpaths = re.findall(r"\(RUNPATH\)\s+Library runpath: \[(.*)\]", result.stdout)
        if runpaths != [EXECUTORCH_RUNPATH]:
            fail(f"{name}: RUNPATH {runpaths}, not [{EXECUTORCH_RUNPATH}]")
        result = run(["ldd", native / name], env=env)
        loaded = {}
        for line in result.stdout.splitlines():
            fields = line.split()  # NAME => PATH (ADDRESS)
            if len(fields) >= 3 and fields[1] == "=>":
                loaded[fields[0]] = fields[2]
        wanted = {"libexecutorch.so": et_lib, "libvkdelegate.so.0": native}
        for library, folder in wanted.items():
            where = loaded.get(library)
            if where is None or Path(os.path.normpath(where)) != folder / library:
                fail(f"{name} loads {library} from {where}, not from {folder}")
        print(f"{name}: RUNPATH {EXECUTORCH_RUNPATH}; libexecutorch.so from "
              f"site-packages/executorch/lib, libvkdelegate.so.0 from _native/")
    library, error, registration = python_lines(
        "import vkdelegate.executorch as e; "
        "from vkdelegate.executorch.runtime_library import runtime_library_path; "
        "print(runtime_library_path()); print(e.RUNTIME_BACKEND_ERROR); "
        "print(e._runtime_backend.vkd_executorch_registration_error())",
        "import vkdelegate.executorch", env, prefix)[-3:]
    if Path(library) != native / "libvkd_executorch.so" or error != "None" or registration != "0":
        fail(f"vkdelegate.executorch loaded {library} (error {error}, registration "
             f"{registration}), not _native/libvkd_executorch.so registered with status 0")


def check_export_pins(source_dir: Path, pyproject: dict) -> None:
    step("the `export` extra pins python/requirements.lock's versions")
    locked = {}
    for line in (source_dir / "python" / "requirements.lock").read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            locked[match.group(1).lower()] = match.group(2)
    extra = pyproject["project"]["optional-dependencies"]["export"]
    pins = {}
    for requirement in extra:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", requirement)
        if not match:
            fail(f"export extra: '{requirement}' is not pinned (NAME==VERSION)")
        pins[match.group(1).lower()] = match.group(2)
    for name in EXPORT_PINNED:
        if name not in pins:
            fail(f"export extra does not pin {name}")
        if pins[name] != locked.get(name):
            fail(f"export extra pins {name}=={pins[name]}, requirements.lock has "
                 f"{locked.get(name)}")
        print(f"{name}=={pins[name]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--source-dir", type=Path, required=True)
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--extension", action="store_true",
                        help="the build made the runtime's extension module")
    parser.add_argument("--executorch", action="store_true",
                        help="the build made the ExecuTorch backend (executorch_backend/)")
    args = parser.parse_args()
    source_dir = args.source_dir.resolve()
    pyproject = tomllib.loads((source_dir / "pyproject.toml").read_text())
    skbuild = pyproject["tool"]["scikit-build"]
    version_rule = skbuild["metadata"]["version"]
    match = re.search(version_rule["regex"],
                      (source_dir / version_rule["input"]).read_text(), re.MULTILINE)
    if not match:
        fail(f"pyproject.toml's version regex finds nothing in {version_rule['input']}")
    version = match.group("value")
    print(f"version (pyproject.toml's regex on {version_rule['input']}): {version}")

    # The user's environment: nothing points at the build tree or the libraries.
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "VKD_LIBRARY_DIR", "PYTHONPATH", "VKD")}
    work = Path(tempfile.mkdtemp(prefix="vkd-python-package."))
    prefix = work / "site-packages"
    try:
        step("install the wheel's components from the build tree")
        components = skbuild["install"]["components"]
        if not components:
            fail("pyproject.toml installs no CMake component")
        for component in components:
            result = run([args.cmake, "--install", args.build_dir, "--prefix", prefix,
                          "--component", component, "--strip"])
            print(result.stdout, end="")
            if result.returncode != 0:
                fail(f"cmake --install --component {component}: {result.stderr.strip()}")
        native_files = NATIVE_FILES | ({EXTENSION_FILE} if args.extension else set()) | \
            (EXECUTORCH_FILES if args.executorch else set())
        check_layout(source_dir, prefix, native_files)
        if args.executorch:
            link_executorch(prefix)
        check_loader(args.build_dir, prefix, env, native_files)
        check_python(prefix, pyproject, version, dict(env, PYTHONPATH=str(prefix)),
                     "extension" if args.extension else "ctypes")
        if args.executorch:
            check_executorch(prefix, dict(env, PYTHONPATH=str(prefix)))
        check_export_pins(source_dir, pyproject)
    finally:
        if os.environ.get("VKD_KEEP_INSTALL_TEST") == "1":
            print(f"keeping {work}")
        else:
            shutil.rmtree(work)
    print("\npython_package: PASS")


if __name__ == "__main__":
    main()
