"""Speed of a ViT-Ti/16-shaped torchvision VisionTransformer (224x224, patch 16: 197 tokens,
12 layers, 3 heads of 64, hidden 192, MLP 768) with random weights.

    bench_vit.py export -o DIR     graph IR + weights + input for `vkd compile` (static int8,
                                   VkdQuantizer; the project's environment)
    bench_vit.py torch             PyTorch on CUDA: fp16 eager and fp16 with a captured CUDA
                                   graph (the same-GPU anchors; torch and torchvision or timm)

Both print one JSON line.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_minilm import time_cuda  # noqa: E402  (median host wall, synchronized)

SHAPE = (1, 3, 224, 224)


def vit_tiny(seed=0):
    """ViT-Ti/16 with seeded random weights (the head as well), eval mode."""
    torch.manual_seed(seed)
    try:
        from torchvision.models.vision_transformer import VisionTransformer

        model = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3,
                                  hidden_dim=192, mlp_dim=768, num_classes=1000)
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    except ImportError:  # the GPU machine may have timm but not torchvision
        import timm

        model = timm.create_model("vit_tiny_patch16_224", pretrained=False)
    return model.eval()


def export(out):
    from vkdelegate.export import quantize, safetensors, to_graph_ir
    from vkdelegate.export.ir import to_json_text

    g = torch.Generator().manual_seed(1)
    example = (torch.randn(SHAPE, generator=g),)
    calibration = [(torch.randn(SHAPE, generator=g),) for _ in range(4)]
    converted = quantize(vit_tiny(), example, calibration).converted
    graph, tensors = to_graph_ir(converted, example, name="vit_tiny")
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "vit_tiny")
    with open(base + ".json", "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(base + ".safetensors", tensors)
    np.save(base + ".x.npy", example[0].numpy())
    print(json.dumps({"exported": base}))


def torch_anchor():
    model = vit_tiny().cuda().half()
    x = torch.randn(SHAPE, device="cuda", dtype=torch.half)
    with torch.no_grad():
        for _ in range(10):
            model(x)
        torch.cuda.synchronize()
        eager = time_cuda(lambda: model(x))
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(x)
        graph.replay()
        torch.cuda.synchronize()
        captured = time_cuda(graph.replay)
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                      "model": "vit_tiny_patch16_224", "fp16_eager_us": eager * 1e6,
                      "fp16_cuda_graph_us": captured * 1e6}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["export", "torch"])
    parser.add_argument("-o", "--out", default="out/bench_vit")
    args = parser.parse_args()
    export(args.out) if args.what == "export" else torch_anchor()


if __name__ == "__main__":
    main()
