#!/usr/bin/env python3
"""Whole torchvision models (and the tiny U-Nets) through vkdelegate, checked against PyTorch.

For each model: quantize through torch.export + PT2E with the project's exporter
(vkdelegate.export.quantization.quantize, VkdQuantizer, then to_graph_ir), compile with
`vkd compile --report`, time with `vkd run --bench N`, check every tensor with `vkd run --check`
(per op against the CPU reference interpreter), compare every int8 tensor the device keeps
(`vkd run --intermediates`) with PyTorch's reference-quantized model (the convert_pt2e graph
itself: float ATen ops between quantize / dequantize), layer by layer, each layer fed the
device's own inputs (vkdelegate.per_layer: within 1 LSB, and only at rounding ties), and compare
the output with PyTorch's own int8 execution: the very converted model lowered to ExecuTorch's
XNNPACK backend (pytorch_int8.py; the ops it delegates and any left to portable kernels are
printed), whose int8 tensors are also compared with the reference model layer by layer. For
information also end to end with the reference model and with the float model.

Random networks are chaotic: a 1-LSB rounding difference at a near tie, which any two correct
int8 engines have, grows layer by layer until the outputs disagree. ResNets and MobileNetV3 get
trained-like residual branch scales (printed; examples_models.scale_residual_branches); where
PyTorch's int8 execution still disagrees with its own reference model end to end, that
comparison is printed, not asserted (examples/torchvision/README.md has the numbers).

Exit status 0 when every model compiles with no host step, passes --check and meets the
thresholds; 1 otherwise (each failure printed); 2 for a usage error. examples/torchvision/
README.md says more.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

import pytorch_int8
from vkdelegate import examples_models, per_layer
from vkdelegate.export import pipeline, safetensors, to_graph_ir
from vkdelegate.export.ir import to_json_text
from vkdelegate.export.quantization import quantize

CLASSIFIERS = ("mobilenet_v2", "resnet18", "resnet50", "mobilenet_v3_large",
               "shufflenet_v2_x1_0", "googlenet")
# The U-Net-style segmentation models: name -> factory in vkdelegate.examples_models.
UNETS = {"unet": "tiny_unet", "unet_transposed": "tiny_unet_transposed"}
# Small classifiers with the architecture patterns of issue 31 (examples_models.PATTERN_MODELS:
# a standalone BatchNorm2d, a channel shuffle through contiguous(), stochastic depth and
# dropouts, a flatten observed with its own quantization).
PATTERNS = tuple(examples_models.PATTERN_MODELS)
MODELS = CLASSIFIERS + tuple(UNETS) + PATTERNS
COSINE_MIN = 0.99
# PyTorch's int8 execution against its reference model per layer: ExecuTorch's XNNPACK lowering
# quantizes each float bias to int32 at input scale x weight scale (QuantParams.from_bias in
# executorch/backends/xnnpack/operators/quant_params.py), which moves the value it rounds by up
# to 0.5 * s_in * s_w / s_out LSB from the reference's: its near ties lie farther from x.5 than
# the device's (measured on these models: within 0.005 LSB; the device's within 1e-4).
XNNPACK_TIE_TOLERANCE = 0.01
# examples_models.scale_residual_branches: the weight of each residual branch's last batch norm,
# trained-like (MobileNetV2's 17 blocks at 64x64 need 0.1 for two correct int8 engines to agree
# at cosine 0.99: 0.946 with 1, 0.987 with 0.25).
RESIDUAL_GAMMA = {"resnet18": 0.25, "resnet50": 0.25, "mobilenet_v2": 0.1,
                  "mobilenet_v3_large": 0.25}
SEED = 0
CALIBRATION_SAMPLES = 8


class ModelFailure(Exception):
    """A model that did not make it (compile, run, check or threshold): the reason, printed."""


class ModelRefused(Exception):
    """Under a device class (VKD_DEVICE_CLASS), a model the class cannot run, refused at load
    by an Unsupported error naming the limit: the class's answer, not a failure."""


def parse_args(argv):
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(MODELS),
                   help=f"comma-separated subset of {','.join(MODELS)}")
    p.add_argument("--input-size", type=int, default=None,
                   help="square input side (default 224; the U-Net 256; the pattern models 32)")
    p.add_argument("--vkd", default=default_vkd(), help="the vkd binary (default build/vkd)")
    p.add_argument("--out", default="out/torchvision", help="where the files go")
    p.add_argument("--bench", type=int, default=20, help="timed runs of vkd run --bench")
    p.add_argument("--json", help="also write the results as JSON to this file")
    args = p.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown or not args.models:
        p.error(f"unknown model(s) {', '.join(unknown)} (accepted: {', '.join(MODELS)})")
    if args.bench < 1:
        p.error("--bench must be at least 1")
    if not os.access(args.vkd, os.X_OK):
        p.error(f"--vkd {args.vkd}: not an executable file")
    return args


def default_vkd():
    """build/vkd of the source tree this script lives in."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "build", "vkd")


def build_model(name, size):
    """The float model with seeded random weights (batch norms measured on random inputs, as
    random torchvision weights alone make the activations collapse)."""
    torch.manual_seed(SEED)
    if name in UNETS:
        return getattr(examples_models, UNETS[name])().eval()
    if name in PATTERNS:
        return examples_models.architecture_pattern(name, size)
    gamma = RESIDUAL_GAMMA.get(name)
    return examples_models.torchvision_quantizable(name, input_size=size,
                                                   residual_gamma=gamma).eval()


def export_model(name, model, x, samples, out_dir):
    """Quantizes (torch.export, prepare_pt2e with VkdQuantizer, calibration on `samples`,
    convert_pt2e) and writes NAME.json / .safetensors / .calibration.json / .input.npy as
    vkdelegate.export.export does, keeping the converted model for the comparisons.
    Returns (paths, graph IR, Quantized, {step: seconds})."""
    steps = {}
    quantized = quantize(model, (x,), samples,
                         log=lambda step, seconds, detail: steps.__setitem__(step, seconds))
    t = time.perf_counter()
    graph, tensors = to_graph_ir(quantized.converted, (x,), name)
    steps["graph IR"] = time.perf_counter() - t
    paths = pipeline.output_paths(out_dir, name, True)
    os.makedirs(out_dir, exist_ok=True)
    with open(paths["graph"], "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(paths["weights"], tensors)
    with open(paths["calibration"], "w") as f:
        json.dump(pipeline.calibration_summary(quantized.calibration, graph, quantized.samples,
                                               "histogram", True), f, indent=1)
    np.save(paths["input"], x.numpy().astype(np.float32))
    return paths, graph, quantized, steps


def pytorch_int8_run(converted, x):
    """PyTorch's int8 output: ExecuTorch's XNNPACK backend running `converted`
    (pytorch_int8.run). Where ExecuTorch cannot lower or run this model, the reference model
    stands in, labelled with the reason. (output, label, Int8Run or None)."""
    try:
        run = pytorch_int8.run(converted, (x,))
        return run.output, "ExecuTorch XNNPACK", run
    except Exception as e:  # ExecuTorch's own failure, reported and replaced
        reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        with torch.no_grad():
            return converted(x).numpy(), f"the reference model (XNNPACK failed: {reason})", None


def run_vkd(cmd):
    """Runs vkd; its combined output and exit status (the binary may be mid-rebuild by another
    job: a missing or busy file is retried a few times)."""
    for attempt in range(5):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
            return done.returncode, done.stdout + done.stderr
        except OSError as e:
            if attempt == 4:
                raise ModelFailure(f"cannot run {cmd[0]}: {e.strerror}") from e
            time.sleep(3)


def compile_model(vkd, paths):
    """`vkd compile --report`; fails on a compile error or on any host step / unsupported node
    the report lists (the whole model must run on the GPU)."""
    rc, text = run_vkd([vkd, "compile", paths["graph"], "--weights", paths["weights"],
                        "-o", paths["blob"], "--report", "--force"])
    with open(paths["report"], "w") as f:
        f.write(text)
    if rc != 0:
        raise ModelFailure(f"vkd compile failed (exit {rc}), see {paths['report']}:\n"
                           + text.strip()[-2000:])
    hosted = [line for line in text.splitlines()
              if re.search(r"\bhost\b|unsupported|not supported|cannot be compiled", line, re.I)]
    if hosted:
        raise ModelFailure("the compile report lists host steps / unsupported nodes:\n"
                           + "\n".join(hosted[:20]))
    return text


def bench(vkd, paths, runs, out_dir):
    """Median GPU time (ms) and host wall (ms) from `vkd run --bench`, and the output array."""
    rc, text = run_vkd([vkd, "run", paths["blob"], "--input", "x=" + paths["input"],
                        "--output-dir", out_dir, "--force", "--bench", str(runs)])
    refusal = re.search(r"\(unsupported\): (.*)", text)
    if rc != 0 and refusal and os.environ.get("VKD_DEVICE_CLASS"):
        raise ModelRefused(refusal.group(1))
    if rc != 0:
        raise ModelFailure(f"vkd run failed (exit {rc}):\n{text.strip()[-2000:]}")
    m = re.search(r"host wall median ([\d.]+) ms.*GPU total median ([\d.]+) µs", text)
    if not m:
        raise ModelFailure("no bench line in vkd run's output:\n" + text[-1000:])
    outputs = re.findall(r"^output (\S+):", text, re.M)
    if len(outputs) != 1:
        raise ModelFailure(f"expected one output, vkd run wrote {outputs}")
    y = np.load(os.path.join(out_dir, outputs[0] + ".npy"))
    return float(m.group(2)) / 1000.0, float(m.group(1)), y


def check(vkd, paths, out_dir):
    """`vkd run --check`: every tensor vs the reference interpreter, each op fed the device's
    own inputs. Returns (passed, tensors compared, rounding ties, first difference or '')."""
    rc, text = run_vkd([vkd, "run", paths["blob"], "--input", "x=" + paths["input"],
                        "--output-dir", out_dir, "--force", "--check", paths["graph"],
                        "--weights", paths["weights"]])
    with open(os.path.join(out_dir, "check.txt"), "w") as f:
        f.write(text)
    compared = re.search(r"compared (\d+) tensor", text)
    if compared is None:
        raise ModelFailure(f"vkd run --check did not finish (exit {rc}):\n{text[-2000:]}")
    ties = re.search(r"rounding ties: (\d+)", text)
    first = re.search(r"^first difference: (.*)$", text, re.M)
    return (rc == 0, int(compared.group(1)), int(ties.group(1)) if ties else 0,
            first.group(1) if first else "")


def compare_per_layer(vkd, paths, reference, x, out_dir):
    """Every int8 tensor the device keeps (`vkd run --intermediates`) against PyTorch's
    reference-quantized model (the converted PT2E graph) fed the device's inputs layer by layer
    (vkdelegate.per_layer)."""
    directory = os.path.join(out_dir, "intermediates")
    os.makedirs(directory, exist_ok=True)
    rc, text = run_vkd([vkd, "run", paths["blob"], "--input", "x=" + paths["input"],
                        "--output-dir", directory, "--force", "--intermediates"])
    if rc != 0:
        raise ModelFailure(f"vkd run --intermediates failed (exit {rc}):\n{text[-2000:]}")
    return per_layer.compare(reference, (x,), per_layer.load_intermediates(directory))


def cosine(a, b):
    """Cosine similarity of two arrays, flattened, in float64."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / denom) if denom else float(np.array_equal(a, b))


def run_one(name, args):
    """Export, compile, bench, check and compare one model; its result dict."""
    size = args.input_size or (256 if name in UNETS else 32 if name in PATTERNS else 224)
    out_dir = os.path.join(args.out, f"{name}_{size}")
    gen = torch.Generator().manual_seed(SEED + 1)
    shape = (1, 3, size, size)
    samples = [torch.randn(shape, generator=gen) for _ in range(CALIBRATION_SAMPLES)]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(SEED + 2))
    result = {"model": name, "input": list(shape)}

    t = time.perf_counter()
    model = build_model(name, size)
    paths, graph, quantized, steps = export_model(name, model, x, samples, out_dir)
    result["export_s"] = time.perf_counter() - t
    result["export_steps_s"] = steps
    reference = quantized.converted
    t = time.perf_counter()
    compile_model(args.vkd, paths)
    result["compile_s"] = time.perf_counter() - t
    result["gpu_ms"], result["host_ms"], y = bench(args.vkd, paths, args.bench, out_dir)
    passed, compared, ties, first = check(args.vkd, paths, out_dir)
    result.update(check_passed=passed, check_tensors=compared, check_ties=ties,
                  check_first_difference=first)

    layers = compare_per_layer(args.vkd, paths, reference, x, out_dir)
    result.update(per_layer_tensors=len(layers.layers), per_layer_fused=len(layers.missing),
                  per_layer_ties=layers.ties,
                  per_layer_real=sum(r.real for r in layers.layers),
                  per_layer_summary=layers.summary())

    if name in RESIDUAL_GAMMA:
        result["residual_gamma"] = RESIDUAL_GAMMA[name]
    y_torch, result["pytorch_int8"], run = pytorch_int8_run(reference, x)
    if run is not None:
        result.update(pytorch_int8_lower_s=run.lower_s, xnnpack_ops=run.delegated,
                      portable_ops=run.portable, pytorch_int8_ops=run.describe())
        own = per_layer.compare(reference, (x,), run.intermediates, XNNPACK_TIE_TOLERANCE,
                                names={k: k for k in run.intermediates})
        result.update(xnnpack_per_layer_tensors=len(own.layers), xnnpack_per_layer_ties=own.ties,
                      xnnpack_per_layer_real=sum(r.real for r in own.layers),
                      xnnpack_per_layer_summary=own.summary("XNNPACK"))
    with torch.no_grad():
        y_reference, y_float = reference(x).numpy(), model(x).numpy()
    result["cosine_vs_torch_int8"] = cosine(y, y_torch)
    result["cosine_vs_torch_reference"] = cosine(y, y_reference)
    result["cosine_vs_float"] = cosine(y, y_float)
    result["cosine_torch_int8_vs_reference"] = cosine(y_torch, y_reference)
    if name not in UNETS:
        result["top_classes"] = top_classes(y)
        result["top_classes_torch_int8"] = top_classes(y_torch)
        result["argmax_equal"] = bool(set(top_classes(y)) & set(top_classes(y_torch)))
        result["argmax_torch_int8_vs_reference_equal"] = bool(
            set(top_classes(y_torch)) & set(top_classes(y_reference)))
    result["end_to_end_asserted"] = end_to_end_meaningful(result)
    return result


def top_classes(logits):
    """The classes at the maximum of a classifier's output. The outputs are int8 values
    dequantized, and a random network's logits lie so close that several classes can share the
    maximum: np.argmax would pick the first of them, an arbitrary choice."""
    y = np.asarray(logits).ravel()
    return [int(i) for i in np.flatnonzero(y == y.max())]


def end_to_end_meaningful(r):
    """Whether two correct int8 engines can agree on this model end to end: PyTorch's int8
    execution agrees with its own reference model (cosine >= COSINE_MIN, the same argmax).
    Where it does not, the random network amplifies the 1-LSB roundings at near ties that
    the engines make differently (the per-layer comparisons show that is all they differ by)
    until no engine but the reference model itself could meet the threshold."""
    return r["cosine_torch_int8_vs_reference"] >= COSINE_MIN and \
        r.get("argmax_torch_int8_vs_reference_equal", True)


def verdict(result):
    """The reasons a finished model fails the assertions ([] when it passes)."""
    reasons = []
    if not result["check_passed"]:
        reasons.append("vkd run --check: " + (result["check_first_difference"] or "failed"))
    if result["per_layer_tensors"] == 0:
        reasons.append("per layer: vkd run --intermediates wrote no tensor of the reference graph")
    if result["per_layer_real"]:
        reasons.append("per layer vs PyTorch's reference model: " + result["per_layer_summary"])
    if result.get("xnnpack_per_layer_real"):
        reasons.append("per layer, PyTorch's int8 execution vs its reference model: "
                       + result["xnnpack_per_layer_summary"])
    if result.get("xnnpack_per_layer_tensors") == 0:
        reasons.append("per layer: the XNNPACK program returned no tensor of the reference graph")
    if result["end_to_end_asserted"]:
        if result["cosine_vs_torch_int8"] < COSINE_MIN:
            reasons.append(f"cosine {result['cosine_vs_torch_int8']:.5f} < {COSINE_MIN}")
        if result.get("argmax_equal") is False:
            reasons.append("argmax differs from PyTorch's int8 model")
    return reasons


def print_result(r):
    """One model's numbers, one line each."""
    print(f"{r['model']} {'x'.join(map(str, r['input']))}")
    steps = ", ".join(f"{k} {v:.2f}" for k, v in r["export_steps_s"].items())
    print(f"  export {r['export_s']:.2f} s ({steps})   compile {r['compile_s']:.2f} s")
    print(f"  latency: GPU median {r['gpu_ms']:.3f} ms, host wall median {r['host_ms']:.3f} ms")
    arg = f", argmax equal: {r['argmax_equal']}" if "argmax_equal" in r else ""
    if len(r.get("top_classes", [])) > 1 or len(r.get("top_classes_torch_int8", [])) > 1:
        arg += (f" (classes at the maximum: vkd {r['top_classes']}, PyTorch int8 "
                f"{r['top_classes_torch_int8']})")
    print(f"  vs PyTorch int8 ({r['pytorch_int8']}): cosine {r['cosine_vs_torch_int8']:.6f}{arg}")
    if not r["end_to_end_asserted"]:
        same = r.get("argmax_torch_int8_vs_reference_equal", True)
        print(f"  (not asserted end to end: PyTorch's int8 execution itself agrees with its "
              f"reference model at cosine {r['cosine_torch_int8_vs_reference']:.6f}"
              f"{'' if same else ', another argmax'}; this random network amplifies 1-LSB "
              f"roundings at near ties: asserted layer by layer below)")
    if "pytorch_int8_ops" in r:
        print(f"  PyTorch int8 lowered in {r['pytorch_int8_lower_s']:.2f} s; "
              f"{r['pytorch_int8_ops']}")
        print(f"  PyTorch int8 per layer: {r['xnnpack_per_layer_summary']}")
    if "residual_gamma" in r:
        print(f"  residual branches scaled by {r['residual_gamma']} (trained-like, see README)")
    print(f"  (for information: cosine vs PyTorch's reference-quantized PT2E model "
          f"{r['cosine_vs_torch_reference']:.6f}, vs the float model {r['cosine_vs_float']:.6f}; "
          f"PyTorch int8 vs its reference {r['cosine_torch_int8_vs_reference']:.6f})")
    print(f"  per layer: {r['per_layer_summary']} ({r['per_layer_fused']} fused away)")
    state = "pass" if r["check_passed"] else "FAIL: " + r["check_first_difference"]
    print(f"  vkd run --check: {state} ({r['check_tensors']} tensors, "
          f"{r['check_ties']} rounding ties)")


def main(argv=None):
    """Runs every selected model; exit 1 when any failed."""
    args = parse_args(argv)
    results, failed, refused = [], 0, 0
    for name in args.models:
        try:
            r = run_one(name, args)
        except ModelRefused as e:
            print(f"{name}: refused by device class {os.environ['VKD_DEVICE_CLASS']}: {e}")
            results.append({"model": name, "refused": str(e)})
            refused += 1
            continue
        except ModelFailure as e:
            print(f"{name}: FAILED: {e}", file=sys.stderr)
            results.append({"model": name, "error": str(e)})
            failed += 1
            continue
        print_result(r)
        reasons = verdict(r)
        r["passed"] = not reasons
        for reason in reasons:
            print(f"  FAILED: {reason}", file=sys.stderr)
        failed += bool(reasons)
        results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
    print(f"{len(results) - failed - refused} of {len(results)} model(s) passed" +
          (f", {refused} refused by the device class" if refused else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
