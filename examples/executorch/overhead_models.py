"""Makes what the ExecuTorch overhead benchmark runs (docs/BENCHMARKS.md, "ExecuTorch runner vs
vkd run"): mobilenet_v2 at 224, VkdQuantizer-quantized, lowered with VkdPartitioner into one
VkdBackend delegate, written to OUT_DIR as
  mobilenet_v2.pte           ExecuTorch's default memory plan (it copies each input into the
                             program's planned input buffer),
  mobilenet_v2.user_io.pte   inputs and outputs not planned (MemoryPlanningPass with
                             alloc_graph_input / alloc_graph_output False): the caller's buffers
                             go to VkdBackend as they are,
  mobilenet_v2.vkd           the delegate's payload, for `vkd run`,
  x.npy                      the input (float32 1x3x224x224).

usage: PYTHONPATH=python .venv/bin/python examples/executorch/overhead_models.py OUT_DIR
"""
import sys
from pathlib import Path

import numpy as np
import torch
from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
from executorch.exir.passes import MemoryPlanningPass

from vkdelegate import examples_models
from vkdelegate.executorch import VkdPartitioner
from vkdelegate.export import quantize

SHAPE = (1, 3, 224, 224)


def main(out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = examples_models.torchvision_quantizable("mobilenet_v2", input_size=224,
                                                    residual_gamma=0.1).eval()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=gen)
    calibration = [torch.randn(SHAPE, generator=gen) for _ in range(4)]
    converted = quantize(model, (x,), calibration).converted
    ep = torch.export.export(converted, (x,))
    configs = {"mobilenet_v2.pte": ExecutorchBackendConfig(),
               "mobilenet_v2.user_io.pte": ExecutorchBackendConfig(
                   memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False,
                                                           alloc_graph_output=False))}
    for name, config in configs.items():
        edge = to_edge_transform_and_lower(ep, partitioner=[VkdPartitioner()])
        (out / name).write_bytes(edge.to_executorch(config).buffer)
        if name == "mobilenet_v2.pte":
            gm = edge.exported_program().graph_module
            (lowered,) = [m for n, m in gm.named_children() if n.startswith("lowered_module")]
            (out / "mobilenet_v2.vkd").write_bytes(lowered.processed_bytes)
    np.save(out / "x.npy", x.numpy())
    print(f"wrote {', '.join(sorted(p.name for p in out.iterdir()))} to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
