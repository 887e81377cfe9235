"""The PyTorch exporter: a float nn.Module to vkdelegate's graph IR + safetensors weights.

Steps (each a function, the CLI `python3 -m vkdelegate.export` runs them all):
  quantize(model, example_inputs, calibration, per_channel=True) -> Quantized
      torch.export + PT2E static int8 quantization with VkdQuantizer (quantization.py);
      .converted is PyTorch's reference-quantized GraphModule
  to_graph_ir(converted, example_inputs, name) -> (graph dict, {data name: numpy array})
      a converted PT2E graph (any quantizer's) walked into the graph IR (walk.py, ops.py)
  export(model, example_inputs, out_dir, name, calibration, ...) -> {kind: path}
      both, plus the files: NAME.json, NAME.safetensors, NAME.calibration.json, NAME.input.npy
      and, given a vkd binary, NAME.vkd and NAME.report.txt (pipeline.py)
"""
from .errors import ExportError
from .pipeline import export, to_graph_ir
from .quantization import quantize

__all__ = ["ExportError", "export", "quantize", "to_graph_ir"]
