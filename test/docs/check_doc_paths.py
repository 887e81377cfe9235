#!/usr/bin/env python3
"""CTest `docs_paths`: every repository path the documentation and the code's comments cite
exists. A stale reference (a file moved, renamed or never written) sends a reader nowhere.

Scans the tracked text files (Markdown, C/C++, GLSL, Python, CMake, shell, FlatBuffers schema)
for path-like tokens that start with a top-level folder of the repository and end in a file
extension (`runtime/vk/Context.h`, `docs/BENCHMARKS.md`), and checks each exists under
--source-dir. Placeholders are skipped (a family stand-in such as `X.cpp` / `NAME.json`), as are the
headers the build generates (`*_generated.h`) and
`#include` lines (the compiler checks those; some name generated headers). The CHANGELOG is
history, and test/layering/ cites its fixtures' paths relative to them: neither is checked.
Prints each missing path as FILE:LINE: PATH; exit 1 when there is one. Standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

TOP = ("core", "runtime", "compiler", "serialization", "partitioner_schema", "shaders", "model",
       "tools", "test", "python", "docs", "examples", "executorch_backend", "third-party",
       "cmake", ".ci", "notes")
EXTENSIONS = ("h", "hpp", "cpp", "c", "glsl", "glslh", "py", "md", "json", "fbs", "cmake", "sh",
              "txt", "map", "toml", "lock")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\.(?:%s))(?![\w])"
                  % ("|".join(re.escape(t) for t in TOP), "|".join(EXTENSIONS)))
SCANNED = (".md", ".h", ".hpp", ".cpp", ".c", ".glsl", ".glslh", ".py", ".cmake", ".txt", ".sh",
           ".fbs", ".toml")
PLACEHOLDER = re.compile(r"(^|/)(X|NAME|FAMILY|Family|family|MODEL|OP)[._]|_generated\.h$")
SKIP_FILES = {"CHANGELOG.md"}


def tracked_files(root):
    try:
        out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.split("\n")
        return [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".venv", ".git"))]
            found += [os.path.relpath(os.path.join(folder, f), root) for f in files]
        return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    root = args.source_dir
    missing = []
    checked = 0
    for rel in tracked_files(root):
        if not rel.endswith(SCANNED) and os.path.basename(rel) != "CMakeLists.txt":
            continue
        if os.path.basename(rel) in SKIP_FILES or rel.startswith("test/layering/"):
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if line.lstrip().startswith("#include"):
                    continue  # the compiler checks those (some are generated in the build)
                for path in PATH.findall(line):
                    path = path.rstrip(".")
                    if PLACEHOLDER.search(path):
                        continue
                    checked += 1
                    if not os.path.exists(os.path.join(root, path)):
                        missing.append(f"{rel}:{number}: {path}")
    for line in missing:
        print(line)
    if missing:
        print(f"docs_paths: {len(missing)} of {checked} cited paths do not exist")
        return 1
    print(f"docs_paths: all {checked} cited paths exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
