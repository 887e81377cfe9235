"""Speed of an all-MiniLM-L6-v2-shaped encoder (BERT, 6 layers, hidden 384, 12 heads,
intermediate 1536) with random weights, the shape the issue's PyTorch anchors use: the same
SentenceEncoder as examples/transformers/minilm.py, a vocabulary of 1000 rows so the files
stay small (the gather's time does not depend on it).

    bench_minilm.py export --length 128 -o DIR     graph IR + weights + inputs for `vkd compile`
                                                   (--dynamic: torchao dynamic int8)
    bench_minilm.py torch --length 128 512          PyTorch on CUDA: fp16 eager and fp16 with a
                                                   captured CUDA graph (the same-GPU anchors)

`export` needs the project's environment; `torch` only torch and transformers (it runs on the
GPU machine). Both print one JSON line per result.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sentence_encoder import SentenceEncoder  # noqa: E402

VOCAB = 1000


def random_minilm(seed=0):
    """BertModel with all-MiniLM-L6-v2's configuration, random weights, eval mode."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=VOCAB, hidden_size=384, num_hidden_layers=6,
                        num_attention_heads=12, intermediate_size=1536,
                        max_position_embeddings=512, attn_implementation="sdpa")
    return BertModel(config, add_pooling_layer=False).eval()


def inputs(length, seed=1):
    """(int64 ids [1, length], float32 mask of ones [1, length])."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (1, length), generator=g), torch.ones(1, length)


def export(length, out, dynamic=False):
    from vkdelegate.export import export as export_model
    from vkdelegate.export import quantize, safetensors, to_graph_ir
    from vkdelegate.export.ir import to_json_text

    encoder = SentenceEncoder(random_minilm())
    example = inputs(length)
    name = f"minilm{length}" + ("_dynamic" if dynamic else "")
    base = os.path.join(out, name)
    os.makedirs(out, exist_ok=True)
    if dynamic:  # torchao's per-token dynamic int8 linears, everything else float
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

        quantize_(encoder, Int8DynamicActivationInt8WeightConfig())
        export_model(encoder, example, out, name, None)
    else:
        calibration = [inputs(length, seed) for seed in range(2, 6)]
        converted = quantize(encoder, example, calibration).converted
        graph, tensors = to_graph_ir(converted, example, name=name)
        with open(base + ".json", "w") as f:
            f.write(to_json_text(graph))
        safetensors.save(base + ".safetensors", tensors)
    np.save(base + ".ids.npy", example[0].numpy())
    np.save(base + ".mask.npy", example[1].numpy())
    print(json.dumps({"exported": base, "length": length}))


def time_cuda(fn, runs=200):
    """Median host wall of fn() over `runs`, synchronized each time (seconds)."""
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - start)
    return float(np.median(walls))


def torch_anchor(length):
    model = SentenceEncoder(random_minilm()).cuda().half()
    ids, mask = (t.cuda() for t in inputs(length))
    mask = mask.half()
    with torch.no_grad():
        for _ in range(10):
            model(ids, mask)
        torch.cuda.synchronize()
        eager = time_cuda(lambda: model(ids, mask))
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(ids, mask)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(ids, mask)
        graph.replay()
        torch.cuda.synchronize()
        captured = time_cuda(graph.replay)
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                      "length": length, "fp16_eager_us": eager * 1e6,
                      "fp16_cuda_graph_us": captured * 1e6}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["export", "torch"])
    parser.add_argument("--length", type=int, nargs="+", default=[128])
    parser.add_argument("-o", "--out", default="out/bench_minilm")
    parser.add_argument("--dynamic", action="store_true",
                        help="export: torchao dynamic int8 instead of VkdQuantizer static int8")
    args = parser.parse_args()
    for length in args.length:
        if args.what == "export":
            export(length, args.out, args.dynamic)
        else:
            torch_anchor(length)


if __name__ == "__main__":
    main()
