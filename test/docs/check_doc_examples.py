#!/usr/bin/env python3
"""CTest `docs_examples`: every C and C++ example in the documentation compiles, links and runs.

Scans README.md and docs/*.md under --source-dir for fenced code blocks whose info string
starts with `c` or `cpp` (also `c++`, `cxx`):

  ```c                 a whole program: compiled with -std=c11 (C++: -std=c++17) -Wall -Wextra
                       -Wpedantic -Werror against the public headers (--include-dir, each),
                       linked against libvkdelegate.so and libvkdmodel.so (--library, each),
                       then run as `PROGRAM MODEL.vkd` on the model --make-blob writes
                       (VKD_VALIDATION=1 from CTest: any validation message fails the block)
  ```c fragment        part of a program: only compiled (-fsyntax-only, same flags)

A whole program must exit 0. Fails when a block fails, or when docs/DELEGATE_API.md has no C
block and no C++ block (so a broken extraction cannot pass silently). Standard library only.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

FENCE = re.compile(r"^\s*(`{3,})\s*([^`\s]*)([^`]*)$")
LANGS = {"c": "c", "cpp": "cpp", "c++": "cpp", "cxx": "cpp"}


def extract_blocks(path):
    """Yields (line, lang, words, code) for each fenced C/C++ block of a markdown file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, rest = m.group(1), m.group(2).lower(), m.group(3).split()
        start = i + 1
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and
                                      set(lines[i].strip()) == {"`"}):
            i += 1
        if lang in LANGS:
            yield start, LANGS[lang], rest, "\n".join(lines[start:i]) + "\n"
        i += 1


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--cc", required=True)
    p.add_argument("--cxx", required=True)
    p.add_argument("--include-dir", required=True, action="append")
    p.add_argument("--library", required=True, action="append",
                   help="libvkdelegate.so / libvkdmodel.so of this build")
    p.add_argument("--make-blob", required=True, help="vkd_make_app_blob (test/install)")
    a = p.parse_args()

    os.makedirs(a.work_dir, exist_ok=True)
    blob_dir = os.path.join(a.work_dir, "model")
    os.makedirs(blob_dir, exist_ok=True)
    r = run([a.make_blob, blob_dir])
    if r.returncode != 0:
        print(r.stdout)
        print(f"FAIL: {a.make_blob} {blob_dir} exited {r.returncode}")
        return 1
    model = os.path.join(blob_dir, "model.vkd")

    docs = [os.path.join(a.source_dir, "README.md")]
    docs += sorted(glob.glob(os.path.join(a.source_dir, "docs", "*.md")))
    includes = [flag for d in a.include_dir for flag in ("-I", d)]
    rpaths = sorted({f"-Wl,-rpath,{os.path.dirname(os.path.abspath(lib))}" for lib in a.library})
    warnings = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
    failures, counted, per_lang = 0, 0, {"c": 0, "cpp": 0}
    for doc in docs:
        rel = os.path.relpath(doc, a.source_dir)
        for line, lang, words, code in extract_blocks(doc):
            counted += 1
            if os.path.basename(doc) == "DELEGATE_API.md":
                per_lang[lang] += 1
            name = re.sub(r"[^A-Za-z0-9]+", "_", f"{rel}_{line}")
            src = os.path.join(a.work_dir, name + (".c" if lang == "c" else ".cpp"))
            with open(src, "w", encoding="utf-8") as f:
                f.write(code)
            compiler = a.cc if lang == "c" else a.cxx
            std = "-std=c11" if lang == "c" else "-std=c++17"
            what = f"{rel}:{line} ({'C' if lang == 'c' else 'C++'}"
            if "fragment" in words:
                what += " fragment)"
                cmd = [compiler, std, *warnings, *includes, "-fsyntax-only", src]
            else:
                what += " program)"
                exe = os.path.join(a.work_dir, name)
                cmd = [compiler, std, *warnings, *includes, src, "-o", exe, *a.library, *rpaths]
            r = run(cmd)
            if r.returncode != 0:
                failures += 1
                print(f"FAIL {what}: does not compile\n  {' '.join(cmd)}\n{r.stdout}")
                continue
            if "fragment" in words:
                print(f"ok   {what}: compiles")
                continue
            r = run([exe, model], timeout=240)
            validation = "[vkd validation" in r.stdout
            if r.returncode != 0 or validation:
                failures += 1
                why = f"exit {r.returncode}" if r.returncode != 0 else "validation messages"
                print(f"FAIL {what}: {exe} {model}: {why}\n{r.stdout}")
                continue
            print(f"ok   {what}: compiles, links, runs on {os.path.basename(model)}")
            for out_line in r.stdout.splitlines():
                print(f"       | {out_line}")
    if per_lang["c"] == 0 or per_lang["cpp"] == 0:
        print("FAIL: docs/DELEGATE_API.md should hold a C and a C++ example; found "
              f"{per_lang['c']} C and {per_lang['cpp']} C++ blocks (fence info string `c` / `cpp`)")
        failures += 1
    print(f"{counted} example block(s), {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
