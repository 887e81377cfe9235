#!/usr/bin/env python3
"""CTest `readme_own_model`: the README's ```sh run blocks work as they stand.

Each block fenced as ```sh run in README.md is run with `bash -euo pipefail` in a fresh
directory that looks like the repository root to it: `python/` and `examples/` link to the
source tree, `build/` to the build tree (--build-dir), `.venv` to the project's Python
environment (--python-env), so `out/` and every other file the
commands write land in that directory, never in the source tree. A block fails when it exits
non-zero or prints "Traceback"; the test fails when README.md has no such block (so a renamed
fence cannot pass with nothing run). Standard library only.
"""
import argparse
import os
import shutil
import subprocess
import sys

from check_doc_examples import fenced_blocks  # this folder: the same fence rules


def run_blocks(readme):
    """Yields (line number, code) for each ```sh run block."""
    for start, lang, words, code in fenced_blocks(readme):
        if lang == "sh" and words == ["run"]:
            yield start, code


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--python-env", required=True,
                        help="the venv the README calls .venv (VKD_PYTHON is its bin/python)")
    args = parser.parse_args()

    blocks = list(run_blocks(os.path.join(args.source_dir, "README.md")))
    if not blocks:
        print("README.md has no ```sh run block", file=sys.stderr)
        return 1
    failed = 0
    for line, code in blocks:
        work = os.path.join(args.work_dir, f"block{line}")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        for name in ("python", "examples"):
            os.symlink(os.path.abspath(os.path.join(args.source_dir, name)), os.path.join(work, name))
        os.symlink(os.path.abspath(args.build_dir), os.path.join(work, "build"))
        os.symlink(os.path.abspath(args.python_env), os.path.join(work, ".venv"))
        print(f"== README.md:{line}\n{code}", flush=True)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(done.stdout)
        if done.returncode != 0 or "Traceback" in done.stdout:
            print(f"README.md:{line}: the block failed (exit {done.returncode})", file=sys.stderr)
            failed += 1
    print(f"{len(blocks) - failed}/{len(blocks)} README block(s) ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
