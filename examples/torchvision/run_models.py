#!/usr/bin/env python3
"""Whole torchvision models (and the tiny U-Net) through vkdelegate, checked against PyTorch.

For each model: quantize with the project's exporter (vkdelegate.export's Python API), compile
with `vkd compile --report`, time with `vkd run --bench N`, check every tensor with
`vkd run --check` (per op against the CPU reference interpreter), compare every int8 tensor
the device keeps (`vkd run --intermediates`) with PyTorch's reference-quantized FX model, layer
by layer, each layer fed the device's own inputs (vkdelegate.per_layer: within 1 LSB, and only
at rounding ties), and compare the output with PyTorch's own int8 execution (convert_fx of the
very prepared + calibrated model the graph IR comes from: weights packed by the default engine,
oneDNN here, or qnnpack where oneDNN cannot pack a layer; run with qnnpack selected); for
information also
end to end with the reference model and with the float model.

Two things on PyTorch's side are set so that comparison means something (both printed):
ResNets and MobileNetV3 get trained-like residual branch scales
(examples_models.scale_residual_branches: with random init's 1 a deep random ResNet is chaotic and PyTorch's own int8 kernels agree with its
reference model at cosine 0.97), and where PyTorch 1.13's quantized hardtanh / ReLU6 returns a
channels-last input's elements in the wrong order (qnnpack; the U-Net's ReLU6 after a conv), its
int8 model gets the input made contiguous first.

Exit status 0 when every model compiles with no host step, passes --check and meets the
thresholds; 1 otherwise (each failure printed); 2 for a usage error. examples/torchvision/
README.md says more.
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch
from torch.ao.quantization.backend_config import get_qnnpack_backend_config
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, prepare_fx

from vkdelegate import examples_models, per_layer
from vkdelegate.export import pipeline, safetensors, to_graph_ir
from vkdelegate.export.ir import to_json_text
from vkdelegate.export.quantization import observed_ranges, qconfig_mapping
from vkdelegate.export.torch_compat import fx_tuple_unpacking

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
RESIDUAL_GAMMA = 0.25  # examples_models.scale_residual_branches, for the ResNets and MobileNetV3
DEFAULT_ENGINE = torch.backends.quantized.engine  # before anything here selects qnnpack
GAMMA_MODELS = ("resnet18", "resnet50", "mobilenet_v3_large")
SEED = 0
CALIBRATION_SAMPLES = 8


class ModelFailure(Exception):
    """A model that did not make it (compile, run, check or threshold): the reason, printed."""


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
    gamma = RESIDUAL_GAMMA if name in GAMMA_MODELS else None
    return examples_models.torchvision_quantizable(name, input_size=size,
                                                   residual_gamma=gamma).eval()


def quantized_hardtanh_is_broken():
    """Whether this PyTorch's quantized hardtanh (qnnpack) scrambles a channels-last tensor, as
    1.13's does: the right values in NCHW order over data laid out NHWC. A quantized conv's
    output is channels last, so a standalone ReLU6 after a conv permutes the activations in
    PyTorch's own int8 model (the U-Net's stem)."""
    torch.backends.quantized.engine = "qnnpack"
    x = torch.arange(-36, 36, dtype=torch.float32).reshape(1, 8, 3, 3) / 8.0
    q = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
    q = q.contiguous(memory_format=torch.channels_last)
    got = torch.nn.functional.hardtanh(q, 0.0, 6.0).dequantize()
    return not torch.equal(got, torch.clamp(q.dequantize(), 0.0, 6.0))


def hardtanh_on_contiguous(native):
    """`native` with each ReLU6 / Hardtanh module's input made contiguous first (the workaround
    for quantized_hardtanh_is_broken); the number of modules changed."""
    changed = 0
    for node in list(native.graph.nodes):
        if node.op == "call_module" and isinstance(native.get_submodule(node.target),
                                                   (torch.nn.ReLU6, torch.nn.Hardtanh)):
            with native.graph.inserting_before(node):
                contiguous = native.graph.call_method("contiguous", (node.args[0],))
            node.replace_input_with(node.args[0], contiguous)
            changed += 1
    native.recompile()
    return changed


def prepare_and_calibrate(model, x, samples):
    """prepare_fx with the exporter's qconfig mapping (qnnpack backend config) and calibration:
    the one observed model both the graph IR and PyTorch's int8 model are converted from."""
    backend = get_qnnpack_backend_config()
    with fx_tuple_unpacking():
        prepared = prepare_fx(copy.deepcopy(model), qconfig_mapping(), (x,),
                              backend_config=backend)
    with torch.no_grad():
        for sample in samples:
            prepared(sample)
    return prepared


def convert_native(prepared, backend):
    """PyTorch's int8 model (convert_fx), its conv / linear weights packed by the quantized
    engine selected at conversion: the default one (oneDNN in Debian's torch 1.13, whose kernels
    requantize closest to the reference model), else qnnpack where it cannot pack a layer (oneDNN
    refuses a transposed conv with output_padding). Sets native.vkd_engine to the one used."""
    default = torch.backends.quantized.engine
    for engine in dict.fromkeys([DEFAULT_ENGINE, "qnnpack"]):
        torch.backends.quantized.engine = engine
        try:
            native = convert_fx(copy.deepcopy(prepared), backend_config=backend)
        except RuntimeError as e:
            print(f"  PyTorch int8: the {engine} engine cannot pack this model ({e})")
            continue
        finally:
            torch.backends.quantized.engine = default
        native.vkd_engine = engine
        return native
    raise RuntimeError("no quantized engine of this PyTorch packs the model")


def export_model(name, model, x, samples, out_dir):
    """Quantizes and writes NAME.json / .safetensors / .calibration.json / .input.npy as
    vkdelegate.export.export does, keeping the prepared model for PyTorch's int8 execution.
    Returns (paths, reference GraphModule, PyTorch int8 GraphModule)."""
    backend = get_qnnpack_backend_config()
    prepared = prepare_and_calibrate(model, x, samples)
    reference = convert_to_reference_fx(copy.deepcopy(prepared), backend_config=backend)
    reference.vkd_calibration = observed_ranges(prepared)
    native = convert_native(prepared, backend)
    graph, tensors = to_graph_ir(reference, (x,), name)
    paths = pipeline.output_paths(out_dir, name, True)
    os.makedirs(out_dir, exist_ok=True)
    with open(paths["graph"], "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(paths["weights"], tensors)
    with open(paths["calibration"], "w") as f:
        json.dump(pipeline.calibration_summary(reference, graph, len(samples), "histogram",
                                               True), f, indent=1)
    np.save(paths["input"], x.numpy().astype(np.float32))
    return paths, graph, reference, native


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
    reference-quantized model fed the device's inputs layer by layer (vkdelegate.per_layer)."""
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
    paths, graph, reference, native = export_model(name, model, x, samples, out_dir)
    result["export_s"] = time.perf_counter() - t
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

    result["pytorch_weights_engine"] = native.vkd_engine
    if quantized_hardtanh_is_broken():
        result["pytorch_hardtanh_workaround"] = hardtanh_on_contiguous(native)
    torch.backends.quantized.engine = "qnnpack"
    with torch.no_grad():
        y_torch = native(x).numpy()
        y_reference, y_float = reference(x).numpy(), model(x).numpy()
    result["cosine_vs_torch_int8"] = cosine(y, y_torch)
    result["cosine_vs_torch_reference"] = cosine(y, y_reference)
    result["cosine_vs_float"] = cosine(y, y_float)
    result["cosine_torch_int8_vs_reference"] = cosine(y_torch, y_reference)
    if name not in UNETS:
        result["argmax_equal"] = bool(np.argmax(y) == np.argmax(y_torch))
    return result


def verdict(result):
    """The reasons a finished model fails the assertions ([] when it passes)."""
    reasons = []
    if not result["check_passed"]:
        reasons.append("vkd run --check: " + (result["check_first_difference"] or "failed"))
    if result["per_layer_tensors"] == 0:
        reasons.append("per layer: vkd run --intermediates wrote no tensor of the reference graph")
    if result["per_layer_real"]:
        reasons.append("per layer vs PyTorch's reference model: " + result["per_layer_summary"])
    if result["cosine_vs_torch_int8"] < COSINE_MIN:
        reasons.append(f"cosine {result['cosine_vs_torch_int8']:.5f} < {COSINE_MIN}")
    if result.get("argmax_equal") is False:
        reasons.append("argmax differs from PyTorch's int8 model")
    return reasons


def print_result(r):
    """One model's numbers, one line each."""
    print(f"{r['model']} {'x'.join(map(str, r['input']))}")
    print(f"  export {r['export_s']:.2f} s   compile {r['compile_s']:.2f} s")
    print(f"  latency: GPU median {r['gpu_ms']:.3f} ms, host wall median {r['host_ms']:.3f} ms")
    arg = f", argmax equal: {r['argmax_equal']}" if "argmax_equal" in r else ""
    print(f"  vs PyTorch int8 ({r['pytorch_weights_engine']} weights): cosine {r['cosine_vs_torch_int8']:.6f}{arg}")
    print(f"  (for information: cosine vs PyTorch's reference-quantized FX model "
          f"{r['cosine_vs_torch_reference']:.6f}, vs the float model {r['cosine_vs_float']:.6f}; "
          f"PyTorch int8 vs its reference {r['cosine_torch_int8_vs_reference']:.6f})")
    print(f"  per layer: {r['per_layer_summary']} ({r['per_layer_fused']} fused away)")
    if r.get("pytorch_hardtanh_workaround"):
        print(f"  (PyTorch's int8 model: {r['pytorch_hardtanh_workaround']} ReLU6/hardtanh "
              f"input(s) made contiguous: this PyTorch's quantized hardtanh scrambles "
              f"channels-last tensors)")
    state = "pass" if r["check_passed"] else "FAIL: " + r["check_first_difference"]
    print(f"  vkd run --check: {state} ({r['check_tensors']} tensors, "
          f"{r['check_ties']} rounding ties)")


def main(argv=None):
    """Runs every selected model; exit 1 when any failed."""
    args = parse_args(argv)
    results, failed = [], 0
    for name in args.models:
        try:
            r = run_one(name, args)
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
    print(f"{len(results) - failed} of {len(results)} model(s) passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
