"""export(): quantize, walk into the graph IR, write the files, optionally compile them."""
import contextlib
import copy
import io
import json
import math
import os
import re
import subprocess
import tempfile
from time import perf_counter

import operator

import numpy as np
import torch
import torch.utils._pytree as pytree

from . import inputs, safetensors, torchao_linear
from .agreement import model_agreement
from .dynamic import dynamic_length, dynamic_section, inputs_at
from .errors import CompileError, ExportError
from .ir import named_leaves, to_json_text, unique_names
from .ops import find_handler
from .quantization import as_args, quantize
from .walk import Pieces, Walker, propagate

SUFFIXES = {"graph": ".json", "weights": ".safetensors", "calibration": ".calibration.json"}
COMPILE_SUFFIXES = {"blob": ".vkd", "report": ".report.txt"}


def to_graph_ir(program, example_inputs, name="model", dynamic_shapes=None):
    """The graph IR of a quantized model: (graph dict, {data name: numpy array}).

    `program`: a converted PT2E GraphModule (convert_pt2e of any quantizer that uses the
    quantized_decomposed q/dq ops: VkdQuantizer, XNNPACKQuantizer's static configs) or an
    ExportedProgram of one, or the ExportedProgram of a model quantized by torchao's
    quantize_() (its int8 linears: torchao_linear.py). The graph is run once on
    `example_inputs` to learn every value's dtype and shape. A node the walk does not know is
    written by name (`aten.<op>`) for `vkd compile --partition`; float_nodes() names the ones
    that stayed float.

    `dynamic_shapes`: what torch.export (and quantize()) took, one Dim (a sequence length) with
    a maximum: the graph is written at the maximum (the dynamic inputs of `example_inputs` cut
    or repeated to it) with its "dynamic" section (dynamic.py), so `vkd compile` makes one blob
    that runs every length up to it."""
    gm = as_graph_module(program)
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    dynamic = dynamic_length(dynamic_shapes, placeholders, example_inputs)
    if dynamic is None:
        return _walk(gm, example_inputs, name)
    lengths = {dynamic.max, dynamic.max - 1, dynamic.min, (dynamic.min + dynamic.max) // 2}
    walked = {length: _walk(copy.deepcopy(gm), inputs_at(example_inputs, length, dynamic), name)
              for length in sorted(lengths, reverse=True)}
    graph, tensors = walked[dynamic.max]
    graph["dynamic"] = dynamic_section(walked, dynamic)
    return graph, tensors


def _walk(gm, example_inputs, name):
    """to_graph_ir of a GraphModule at the shapes of `example_inputs`."""
    torchao_linear.rewrite(gm)  # torchao's int8 linears as affine ops + linear
    propagate(gm, tuple(example_inputs))
    leaves = model_outputs(gm, name)
    walker = Walker(gm, find_handler, where=f"{name}: ")
    ir = walker.run()
    wanted = []
    for base, node in leaves:  # a split returned whole stands for several outputs
        ref = walker.env[node]
        wanted += [f"{base}_{k}" for k in range(len(ref.names))] \
            if isinstance(ref, Pieces) else [base]
    ir.name_outputs(unique_names(wanted))
    return ir.to_dict(), dict(ir.tensors)


def as_graph_module(program):
    """The GraphModule of an ExportedProgram (or `program` itself when it is one)."""
    if isinstance(program, torch.export.ExportedProgram):
        return program.module()
    if not isinstance(program, torch.fx.GraphModule):
        raise ExportError(f"to_graph_ir takes a converted PT2E GraphModule or an "
                          f"ExportedProgram, not {type(program).__name__}")
    return program


def model_outputs(gm, name):
    """(name, graph node) for each tensor the model returns, named after the model's own names for
    them (ir.named_leaves of the output structure torch.export recorded); anything else it
    returns is the user's error, named."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = named_leaves(output_structure(gm, output.args[0]))
    for base, leaf in leaves:
        if isinstance(leaf, torch.fx.Node) and "vkd_literal" not in leaf.meta:
            continue
        value = leaf.meta["vkd_literal"] if isinstance(leaf, torch.fx.Node) else leaf
        text = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ExportError(f"{name}: the model returns {type(value).__name__} {text} as its "
                          f"output '{base}'; the graph IR's outputs are tensors")
    return leaves


def output_structure(gm, flat):
    """The model's output structure (tuples, dicts, namedtuples) with the graph's output nodes
    as leaves: torch.export flattens it and keeps its pytree spec in the graph's codegen."""
    info = getattr(gm.graph._codegen, "pytree_info", None)
    if info is None or info.out_spec is None:
        return flat
    return pytree.tree_unflatten(list(flat), info.out_spec)


def float_nodes(program):
    """The compute nodes of a converted PT2E graph that run in float: [(node name, target)].
    A node runs in int8 when it reads a dequantize and its result is quantized, directly or
    after the one activation fused with it (conv -> relu -> quantize); anything else (a
    layer_norm the quantizer left alone, an op on the float input) stays float."""
    gm = as_graph_module(program)
    compute = [n for n in gm.graph.nodes if n.op == "call_function" and
               n.target is not operator.getitem and "quantize" not in str(n.target)]
    int8 = set()
    for node in compute:
        if any(_is_q_op(a, "dequantize") for a in node.all_input_nodes) and \
                _quantized_result(node):
            int8.add(node)
            users = list(node.users)
            if len(users) == 1 and not _is_q_op(users[0], "quantize"):
                int8.add(users[0])  # the activation fused with it
    return [(n.name, str(n.target)) for n in compute if n not in int8]


def _is_q_op(node, kind):
    """Whether `node` is a quantized_decomposed quantize (kind "quantize") or dequantize."""
    name = str(node.target) if node.op == "call_function" else ""
    return name.startswith("quantized_decomposed.") and name.split(".")[1].startswith(kind)


def _quantized_result(node):
    """Whether `node`'s result reaches a quantize: itself, through its only user (a fused
    activation), or through getitems (the pieces of a split)."""
    users = list(node.users)
    if any(_is_q_op(u, "quantize") for u in users):
        return True
    if users and all(u.target is operator.getitem for u in users):
        return all(_quantized_result(u) for u in users)
    return len(users) == 1 and any(_is_q_op(u, "quantize") for u in users[0].users)


def describe_float_nodes(nodes, shown=8):
    """'no op left float', or the ops the quantizer left float, by node name and op."""
    if not nodes:
        return "no op left float"
    names = [f"{name} ({target.split('.')[-2] if target.count('.') >= 2 else target})"
             for name, target in nodes[:shown]]
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    return f"{len(nodes)} op(s) left float: " + ", ".join(names) + more


def output_paths(out_dir, name, compile_too, input_names=None):
    """Every file export() writes, by kind. `name` must be a plain file name stem. The sample
    input: one input (input_names None or one name) is NAME.input.npy (kind "input"), several
    NAME.input.<name>.npy (kinds "input.<name>"); input_names () leaves them out (not known
    yet)."""
    if not _is_file_name(name):
        raise ExportError(f"the name '{name}' is no file name (it names OUT_DIR/NAME.json, ...: "
                          "not empty, '.' or '..', no '/')")
    paths = {kind: os.path.join(out_dir, name + suffix) for kind, suffix in SUFFIXES.items()}
    if input_names is None or len(input_names) == 1:
        paths["input"] = os.path.join(out_dir, name + ".input.npy")
    else:
        for arg in input_names:
            if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", arg):
                raise ExportError(f"the input name '{arg}' cannot name a file "
                                  f"({name}.input.<name>.npy): letters, digits, _ . -")
            paths[f"input.{arg}"] = os.path.join(out_dir, f"{name}.input.{arg}.npy")
    paths["accuracy"] = os.path.join(out_dir, name + ".accuracy.json")
    if compile_too:
        paths.update({kind: os.path.join(out_dir, name + suffix)
                      for kind, suffix in COMPILE_SUFFIXES.items()})
    return paths


def input_paths(paths):
    """The sample input files of output_paths(), in the model's input order."""
    return [p for kind, p in paths.items() if kind == "input" or kind.startswith("input.")]


def _is_file_name(name):
    return bool(name) and name not in (".", "..") and "/" not in name and \
        not (os.altsep and os.altsep in name) and "\0" not in name


@contextlib.contextmanager
def outputs_checked(out_dir, paths, force):
    """Checks, before any work, that every output can be written (check_outputs) and runs the
    body; the folders it created for OUT_DIR are removed again when the body fails (and they
    are still empty)."""
    created = make_output_dir(out_dir)
    try:
        check_outputs(paths, force)
        yield
    except BaseException:
        _remove_folders(created)
        raise


def make_output_dir(out_dir):
    """Creates OUT_DIR where missing and makes sure a file can be created in it; returns the
    folders created, outermost first. Trying is the only true test: permission bits say
    nothing to root, nor of a read-only file system or /proc."""
    missing, folder = [], os.path.abspath(out_dir)
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise ExportError(f"output folder '{out_dir}' exists and is not a directory" if not missing
                          else f"output folder '{out_dir}' cannot be created: '{folder}' is not "
                          "a directory")
    created = []
    try:
        for folder in reversed(missing):
            os.mkdir(folder)
            created.append(folder)
    except OSError as e:
        _remove_folders(created)
        raise ExportError(f"output folder '{out_dir}' cannot be created: {e.strerror} "
                          f"('{folder}')") from e
    try:
        with tempfile.TemporaryFile(dir=out_dir or "."):
            pass
    except OSError as e:
        _remove_folders(created)
        raise ExportError(f"output folder '{out_dir}': no file can be created in it: "
                          f"{e.strerror}") from e
    return created


def _remove_folders(created):
    """Removes the folders make_output_dir created, innermost first, where still empty."""
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def check_outputs(paths, force):
    """Refuses to replace existing files unless `force` (before any work is done), and with it
    anything that is not a writable file. A dangling symbolic link counts as existing: writing
    would create its target."""
    existing = [p for p in paths.values() if os.path.lexists(p)]
    if existing and not force:
        raise ExportError("would overwrite " + ", ".join(existing) + " (use --force)")
    for path in existing:
        if not os.path.isfile(path) or not os.access(path, os.W_OK):
            raise ExportError(f"cannot replace '{path}': not a writable regular file")


def calibration_summary(observed, graph, samples, observer, per_channel):
    """NAME.calibration.json: each observed activation's range and parameters, with the graph
    IR values quantized from it."""
    readers = {}
    for node in graph["nodes"]:
        if node["op"] == "quantized_decomposed.quantize_per_tensor":
            readers.setdefault(node["inputs"][0], []).append(node["outputs"][0])
    activations = [dict(value=value, quantized_as=readers.get(value, []), **info)
                   for value, info in observed.items()]
    return {"vkd_calibration": 1, "samples": samples, "observer": observer,
            "per_channel_weights": per_channel, "activations": activations}


def export(model, example_inputs, out_dir, name, calibration, per_channel=True,
           observer="histogram", sample_input=None, vkd=None, force=False, log=None,
           per_layer=False, input_names=None, dynamic_shapes=None):
    """Quantizes `model`, writes its graph IR, weights, calibration summary, sample input and
    accuracy report into `out_dir` as NAME.*, and compiles them with the `vkd` binary when
    given. `example_inputs`: a tuple of tensors, one per forward() argument (integer ones stay
    integer); `sample_input` (default: example_inputs) a tensor or such a tuple, written as
    NAME.input.npy, or with several inputs NAME.input.<name>.npy, `input_names` (default:
    forward()'s parameter names). The report (vkdelegate.accuracy, NAME.accuracy.json)
    compares PyTorch's reference-quantized model with the float model on the sample and
    calibration inputs, and with `per_layer` every layer on the sample input. Before any work
    OUT_DIR is created where missing and every output checked (outputs_checked): existing
    files are kept unless `force`. `log(step, seconds, detail)` hears about each step. Returns
    {kind: path} of the files written; a failed compile raises CompileError with vkd's
    message, after the other files are written.
    A model torchao's quantize_() has quantized (Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig) is exported as it is: `calibration` (may be None), `per_channel`,
    `observer` and `per_layer` are unused and no calibration or accuracy file is written.
    `dynamic_shapes`: torch.export's, one sequence length with a maximum (quantize(),
    to_graph_ir()): the graph IR has its "dynamic" section and the blob runs every length."""
    example_inputs = tuple(example_inputs)
    if input_names is None:
        input_names = inputs.input_names(model, len(example_inputs), "example_inputs")
    paths = output_paths(out_dir, name, vkd is not None, input_names)
    with outputs_checked(out_dir, paths, force):
        return _export(model, example_inputs, paths, name, calibration, per_channel, observer,
                       sample_input, vkd, force, log, per_layer, input_names, dynamic_shapes)


def is_torchao_quantized(model):
    """Whether torchao's quantize_() has quantized `model`: a parameter is one of torchao's
    tensor subclasses (Int8Tensor, ...)."""
    from torchao.utils import TorchAOBaseTensor
    return any(isinstance(p, TorchAOBaseTensor) for p in model.parameters())


def _export(model, example_inputs, paths, name, calibration, per_channel, observer,
            sample_input, vkd, force, log, per_layer, input_names, dynamic_shapes=None):
    if is_torchao_quantized(model):
        if dynamic_shapes is not None:
            raise ExportError("dynamic_shapes takes a model quantize() quantizes (not one "
                              "torchao's quantize_() has) for now")
        return _export_torchao(model, example_inputs, paths, name, sample_input, vkd, force,
                               log, input_names)
    if not hasattr(calibration, "__len__"):
        calibration = list(calibration)
    sample = example_inputs if sample_input is None else as_args(sample_input)
    if len(sample) != len(input_names):
        raise ExportError(f"sample_input has {len(sample)} tensor(s), the model takes "
                          f"{len(input_names)} ({', '.join(input_names)})")
    check_model_runs(model, example_inputs, input_names)
    quantized = quantize(model, example_inputs, calibration, per_channel, observer, log,
                         dynamic_shapes=dynamic_shapes)

    t = perf_counter()
    graph, tensors = to_graph_ir(quantized.converted, example_inputs, name,
                                 dynamic_shapes=dynamic_shapes)
    _log(log, "graph IR", t, f"{len(graph['nodes'])} nodes, {len(tensors)} tensors; "
         + describe_float_nodes(float_nodes(quantized.converted)))

    t = perf_counter()
    agreement = model_agreement(quantized, sample, calibration, per_layer)
    _log(log, "accuracy report", t, f"{agreement['inputs']} input(s)" +
         (", per layer" if per_layer else ""))

    t = perf_counter()
    summary = calibration_summary(quantized.calibration, graph, quantized.samples, observer,
                                  per_channel)
    write_file(paths["graph"], to_json_text(graph))
    write_file(paths["weights"], safetensors.to_bytes(tensors))
    write_file(paths["calibration"], json.dumps(summary, indent=1) + "\n")
    for path, x in zip(input_paths(paths), sample):
        write_file(path, npy_bytes(x))
    write_file(paths["accuracy"], json.dumps(_json_ready(dict(vkd_accuracy=1, **agreement)),
                                             indent=1) + "\n")
    _log(log, "write", t, os.path.dirname(paths["graph"]) or ".")

    if vkd is not None:
        t = perf_counter()
        compile_graph(vkd, paths, force)
        _log(log, "vkd compile", t, paths["blob"])
    return paths


def _export_torchao(model, example_inputs, paths, name, sample_input, vkd, force, log,
                    input_names):
    """export() of a model torchao's quantize_() has quantized already: torch.export as it is
    (no calibration, no VkdQuantizer), then the graph IR, weights and sample input (and the
    compile). Returns {kind: path} of the files written (no calibration or accuracy file)."""
    sample = example_inputs if sample_input is None else as_args(sample_input)
    if len(sample) != len(input_names):
        raise ExportError(f"sample_input has {len(sample)} tensor(s), the model takes "
                          f"{len(input_names)} ({', '.join(input_names)})")
    check_model_runs(model, example_inputs, input_names)
    t = perf_counter()
    try:
        with torch.no_grad():  # (HF's BERT with Int8Tensor weights fails to export otherwise)
            program = torch.export.export(model.eval(), tuple(example_inputs))
    except Exception as e:  # the model's code cannot be captured, or PyTorch refused it
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ExportError(f"torch.export failed on the model: {type(e).__name__}: {first}") from e
    graph, tensors = to_graph_ir(program, example_inputs, name)
    _log(log, "graph IR", t, f"{len(graph['nodes'])} nodes, {len(tensors)} tensors (torchao)")
    write_file(paths["graph"], to_json_text(graph))
    write_file(paths["weights"], safetensors.to_bytes(tensors))
    for path, x in zip(input_paths(paths), sample):
        write_file(path, npy_bytes(x))
    written = {k: p for k, p in paths.items() if k not in ("calibration", "accuracy", "blob",
                                                           "report")}
    if vkd is not None:
        t = perf_counter()
        compile_graph(vkd, paths, force)
        _log(log, "vkd compile", t, paths["blob"])
        written.update(blob=paths["blob"], report=paths["report"])
    return written


def check_model_runs(model, example_inputs, names):
    """Runs the float model once on the example inputs: one that cannot take them (a shape, a
    dtype, a count) is named with the inputs it was given, before torch.export fails on it."""
    try:
        with torch.no_grad():
            model.eval()(*example_inputs)
    except Exception as e:  # the user's model on the user's inputs
        given = ", ".join(f"{n} {list(x.shape)} {str(x.dtype).replace('torch.', '')}"
                          for n, x in zip(names, example_inputs))
        raise ExportError(f"the model failed on the example input(s) {given}: "
                          f"{type(e).__name__}: {e}") from e


def npy_bytes(tensor):
    """A sample input as .npy bytes: float32 for a float tensor, an integer one's own dtype."""
    array = tensor.detach().numpy()
    if array.dtype.kind == "f":
        array = array.astype(np.float32)
    npy = io.BytesIO()
    np.save(npy, array)
    return npy.getvalue()


def _json_ready(value):
    """`value` with each non-finite float as text ("inf", "-inf", "nan"): JSON has none."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def compile_graph(vkd, paths, force):
    """Runs `vkd compile NAME.json --weights NAME.safetensors -o NAME.vkd --report` and saves
    its output (the report) as NAME.report.txt, also when it fails: a failure raises
    CompileError carrying vkd's own message."""
    cmd = [vkd, "compile", paths["graph"], "--weights", paths["weights"], "-o", paths["blob"],
           "--report"] + (["--force"] if force else [])
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    except OSError as e:
        raise ExportError(f"cannot run {vkd}: {e.strerror}") from e
    write_file(paths["report"], done.stdout + done.stderr)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip()
        raise CompileError(f"vkd compile failed (exit status {done.returncode}); the graph IR "
                           f"is kept in {paths['graph']}, vkd's output in {paths['report']}:"
                           f"\n{message}")


def write_file(path, data):
    """Writes `data` (text or bytes) to `path`; failing (a full disk, a folder removed
    meanwhile) is an ExportError naming the file."""
    try:
        with open(path, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
    except OSError as e:
        raise ExportError(f"cannot write '{path}': {e.strerror}") from e


def _log(log, step, start, detail):
    if log is not None:
        log(step, perf_counter() - start, detail)
