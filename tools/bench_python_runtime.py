#!/usr/bin/env python3
"""What vkdelegate.runtime costs per run() over calling the C API (vkd_model_execute) directly,
on one model (default: refinenet_lite, built by examples/refinenet_lite/run.sh). The README's
"Python runtime" passage and python/README.md quote it.

All in this process, on one loaded model; tools/bench_python_runtime.c, compiled here with cc and
loaded next to libvkdmodel, stands in for vkd_model_execute where a measure needs it:
  in situ   each run() timed from Python and the vkd_model_execute inside it timed from C: the
            difference is what the binding adds to a call (argument checks, output allocation,
            ctypes), free of the device's run-to-run spread. It includes what the machine
            charges the first Python code after a long call: on a loaded machine, other
            processes run meanwhile and leave cold caches behind (the "load" figure says how
            busy the CPUs were).
  bare      the same for a ctypes call of vkd_model_execute on fixed buffers and nothing else:
            the least any Python caller pays, in situ.
  alone     run() with a C function that returns at once in vkd_model_execute's place, back to
            back: the binding's own work on warm caches.
  loops     blocks of run() and blocks of a C loop of vkd_model_execute on fixed buffers,
            interleaved; the medians' difference is dominated by the device's spread (software
            devices vary by milliseconds) and bounds the binding's cost only loosely.
Numpy inputs, and torch CPU tensors when torch imports. Every figure is printed with the device
it ran on; the last line is the JSON of all of them.

Usage: PYTHONPATH=python python3 tools/bench_python_runtime.py [--model M.vkd|M.partition.json]
           [--runs 200] [--blocks 6] [--no-torch] [--json FILE]
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from vkdelegate import _native, runtime
from vkdelegate.runtime import _capi
from vkdelegate.runtime.program import _tensor_slots

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = REPO / "build/examples/refinenet_lite/refinenet_lite.vkd"
HELPER_SOURCE = Path(__file__).resolve().with_suffix(".c")


def build_helper(folder: Path):
    """tools/bench_python_runtime.c as a shared library linked to the runtime's libvkdmodel."""
    lib_dir = _native.library_dir()
    out = folder / "libbench_python_runtime.so"
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-Wall", "-Werror",
                    "-shared", "-fPIC", str(HELPER_SOURCE), "-I", str(REPO / "model/include"),
                    "-I", str(REPO / "runtime/delegate/include"), "-L", str(lib_dir),
                    f"-l:{_native.MODEL_LIBRARY}", f"-Wl,-rpath,{lib_dir}", "-o", str(out)],
                   check=True)
    helper = ctypes.CDLL(str(out))
    execute = _capi.library().vkd_model_execute
    for stand_in in (helper.bench_timed_execute, helper.bench_noop_execute):
        stand_in.argtypes, stand_in.restype = execute.argtypes, execute.restype
    helper.bench_last_execute_ns.restype = ctypes.c_uint64
    helper.bench_c_loop.argtypes = execute.argtypes + [ctypes.c_size_t,
                                                       ctypes.POINTER(ctypes.c_uint64)]
    helper.bench_c_loop.restype = ctypes.c_int
    return helper


def random_inputs(program):
    rng = np.random.default_rng(0)
    arrays = []
    for spec in program.inputs:
        if spec.dtype == np.float32:
            arrays.append(rng.standard_normal(spec.shape).astype(np.float32))
        else:
            info = np.iinfo(spec.dtype)
            arrays.append(rng.integers(info.min, info.max, spec.shape, dtype=spec.dtype))
    return arrays


def summary(ns):
    us = sorted(v / 1000.0 for v in ns)
    return {"median_us": statistics.median(us), "min_us": us[0],
            "p90_us": us[int(0.9 * (len(us) - 1))], "runs": len(us)}


def timed_runs(program, args, runs, after_each=None):
    walls, extra = [], []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        program.run(*args)
        walls.append(time.perf_counter_ns() - t0)
        if after_each:
            extra.append(after_each())
    return walls, extra


def in_situ(program, helper, args, runs):
    """run() wall, the C execute inside it, and their difference per call."""
    original, program._execute = program._execute, helper.bench_timed_execute
    try:
        walls, inside = timed_runs(program, args, runs, helper.bench_last_execute_ns)
    finally:
        program._execute = original
    return {"run": summary(walls), "c_execute": summary(inside),
            "overhead": summary([w - c for w, c in zip(walls, inside)])}


def alone(program, helper, args, runs):
    """run() wall with a no-op in vkd_model_execute's place."""
    original, program._execute = program._execute, helper.bench_noop_execute
    try:
        walls, _ = timed_runs(program, args, 10 * runs)
    finally:
        program._execute = original
    return summary(walls)


def bare(program, helper, args, runs):
    """The least a Python caller can do: the ctypes call alone on fixed buffers, in situ (wall
    from Python minus vkd_model_execute timed inside)."""
    in_slots, out_slots, _keep = fixed_slots(program, args)
    call, handle, n_in, n_out = helper.bench_timed_execute, program._handle, len(args), \
        len(out_slots)
    overhead = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        call(handle, in_slots, n_in, out_slots, n_out)
        overhead.append(time.perf_counter_ns() - t0 - helper.bench_last_execute_ns())
    return summary(overhead)


def fixed_slots(program, args):
    """vkd_tensor arrays on `args` and on output buffers made once (kept alive by the caller)."""
    outputs = [np.empty(s.shape, s.dtype) for s in program.outputs]
    in_slots, out_slots = _tensor_slots(program.inputs), _tensor_slots(program.outputs)
    for array, slot in zip(list(args) + outputs, list(in_slots) + list(out_slots)):
        slot.data = array.ctypes.data
    return in_slots, out_slots, outputs


def c_loop(program, helper, args, runs):
    """`runs` vkd_model_execute calls in C on fixed input and output buffers."""
    in_slots, out_slots, _keep = fixed_slots(program, args)
    times = (ctypes.c_uint64 * runs)()
    status = helper.bench_c_loop(program._handle, in_slots, len(in_slots), out_slots,
                                 len(out_slots), runs, times)
    if status != 0:
        raise runtime.VkdError(status, "bench_c_loop: vkd_model_execute failed")
    return list(times)


def loops(program, helper, args, runs, blocks):
    per_block = max(1, runs // blocks)
    c_times, py_times = [], []
    for _ in range(blocks):
        c_times += c_loop(program, helper, args, per_block)
        py_times += timed_runs(program, args, per_block)[0]
    c, py = summary(c_times), summary(py_times)
    return {"c_loop": c, "run_loop": py, "median_difference_us": py["median_us"] - c["median_us"]}


def measure(program, helper, args, opts):
    return {"in_situ": in_situ(program, helper, args, opts.runs),
            "alone": alone(program, helper, args, opts.runs)}


def report(result, name):
    device, load = result["device"], result["load"]
    for kind in ("numpy", "torch"):
        if kind not in result:
            continue
        r, a = result[kind]["in_situ"], result[kind]["alone"]
        print(f"{name} on {device}, {kind} inputs: run() adds {r['overhead']['median_us']:.2f} us "
              f"per call in situ (median; p90 {r['overhead']['p90_us']:.2f}, min "
              f"{r['overhead']['min_us']:.2f}; {r['overhead']['runs']} runs, vkd_model_execute "
              f"{r['c_execute']['median_us']:.0f} us median; load {load})")
        print(f"{name} on {device}, {kind} inputs: run() alone (no-op in place of the C call) "
              f"{a['median_us']:.2f} us median, min {a['min_us']:.2f} ({a['runs']} runs)")
    b = result["bare_ctypes_call"]
    print(f"{name} on {device}: a bare ctypes call of vkd_model_execute on fixed buffers adds "
          f"{b['median_us']:.2f} us in situ (median; p90 {b['p90_us']:.2f}, min "
          f"{b['min_us']:.2f}): what any Python caller pays after the call")
    lp = result["loops"]
    print(f"{name} on {device}: interleaved loops, C vkd_model_execute median "
          f"{lp['c_loop']['median_us']:.0f} us, run() median {lp['run_loop']['median_us']:.0f} "
          f"us, difference {lp['median_difference_us']:.1f} us ({lp['c_loop']['runs']} runs "
          "each; the device's run-to-run spread dominates it)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the JSON here")
    opts = parser.parse_args()
    if not opts.model.is_file():
        sys.exit(f"bench_python_runtime: {opts.model} not found (examples/refinenet_lite/run.sh "
                 "builds the default one)")
    torch = None
    if not opts.no_torch:
        try:
            import torch
        except ImportError:
            pass

    with tempfile.TemporaryDirectory() as tmp, runtime.load(opts.model) as program:
        helper = build_helper(Path(tmp))
        args = random_inputs(program)
        for _ in range(opts.warmup):
            program.run(*args)
        result = {"model": str(opts.model), "device": program.device,
                  "numpy": measure(program, helper, args, opts)}
        if torch is not None:
            result["torch"] = measure(program, helper, [torch.from_numpy(a) for a in args], opts)
        result["bare_ctypes_call"] = bare(program, helper, args, opts.runs)
        result["loops"] = loops(program, helper, args, opts.runs, opts.blocks)
        result["validation_messages"] = program.validation_message_count
    result["load"] = (f"{os.getloadavg()[0]:.1f} runnable on {os.cpu_count()} CPUs (1-minute "
                      "load average)")

    report(result, opts.model.name)
    text = json.dumps(result)
    if opts.json:
        opts.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
