"""nn.MultiheadAttention as the ops of a BERT attention block, which the compiler makes one
q8ta_attention: three nn.Linear (query, key, value), the head split (view [B, T, H, D],
transpose(1, 2)), F.scaled_dot_product_attention, the head merge (transpose(1, 2), reshape
[B, T, C]) and out_proj.

`attention_as_sdpa(model)`, applied after ops_transformer.attention_as_one_op to the copy of the
model that quantize() exports, gives each module whose configuration that form expresses (eval,
kdim = vdim = embed_dim, no add_bias_kv / add_zero_attn) the three linears, copies of the
in_proj_weight / in_proj_bias slices (plain parameters: VkdQuantizer's per-channel weight
observers apply), and a forward computing F.multi_head_attention_forward's math in that form:
- a sequence-first module (batch_first=False) gets transpose(0, 1) before and after (byte
  moves; after it, a batch of one is a view);
- a float attn_mask ([L, S] or [B * H, L, S]) and a float key_padding_mask ([B, S]) are added to
  the scores as they are (both: their sum); is_causal (which PyTorch takes as a hint that
  attn_mask is causal) becomes SDPA's is_causal where PyTorch's own forward uses it so (no
  key_padding_mask, need_weights False), else the mask is used;
- need_weights=True also gives the attention weights: without a mask from one
  vkdelegate::multi_head_attention (ops_transformer; float on the host, as before; removed by
  drop_unread_weights when nothing reads them), with one computed explicitly (softmax of the
  scaled scores with the mask, averaged over the heads unless average_attn_weights=False;
  torch.export drops them when nothing reads them, and the compiler has no batched matmul for
  them yet when something does).
A call the form does not take (a bool mask: the graph IR has no bool dtype; a 2-D query;
is_causal without the attn_mask PyTorch requires with it) goes to the module's previous forward
(the one op, or its clear error).
"""
import math
import types

import torch
import torch.nn.functional as F
from torch import nn


def _copy_linear(weight, bias):
    """An nn.Linear holding copies of `weight` [out, in] and `bias` (None: no bias)."""
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
    with torch.no_grad():
        linear.weight.copy_(weight)
        if bias is not None:
            linear.bias.copy_(bias)
    return linear.to(weight.device)


def _expressible(m):
    """Whether the module's configuration is the BERT form's (its calls may still not be)."""
    return not m.training and m._qkv_same_embed_dim and m.bias_k is None and \
        not m.add_zero_attn and m.in_proj_weight is not None


def _float_or_none(mask):
    return mask is None or (torch.is_tensor(mask) and mask.is_floating_point())


def _additive_mask(attn_mask, key_padding_mask, batch, heads, length, source):
    """The float mask added to the scores [B, H, L, S] (None: none): attn_mask [L, S] as
    [1, 1, L, S], [B * H, L, S] as [B, H, L, S]; key_padding_mask [B, S] as [B, 1, 1, S]."""
    mask = None
    if attn_mask is not None:
        mask = attn_mask.view(1, 1, length, source) if attn_mask.dim() == 2 else \
            attn_mask.view(batch, heads, length, source)
    if key_padding_mask is not None:
        padding = key_padding_mask.view(batch, 1, 1, source)
        mask = padding if mask is None else mask + padding
    return mask


def _sdpa_forward(fallback):
    """The module's forward in the BERT form; `fallback` (the previous forward) takes the
    calls the form does not."""
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        if query.dim() != 3 or not _float_or_none(attn_mask) or \
                not _float_or_none(key_padding_mask) or (is_causal and attn_mask is None):
            return fallback(query, key, value, key_padding_mask, need_weights, attn_mask,
                            average_attn_weights, is_causal)
        originals = (query, key, value)
        if not self.batch_first:  # sequence-first [T, B, C]: the form is batch-first
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        b, length, c = query.shape
        source = key.shape[1]
        heads = self.num_heads
        d = c // heads

        def split(y, t):
            return y.view(b, t, heads, d).transpose(1, 2)

        q = self.vkd_query(query)
        k = self.vkd_key(key)
        v = self.vkd_value(value)
        causal = is_causal and key_padding_mask is None and not need_weights
        mask = None if causal else _additive_mask(attn_mask, key_padding_mask, b, heads,
                                                  length, source)
        # Only the arguments given (an attn_mask of None beside is_causal would reach the
        # graph IR as an argument SDPA's descriptor does not take).
        extra = {"is_causal": True} if causal else {} if mask is None else {"attn_mask": mask}
        a = F.scaled_dot_product_attention(split(q, length), split(k, source), split(v, source),
                                           **extra)
        out = self.out_proj(a.transpose(1, 2).reshape(b, length, c))
        if not self.batch_first:
            # A batch of one: [1, T, C] and [T, 1, C] hold the same bytes, and a float view is
            # free on the GPU where a float transpose is not (out_proj's output is float where
            # a residual stream reads it).
            out = out.view(length, 1, c) if b == 1 else out.transpose(0, 1)
        if not need_weights:
            return out, None
        if mask is None and not causal:
            # The one op's weights, float as before (the compiler has no matmul of its own yet);
            # drop_unread_weights removes the op where nothing reads them.
            return out, torch.ops.vkdelegate.multi_head_attention(
                *originals, self.in_proj_weight, self.in_proj_bias, self.vkd_weights_out_proj,
                self.vkd_weights_out_bias, heads, self.batch_first, True,
                bool(average_attn_weights))[1]
        # The weights on head splits of their own, so the attention's split moves keep one
        # reader each (what the compiler's fusion matches).
        scores = torch.matmul(split(q, length), split(k, source).transpose(-2, -1))
        scores = scores * (1.0 / math.sqrt(d))
        if mask is not None:
            scores = scores + mask
        weights = torch.softmax(scores, dim=-1)
        return out, weights.mean(dim=1) if average_attn_weights else weights
    return forward


def attention_as_sdpa(model):
    """`model` with each nn.MultiheadAttention whose configuration the BERT form expresses
    computing that form (module docstring); the others keep their forward. Changes `model`
    itself: give it a copy."""
    for module in model.modules():
        if isinstance(module, nn.MultiheadAttention) and _expressible(module):
            w, bias = module.in_proj_weight.detach(), module.in_proj_bias
            c = module.embed_dim
            for k, name in enumerate(("vkd_query", "vkd_key", "vkd_value")):
                piece = None if bias is None else bias.detach()[k * c:(k + 1) * c]
                setattr(module, name, _copy_linear(w[k * c:(k + 1) * c], piece))
            # The one op computing the weights reads out_proj too (for an output nothing
            # reads): copies, as out_proj's own weight becomes int8.
            out_proj = module.out_proj
            module.register_buffer("vkd_weights_out_proj", out_proj.weight.detach().clone())
            module.register_buffer("vkd_weights_out_bias", None if out_proj.bias is None else
                                   out_proj.bias.detach().clone())
            module.forward = types.MethodType(_sdpa_forward(module.forward), module)
    return model


def drop_unread_weights(gm):
    """`gm` (torch.export's GraphModule) without the vkdelegate::multi_head_attention nodes
    whose results nothing reads: a module in the BERT form called with need_weights=True
    computes its weights with the one op, which torch.export keeps even unread."""
    op = torch.ops.vkdelegate.multi_head_attention.default
    for node in [n for n in gm.graph.nodes if n.op == "call_function" and n.target is op]:
        if all(not user.users for user in node.users):
            for user in list(node.users):
                gm.graph.erase_node(user)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm
