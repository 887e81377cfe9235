"""A partitioned model (`vkd compile --partition`) run step by step, keeping every tensor:
`vkd run --intermediates` takes one blob, not a plan, so each GPU partition runs on its own
(its int8 intermediates written) and the host steps between them run here with PyTorch's own
ops. What the per-layer comparison (vkdelegate.per_layer) of a plan with host steps reads."""
import os
import subprocess

import numpy as np
import torch
import torch.nn.functional as F

QD = torch.ops.quantized_decomposed


def _dequantize(x, a):
    return QD.dequantize_per_tensor.default(x, a["scale"], a["zero_point"], a["quant_min"],
                                            a["quant_max"], torch.int8)


# The host steps the models of these tests leave, computed as PyTorch computes them.
HOST_OPS = {
    "aten.view_copy": lambda xs, a: xs[0].reshape(a["size"]),
    "aten.permute_copy": lambda xs, a: xs[0].permute(a["dims"]).contiguous(),
    "aten.transpose_copy.int": lambda xs, a: xs[0].transpose(a["dim0"], a["dim1"]).contiguous(),
    "aten.slice_copy.Tensor": lambda xs, a: xs[0].narrow(
        a["dim"], a["start"], a["end"] - a["start"]).contiguous(),
    "aten.cat": lambda xs, a: torch.cat(xs, a.get("dim", 0)),
    "aten.gelu": lambda xs, a: F.gelu(xs[0], approximate=a.get("approximate", "none")),
    "quantized_decomposed.dequantize_per_tensor": lambda xs, a: _dequantize(xs[0], a),
}


def run_steps(vkd, folder, plan, graph, weights, inputs):
    """{value name: array} of every tensor the plan's steps wrote: `inputs` ({graph input name:
    array}), each partition's outputs and intermediates (`vkd run PART.vkd --intermediates`,
    validation on: a message is an AssertionError) and each host step's outputs. `weights`:
    {data name: array} of the graph IR (to_graph_ir's), where host steps find constants."""
    values = dict(inputs)

    def read(name):
        if name not in values:
            values[name] = weights[graph["values"][name]["data"]]
        return values[name]

    for k, step in enumerate(plan["steps"]):
        if "host" in step:
            assert step["host"] in HOST_OPS, f"no host op {step['host']} in plan_steps.HOST_OPS"
            xs = [torch.from_numpy(np.ascontiguousarray(read(n))) for n in step["inputs"]]
            outs = HOST_OPS[step["host"]](xs, step.get("args", {}))
            outs = outs if isinstance(outs, (tuple, list)) else [outs]
            values.update({n: t.numpy() for n, t in zip(step["outputs"], outs)})
            continue
        step_dir = os.path.join(folder, f"step{k}")
        os.makedirs(step_dir)
        args = []
        for n in step["inputs"]:
            np.save(os.path.join(step_dir, f"in_{n}.npy"), read(n))
            args += ["--input", f"{n}={step_dir}/in_{n}.npy"]
        run = subprocess.run([vkd, "run", os.path.join(folder, step["delegate"]),
                              "--intermediates", "--output-dir", step_dir] + args,
                             capture_output=True, text=True,
                             env=dict(os.environ, VKD_VALIDATION="1"))
        assert run.returncode == 0, run.stdout + run.stderr
        assert "validation: no messages" in run.stdout + run.stderr, run.stdout + run.stderr
        for entry in os.listdir(step_dir):
            if entry.endswith(".npy") and not entry.startswith("in_"):
                values.setdefault(entry[:-4], np.load(os.path.join(step_dir, entry)))
    return values
