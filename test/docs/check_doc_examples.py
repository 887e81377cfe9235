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

A program links what its documented line links (`pkg-config --cflags --libs LIB`): for LIB
vkdmodel, when it includes <vkdelegate/vkd_model.h> or <vkdelegate/Model.hpp>, libvkdmodel.so and
libvkdelegate.so (vkdmodel.pc requires vkdelegate), else libvkdelegate.so only (a pkg-config
line in the block must name the same LIB).
The build tree's libraries find each other through their build RUNPATH and the programs get an
-rpath to them; whether an INSTALLED prefix starts the same programs without LD_LIBRARY_PATH is
the install test's job (test/install/run_install_test.sh, which builds them with --extract-to).

A whole program must exit 0. Fails when a block fails, or when docs/DELEGATE_API.md has no C
block and no C++ block (so a broken extraction cannot pass silently). Standard library only.

--extract-to DIR (with --source-dir only): writes each whole program to DIR/NAME.c / NAME.cpp and
DIR/examples.txt, one line per program: `NAME LANG LIB` (LANG c or cpp, LIB vkdelegate or
vkdmodel), then exits.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

FENCE = re.compile(r"^\s*(`{3,})\s*([^`\s]*)([^`]*)$")
LANGS = {"c": "c", "cpp": "cpp", "c++": "cpp", "cxx": "cpp"}
# What `pkg-config --libs LIB` links, by library name.
LINKS = {"vkdelegate": ["vkdelegate"], "vkdmodel": ["vkdmodel", "vkdelegate"]}
MODEL_HEADERS = re.compile(r"#include\s*[<\"]vkdelegate/(vkd_model\.h|Model\.hpp)[>\"]")
PKG_CONFIG_LINE = re.compile(r"pkg-config\s+--cflags\s+--libs\s+([A-Za-z0-9_]+)")


def fenced_blocks(path):
    """Yields (line, lang, words, code) for each fenced code block of a markdown file: its first
    line's number, the info string's first word in lower case and the words after it."""
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
        yield start, lang, rest, "\n".join(lines[start:i]) + "\n"
        i += 1


def extract_blocks(path):
    """Yields (line, lang, words, code) for each fenced C/C++ block of a markdown file."""
    for start, lang, rest, code in fenced_blocks(path):
        if lang in LANGS:
            yield start, LANGS[lang], rest, code


def library_of(code):
    """The library a program links (vkdelegate or vkdmodel), or raises ValueError when the
    build line written in the block names another one than its includes need."""
    lib = "vkdmodel" if MODEL_HEADERS.search(code) else "vkdelegate"
    for documented in PKG_CONFIG_LINE.findall(code):
        if documented != lib:
            raise ValueError(f"its build line links {documented}, its includes need {lib}")
    return lib


def doc_files(source_dir):
    docs = [os.path.join(source_dir, "README.md")]
    return docs + sorted(glob.glob(os.path.join(source_dir, "docs", "*.md")))


def block_name(rel, line):
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{rel}_{line}")


def extract_programs(source_dir, out_dir):
    """Writes every whole program and examples.txt (see the module doc); returns their count."""
    os.makedirs(out_dir, exist_ok=True)
    manifest = []
    for doc in doc_files(source_dir):
        rel = os.path.relpath(doc, source_dir)
        for line, lang, words, code in extract_blocks(doc):
            if "fragment" in words:
                continue
            name = block_name(rel, line)
            with open(os.path.join(out_dir, f"{name}.{lang}"), "w", encoding="utf-8") as f:
                f.write(code)
            manifest.append(f"{name} {lang} {library_of(code)}\n")
    with open(os.path.join(out_dir, "examples.txt"), "w", encoding="utf-8") as f:
        f.writelines(manifest)
    return len(manifest)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", required=True)
    p.add_argument("--extract-to", help="only write the whole programs and examples.txt there")
    p.add_argument("--work-dir")
    p.add_argument("--cc")
    p.add_argument("--cxx")
    p.add_argument("--include-dir", action="append")
    p.add_argument("--library", action="append",
                   help="libvkdelegate.so / libvkdmodel.so of this build")
    p.add_argument("--make-blob", help="vkd_make_app_blob (test/install)")
    a = p.parse_args()
    if a.extract_to:
        try:
            count = extract_programs(a.source_dir, a.extract_to)
        except ValueError as e:
            print(f"FAIL: {e}")
            return 1
        print(f"{count} example program(s) written to {a.extract_to}")
        return 0 if count else 1
    missing = [opt for opt in ("work_dir", "cc", "cxx", "include_dir", "library", "make_blob")
               if not getattr(a, opt)]
    if missing:
        p.error("required: " + ", ".join("--" + m.replace("_", "-") for m in missing))
    libraries = {os.path.basename(lib).split(".so")[0][len("lib"):]: lib for lib in a.library}

    os.makedirs(a.work_dir, exist_ok=True)
    blob_dir = os.path.join(a.work_dir, "model")
    os.makedirs(blob_dir, exist_ok=True)
    r = run([a.make_blob, blob_dir])
    if r.returncode != 0:
        print(r.stdout)
        print(f"FAIL: {a.make_blob} {blob_dir} exited {r.returncode}")
        return 1
    model = os.path.join(blob_dir, "model.vkd")

    docs = doc_files(a.source_dir)
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
            name = block_name(rel, line)
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
                try:
                    libs = [libraries[name] for name in LINKS[library_of(code)]]
                except (ValueError, KeyError) as e:
                    failures += 1
                    print(f"FAIL {what}: which library it links: {e}")
                    continue
                cmd = [compiler, std, *warnings, *includes, src, "-o", exe, *libs, *rpaths]
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
