#!/usr/bin/env python3
"""How fast the host path is: a partitioned model's host step (the CPU reference interpreter,
`vkd run MODEL.partition.json`) against PyTorch on the CPU, op by op. The README's "What the
host path is for" quotes its output.

Each case is a graph IR of a quantize and dequantize (the GPU partition) and one float op the
GPU does not run (the host step), compiled with `vkd compile --partition`; `vkd run` runs it
--runs times and the host step's own time (its "CPU ... us" line) is taken, median and min.
PyTorch runs the same op on the same input, on every core and on one (the interpreter uses
one thread), median and min of --runs timed calls after a warm-up. On a loaded machine the
minimum is the steadier figure.

Usage: PYTHONPATH=python python3 tools/bench_host_path.py --vkd build/vkd [--runs 5]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

from vkdelegate.export import safetensors

Q = {"scale": 0.05, "zero_point": 0, "quant_min": -128, "quant_max": 127, "dtype": "int8"}


def graph(shape, op, args, constants=()):
    """x -> quantize -> dequantize -> `op`(xd, constants...) -> y."""
    values = {"x": {"dtype": "float32", "shape": list(shape)}}
    for name, array in constants:
        values[name] = {"dtype": "float32", "shape": list(array.shape), "data": name}
    inputs = ["xd"] + [name for name, _ in constants]
    if op == "aten._native_multi_head_attention":
        inputs = ["xd", "xd"] + inputs
    return {"vkd_graph": 1, "inputs": ["x"], "outputs": ["y"], "values": values,
            "nodes": [{"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["x"],
                       "args": Q, "outputs": ["xq"]},
                      {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": ["xq"],
                       "args": Q, "outputs": ["xd"]},
                      {"op": op, "inputs": inputs, "args": args, "outputs": ["y"]}]}


def cases():
    """(name, graph, its weights, torch function of the dequantized input)."""
    rng = np.random.default_rng(0)
    yield ("softmax over channels, [1, 64, 128, 128] (1 M elements)",
           graph((1, 64, 128, 128), "aten._softmax", {"dim": 1, "half_to_float": False}), {},
           lambda x: torch.softmax(x, 1))
    w, b = (rng.standard_normal(768).astype(np.float32) for _ in range(2))
    yield ("layer_norm over 768, [1, 1365, 768] (1 M elements)",
           graph((1, 1365, 768), "aten.layer_norm", {"normalized_shape": [768], "eps": 1e-5},
                 [("w", w), ("b", b)]), {"w": w, "b": b},
           lambda x: F.layer_norm(x, (768,), torch.from_numpy(w), torch.from_numpy(b)))
    e, heads, length = 192, 3, 197  # a ViT-Tiny block's attention (DeiT-Ti: 197 tokens)
    params = {"qkv_w": rng.standard_normal((3 * e, e)).astype(np.float32) * 0.07,
              "qkv_b": rng.standard_normal(3 * e).astype(np.float32) * 0.1,
              "proj_w": rng.standard_normal((e, e)).astype(np.float32) * 0.07,
              "proj_b": rng.standard_normal(e).astype(np.float32) * 0.1}
    t = {k: torch.from_numpy(v) for k, v in params.items()}
    yield (f"multi-head attention, {heads} heads, [1, {length}, {e}] (ViT-Tiny)",
           graph((1, length, e), "aten._native_multi_head_attention",
                 {"embed_dim": e, "num_head": heads, "need_weights": False},
                 list(params.items())), params,
           lambda x: torch._native_multi_head_attention(
               x, x, x, e, heads, t["qkv_w"], t["qkv_b"], t["proj_w"], t["proj_b"], None,
               False)[0])


def host_step_us(vkd, plan, x, weights, out_dir):
    """One `vkd run` of the plan: the host step's time in microseconds."""
    cmd = [vkd, "run", plan, "--input", f"x={x}", "--output-dir", out_dir, "--force"]
    done = subprocess.run(cmd + (["--weights", weights] if weights else []),
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"vkd run failed:\n{done.stdout}{done.stderr}")
    found = re.search(r"\nstep \d+ +host .* CPU ([0-9.]+) µs", done.stdout)
    if not found:
        sys.exit(f"no host step time in:\n{done.stdout}")
    return float(found.group(1))


def torch_ms(fn, x, runs):
    with torch.no_grad():
        fn(x)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vkd", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    threads = os.cpu_count()
    print(f"machine: {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f}; torch "
          f"{torch.__version__}; the interpreter runs on one thread")
    with tempfile.TemporaryDirectory() as d:
        for name, g, params, fn in cases():
            path = os.path.join(d, "g.json")
            with open(path, "w") as f:
                json.dump(g, f)
            weights = ""
            if params:
                weights = os.path.join(d, "w.safetensors")
                safetensors.save(weights, params)
            plan_stem = os.path.join(d, "m.vkd")
            cmd = [args.vkd, "compile", path, "--partition", "-o", plan_stem, "--force"]
            done = subprocess.run(cmd + (["--weights", weights] if weights else []),
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"vkd compile failed:\n{done.stdout}{done.stderr}")
            shape = g["values"]["x"]["shape"]
            x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
            x_path = os.path.join(d, "x.npy")
            np.save(x_path, x)
            host = [host_step_us(args.vkd, os.path.join(d, "m.partition.json"), x_path, weights,
                                 os.path.join(d, "out")) / 1e3 for _ in range(args.runs)]
            # PyTorch on what the host step reads: x quantized and dequantized
            xd = torch.from_numpy(np.clip(np.rint(x / Q["scale"]), -128, 127).astype(np.float32)
                                  * np.float32(Q["scale"]))
            torch.set_num_threads(threads)
            t_default = torch_ms(fn, xd, args.runs)
            torch.set_num_threads(1)
            t_one = torch_ms(fn, xd, args.runs)
            torch.set_num_threads(threads)
            med = statistics.median(host)
            print(f"{name}\n  host step (interpreter): median {med:8.2f} ms, min {min(host):8.2f}"
                  f"\n  PyTorch, {threads} thread(s):    median {t_default[0]:8.2f} ms, min "
                  f"{t_default[1]:8.2f}   ({med / t_default[0]:.1f}x)"
                  f"\n  PyTorch, 1 thread:       median {t_one[0]:8.2f} ms, min {t_one[1]:8.2f}"
                  f"   ({med / t_one[0]:.1f}x)")


if __name__ == "__main__":
    main()
