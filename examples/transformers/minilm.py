"""all-MiniLM-L6-v2 sentence embeddings on the GPU, with the model's real weights: export
(PT2E, VkdQuantizer), `vkd compile --partition`, run through vkdelegate.runtime, and compare with
the float model, sentence by sentence and by the similarity ranking of sentence pairs.

    PYTHONPATH=python .venv/bin/python examples/transformers/minilm.py --vkd build/vkd -o out \
        [--quantization static|dynamic] [--length 32]

prints what ran where (GPU partitions, host steps), each sentence's cosine with the float
model's embedding, the ranking of the pairs by similarity in both, and the mean host wall of
an inference (--bench N). The test (test/python/test_minilm.py) asserts on the same figures.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sentence_encoder import SentenceEncoder, load_minilm, tokenize  # noqa: E402

# Sentence pairs from near paraphrases to unrelated (the float model's similarities 0.99, 0.83,
# 0.69, 0.60, 0.30, 0.09, -0.09: apart by more than int8 moves them), as an STS set grades.
PAIRS = [
    ("A man is playing a guitar.", "A man is playing the guitar."),
    ("The cat sleeps on the warm windowsill.", "A cat is sleeping on the window sill."),
    ("How do I bake fresh bread at home?", "What is a good recipe for homemade bread?"),
    ("A man is playing a guitar.", "Someone is strumming an acoustic guitar on stage."),
    ("A man is playing a guitar.", "A woman is playing the violin."),
    ("The cat sleeps on the warm windowsill.", "A dog runs through the park."),
    ("A man is playing a guitar.", "Stock markets fell sharply after the announcement."),
]
SENTENCES = list(dict.fromkeys(s for pair in PAIRS for s in pair))
# Sentences the activation ranges are observed on (the test sentences are not among them).
CALIBRATION = [
    "The weather is lovely today.",
    "He drove the car to the city centre before sunrise.",
    "Neural networks learn representations from data.",
    "Please send me the report by Friday afternoon.",
    "The orchestra played a symphony by Beethoven.",
    "Children were laughing in the playground.",
    "A quick brown fox jumps over the lazy dog.",
    "Interest rates are expected to rise next year.",
    "She planted tomatoes and basil in her garden.",
    "The train to Berlin was delayed by an hour.",
]


def float_embeddings(tokenizer, bert, length):
    """The float model's embeddings of SENTENCES, [n, 384]: BertModel as HF runs it with its own
    0/1 mask handling, then sentence-transformers' pooling, written out here (independent of
    SentenceEncoder)."""
    rows = []
    with torch.no_grad():
        for s in SENTENCES:
            enc = tokenizer([s], padding="max_length", truncation=True, max_length=length,
                            return_tensors="pt")
            hidden = bert(**enc).last_hidden_state
            keep = enc["attention_mask"].unsqueeze(-1).float()
            mean = (hidden * keep).sum(1) / keep.sum(1)
            rows.append(torch.nn.functional.normalize(mean, dim=1)[0].numpy())
    return np.stack(rows)


def export(tokenizer, bert, length, folder, name="minilm"):
    """Static int8 (VkdQuantizer) graph IR of SentenceEncoder at `length` tokens, calibrated on
    CALIBRATION: the paths of the graph and its weights."""
    from vkdelegate.export import quantize, safetensors, to_graph_ir
    from vkdelegate.export.ir import to_json_text

    encoder = SentenceEncoder(bert).eval()
    example = tokenize(tokenizer, SENTENCES[0], length)
    calibration = [tokenize(tokenizer, s, length) for s in CALIBRATION]
    converted = quantize(encoder, example, calibration).converted
    graph, tensors = to_graph_ir(converted, example, name=name)
    graph_path = os.path.join(folder, name + ".json")
    weights_path = os.path.join(folder, name + ".safetensors")
    with open(graph_path, "w") as f:
        f.write(to_json_text(graph))
    safetensors.save(weights_path, tensors)
    return graph_path, weights_path, converted


def export_dynamic(tokenizer, bert, length, folder, name="minilm_dynamic"):
    """Dynamic int8 (torchao's Int8DynamicActivationInt8WeightConfig: every linear's input
    quantized per token at run time, int8 per-channel weights; everything else float) graph IR
    of SentenceEncoder at `length` tokens: the paths of the graph and its weights."""
    import copy

    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    from vkdelegate.export import export as export_model

    encoder = copy.deepcopy(SentenceEncoder(bert)).eval()
    quantize_(encoder, Int8DynamicActivationInt8WeightConfig())
    example = tokenize(tokenizer, SENTENCES[0], length)
    paths = export_model(encoder, example, folder, name, None)
    return paths["graph"], paths["weights"]


def compile_plan(vkd, graph_path, weights_path):
    """`vkd compile --partition --report`: (the plan's path, the report's text)."""
    blob = graph_path[:-len(".json")] + ".vkd"
    done = subprocess.run([vkd, "compile", graph_path, "--weights", weights_path, "--partition",
                           "--report", "--force", "-o", blob], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"vkd compile failed:\n{done.stdout}{done.stderr}")
    return blob[:-len(".vkd")] + ".partition.json", done.stdout


def run_embeddings(program, tokenizer, length):
    """The plan's embeddings of SENTENCES, [n, 384]."""
    rows = []
    for s in SENTENCES:
        ids, mask = tokenize(tokenizer, s, length)
        (out,) = program.run(ids.numpy(), mask.numpy())
        rows.append(out[0])
    return np.stack(rows)


def cosines(a, b):
    """Row-wise cosine similarity of two [n, d] arrays."""
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def pair_similarities(embeddings):
    """The cosine similarity of each of PAIRS from the embeddings of SENTENCES."""
    row = {s: k for k, s in enumerate(SENTENCES)}
    return [float(cosines(embeddings[[row[a]]], embeddings[[row[b]]])[0]) for a, b in PAIRS]


def ranking(similarities):
    """The indices of PAIRS from the most similar to the least."""
    return [int(k) for k in np.argsort(similarities)[::-1]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vkd", required=True, help="the vkd binary")
    parser.add_argument("-o", "--out", required=True, help="folder for the graph, blobs, plan")
    parser.add_argument("--length", type=int, default=32, help="tokens per sentence (padded)")
    parser.add_argument("--bench", type=int, default=20, help="timed runs per sentence")
    parser.add_argument("--quantization", choices=["static", "dynamic"], default="static",
                        help="static int8 (VkdQuantizer, calibrated) or dynamic int8 (torchao's "
                             "Int8DynamicActivationInt8WeightConfig)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from vkdelegate.runtime import load

    tokenizer, bert = load_minilm()
    if args.quantization == "static":
        graph_path, weights_path, _ = export(tokenizer, bert, args.length, args.out)
    else:
        graph_path, weights_path = export_dynamic(tokenizer, bert, args.length, args.out)
    plan, _ = compile_plan(args.vkd, graph_path, weights_path)
    with open(plan) as f:
        steps = json.load(f)["steps"]
    host = [step["host"] for step in steps if "host" in step]
    print(f"{args.quantization} int8: {len(steps) - len(host)} GPU partition(s), "
          f"{len(host)} host step(s) {host}")
    with load(plan, weights=weights_path) as program:
        got = run_embeddings(program, tokenizer, args.length)
        ids, mask = tokenize(tokenizer, SENTENCES[0], args.length)
        program.run(ids.numpy(), mask.numpy())
        start = time.perf_counter()
        for _ in range(args.bench):
            program.run(ids.numpy(), mask.numpy())
        wall = (time.perf_counter() - start) / max(args.bench, 1)
        device = program.device
    want = float_embeddings(tokenizer, bert, args.length)
    for s, c in zip(SENTENCES, cosines(got, want)):
        print(f"cosine {c:.4f}  {s}")
    sims_got, sims_want = pair_similarities(got), pair_similarities(want)
    print("pair similarity: float model | vkdelegate int8")
    for (a, b), w, g in zip(PAIRS, sims_want, sims_got):
        print(f"  {w:6.3f} | {g:6.3f}  {a} / {b}")
    print(f"ranking equal: {ranking(sims_got) == ranking(sims_want)}")
    print(f"host wall per inference: {wall * 1e6:.0f} us on {device} (length {args.length})")


if __name__ == "__main__":
    main()
