#!/usr/bin/env python3
"""What vkdelegate.runtime costs per run() over calling the C API (vkd_model_execute) directly,
on one model (default: refinenet_lite, built by examples/refinenet_lite/run.sh), through each
binding this Python can load: the extension module vkd_execute (python/native/vkd_execute.c),
which run() uses where it is built, and ctypes, the fallback. The README's "Python runtime"
passage and python/README.md quote it.

All in this process, on one loaded model; tools/bench_python_runtime.c, compiled here with cc and
loaded next to libvkdmodel, stands in for vkd_model_execute in the program's call plan:
  in situ   each run() timed from Python and the vkd_model_execute inside it timed from C: the
            difference is what the binding adds to a call over a C caller's call on the same
            handle and inputs (argument checks, output allocation, the call), free of the
            device's run-to-run spread. It includes what the machine charges the first code
            after a long device run (cold caches, other processes having run meanwhile: the
            "load" figure says how busy the CPUs were). Only run() is timed, called as a user
            calls it: the outputs of the previous call are freed before the clock starts, as a
            caller's loop frees them. numpy: new output arrays each run; numpy out=: written
            into arrays made once; torch: CPU tensors in and out.
  bare      the binding's C call alone on fixed arrays, in situ: what any caller of that
            binding pays, with no checks and no allocation.
  alone     run() with a C function that returns at once in vkd_model_execute's place, back to
            back: the binding's own work on warm caches.
  loops     blocks of run() and blocks of a C loop of vkd_model_execute on fixed buffers,
            interleaved; the medians' difference is dominated by the device's spread (software
            devices vary by milliseconds) and bounds the binding's cost only loosely.
Every figure is printed with the device it ran on; the last line is the JSON of all of them.

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
from vkdelegate.runtime import _capi, _execute

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


def address(function) -> int:
    return _execute.function_address(function)


def swap_call(program, binder, function):
    """Makes `program` call `function` (the helper's stand-in) through `binder`; returns what
    restore_call takes back."""
    saved = program._plan, program._call
    program._plan = _execute.make_plan(address(function), program._handle, program.inputs,
                                       program.outputs)
    program._call = binder(program._plan)
    return saved


def restore_call(program, saved):
    program._plan, program._call = saved


def timed_runs(program, args, runs, out=None, after_each=None):
    """run() walls, each call alone in the timed region (see the module's "in situ")."""
    run, clock = program.run, time.perf_counter_ns
    walls, extra, result = [], [], None
    for _ in range(runs):
        result = None  # the previous outputs freed before the clock starts
        if out is None:
            t0 = clock()
            result = run(*args)
            t1 = clock()
        else:
            t0 = clock()
            result = run(*args, out=out)
            t1 = clock()
        walls.append(t1 - t0)
        if after_each:
            extra.append(after_each())
    return walls, extra


def in_situ(program, binder, helper, args, runs, out=None):
    """run() wall, the C execute inside it, and their difference per call."""
    saved = swap_call(program, binder, helper.bench_timed_execute)
    try:
        walls, inside = timed_runs(program, args, runs, out, helper.bench_last_execute_ns)
    finally:
        restore_call(program, saved)
    return {"run": summary(walls), "c_execute": summary(inside),
            "overhead": summary([w - c for w, c in zip(walls, inside)])}


def alone(program, binder, helper, args, runs, out=None):
    """run() wall with a no-op in vkd_model_execute's place."""
    saved = swap_call(program, binder, helper.bench_noop_execute)
    try:
        walls, _ = timed_runs(program, args, 10 * runs, out)
    finally:
        restore_call(program, saved)
    return summary(walls)


def bare(program, binding, helper, args, runs):
    """The least a caller of `binding` can do: its C call alone on fixed arrays, in situ (wall
    from Python minus vkd_model_execute timed inside)."""
    plan = _execute.make_plan(address(helper.bench_timed_execute), program._handle,
                              program.inputs, program.outputs)
    inputs, outputs = tuple(args), [np.empty(s.shape, s.dtype) for s in program.outputs]
    if binding == "extension":
        call, call_args = _execute.extension_call(plan), (inputs, outputs)
    else:  # the ctypes function on vkd_tensor arrays filled once
        for array, slot in zip(inputs + tuple(outputs),
                               list(plan.input_slots) + list(plan.output_slots)):
            slot.data = array.ctypes.data
        call = _execute.ctypes_call(plan)._execute
        call_args = (program._handle.value, plan.input_slots, len(inputs), plan.output_slots,
                     len(outputs))
    clock, last = time.perf_counter_ns, helper.bench_last_execute_ns
    overhead = []
    for _ in range(runs):
        t0 = clock()
        status = call(*call_args)
        t1 = clock()
        if status != 0:
            raise runtime.VkdError(status, f"bare {binding} call failed")
        overhead.append(t1 - t0 - last())
    return summary(overhead)


def fixed_slots(program, args):
    """A plan's vkd_tensor arrays on `args` and on output buffers made once (kept alive by the
    caller with the plan)."""
    outputs = [np.empty(s.shape, s.dtype) for s in program.outputs]
    plan = _execute.make_plan(0, program._handle, program.inputs, program.outputs)
    for array, slot in zip(list(args) + outputs,
                           list(plan.input_slots) + list(plan.output_slots)):
        slot.data = array.ctypes.data
    return plan.input_slots, plan.output_slots, (plan, outputs)


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


def bindings():
    """(name, binder) of every binding this Python can load, run()'s own first."""
    found = [("extension", _execute.extension_call)] if _execute.BINDING == "extension" else []
    return found + [("ctypes", _execute.ctypes_call)]


def measure(program, helper, args, torch, opts):
    result = {}
    for name, binder in bindings():
        r = {"numpy": {"in_situ": in_situ(program, binder, helper, args, opts.runs),
                       "alone": alone(program, binder, helper, args, opts.runs)}}
        out = [np.empty(s.shape, s.dtype) for s in program.outputs]
        r["numpy_out"] = {"in_situ": in_situ(program, binder, helper, args, opts.runs, out),
                          "alone": alone(program, binder, helper, args, opts.runs, out)}
        if torch is not None:
            tensors = [torch.from_numpy(a) for a in args]
            r["torch"] = {"in_situ": in_situ(program, binder, helper, tensors, opts.runs),
                          "alone": alone(program, binder, helper, tensors, opts.runs)}
        r["bare_call"] = bare(program, name, helper, args, opts.runs)
        result[name] = r
    return result


def report(result, name):
    device, load = result["device"], result["load"]
    execute = result["c_execute_median_us"]
    print(f"{name} on {device}: vkd_model_execute {execute:.0f} us median; load {load}")
    for binding, r in result["bindings"].items():
        chosen = " (run() uses it)" if binding == result["binding"] else ""
        print(f"{name} on {device}, {binding} binding{chosen}: what run() adds per call "
              "(median; p90, min):")
        for kind, label in (("numpy", "numpy, new outputs"), ("numpy_out", "numpy, out="),
                            ("torch", "torch tensors")):
            if kind not in r:
                continue
            o, a = r[kind]["in_situ"]["overhead"], r[kind]["alone"]
            print(f"  {label:18s} in situ {o['median_us']:7.2f} us ({o['p90_us']:.2f}, "
                  f"{o['min_us']:.2f}; {o['runs']} runs)   alone {a['median_us']:6.2f} us "
                  f"({a['min_us']:.2f} min; {a['runs']} runs)")
        b = r["bare_call"]
        print(f"  {'bare C call':18s} in situ {b['median_us']:7.2f} us ({b['p90_us']:.2f}, "
              f"{b['min_us']:.2f}): the least a caller of this binding pays")
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
                  "binding": _execute.BINDING,
                  "bindings": measure(program, helper, args, torch, opts)}
        result["loops"] = loops(program, helper, args, opts.runs, opts.blocks)
        result["validation_messages"] = program.validation_message_count
    first = result["bindings"][_execute.BINDING]["numpy"]["in_situ"]["c_execute"]
    result["c_execute_median_us"] = first["median_us"]
    result["load"] = (f"{os.getloadavg()[0]:.1f} runnable on {os.cpu_count()} CPUs (1-minute "
                      "load average)")

    report(result, opts.model.name)
    text = json.dumps(result)
    if opts.json:
        opts.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
