"""Handlers of a transformer block's float ops (ops.py registers the rest): nn.LayerNorm /
F.layer_norm as aten.layer_norm, nn.MultiheadAttention as one aten._native_multi_head_attention
node (the op its eval-mode fast path calls) with its projections as float32 constants.

FX's qnnpack config quantizes neither: a LayerNorm sits between a dequantize and a quantize, an
attention module reads float tensors and its result is quantized where a quantized op reads it.
`vkd compile --partition` leaves both to the host (the compiler's CPU references) until the GPU
runs them.
"""
import operator

import torch
import torch.nn.functional as F
from torch import nn

from .ops import arg, handles, handles_module, handles_module_call
from .walk import Out, Pieces

MHA_OP = "aten._native_multi_head_attention"


def emit_layer_norm(w, x, normalized_shape, weight, bias, eps, out):
    """aten.layer_norm(input, weight, bias; normalized_shape, eps); weight / bias: IR names or
    "" when absent."""
    args = {"normalized_shape": list(normalized_shape), "eps": float(eps)}
    return w.emit("aten.layer_norm", [x, weight, bias], args, out)


@handles_module(nn.LayerNorm)
def _layer_norm_module(w, m, path, x, out):
    """nn.LayerNorm: its weight and bias (elementwise_affine) as float32 constants."""
    weight = w.constant(m.weight, f"{path}.weight") if m.weight is not None else ""
    bias = w.constant(m.bias, f"{path}.bias") if m.bias is not None else ""
    return emit_layer_norm(w, x, m.normalized_shape, weight, bias, m.eps, out)


@handles(F.layer_norm, "aten.layer_norm.default")
def _layer_norm(w, node):
    """F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)."""
    tensors = [arg(node, i, name, None) for i, name in ((2, "weight"), (3, "bias"))]
    weight, bias = ("" if t is None else w.input(t) for t in tensors)
    return emit_layer_norm(w, w.input(node.args[0]), w.literal(arg(node, 1, "normalized_shape")),
                           weight, bias, w.literal(arg(node, 4, "eps", 1e-5)), w.out())


_MHA_ARGS = [("query", None), ("key", None), ("value", None), ("key_padding_mask", None),
             ("need_weights", True), ("attn_mask", None), ("average_attn_weights", True)]


def _mha_refusal(m, call):
    """Why the attention module or call cannot be one aten._native_multi_head_attention node
    (None when it can)."""
    if m.training:
        return "MultiheadAttention in training mode (call model.eval() first)"
    if call["key_padding_mask"] is not None or call["attn_mask"] is not None:
        return "MultiheadAttention with a key_padding_mask or attn_mask (not exported yet)"
    if not m._qkv_same_embed_dim:
        return "MultiheadAttention with kdim / vdim other than embed_dim (not exported yet)"
    if m.bias_k is not None or m.add_zero_attn:
        return "MultiheadAttention with add_bias_kv or add_zero_attn (not exported yet)"
    return None


def _picked(w, node):
    """{tuple index: getitem node} of the attention's result; any other use is refused."""
    picked = {}
    for user in node.users:
        if user.target is not operator.getitem or not isinstance(user.args[1], int):
            raise w.fail("its (output, weights) result is used other than by indexing it")
        picked[user.args[1] % 2] = user
    return picked


@handles_module_call(nn.MultiheadAttention)
def _multihead_attention(w, node, m):
    """module(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True) -> (output, weights): one node with the in / out projections
    as constants (in_proj_weight [3E, E] and its bias, out_proj's; a bias the module lacks is
    zeros). Its second output exists only where the model reads the weights. Sequence-first
    modules (batch_first=False) get a transpose to batch-first around it."""
    call = {name: arg(node, i, name, default) for i, (name, default) in enumerate(_MHA_ARGS)}
    for flag in ("need_weights", "average_attn_weights"):
        call[flag] = w.literal(call[flag])
    refusal = _mha_refusal(m, call)
    if refusal:
        raise w.fail(refusal)
    picked = _picked(w, node)
    metas = node.meta.get("tensor_meta")
    if len(metas[0].shape) != 3:
        raise w.fail(f"MultiheadAttention on a {len(metas[0].shape)}-D query (only batched, "
                     "3-D inputs export)")
    need_weights = bool(call["need_weights"]) and 1 in picked
    path, embed = node.target, m.embed_dim

    def constant(tensor, name, size):
        return w.constant(torch.zeros(size) if tensor is None else tensor, f"{path}.{name}")

    # One IR input per distinct FX value (self-attention reads one tensor three times).
    names = {}
    for key in ("query", "key", "value"):
        source = call[key]
        if source not in names:
            names[source] = w.input(source)
            if not m.batch_first:
                dtype, shape = w.value_type(names[source])
                moved = w.temp(f"{names[source]}_batch_first", dtype,
                               [shape[1], shape[0]] + list(shape[2:]))
                names[source] = _transpose01(w, names[source], moved)
    inputs = [names[call[k]] for k in ("query", "key", "value")] + [
        constant(m.in_proj_weight, "in_proj_weight", None),
        constant(m.in_proj_bias, "in_proj_bias", 3 * embed),
        constant(m.out_proj.weight, "out_proj.weight", None),
        constant(m.out_proj.bias, "out_proj.bias", embed)]
    args = {"embed_dim": embed, "num_head": m.num_heads, "need_weights": need_weights,
            "average_attn_weights": bool(call["average_attn_weights"])}

    out_shape = list(metas[0].shape)
    final = _out(w, node, picked, 0, out_shape)
    result = final if m.batch_first else w.temp(f"{final.name}_batch_first", "float32",
                                                [out_shape[1], out_shape[0], out_shape[2]])
    outs = [result] + ([_out(w, node, picked, 1, list(metas[1].shape))] if need_weights else [])
    made = w.emit_pieces(MHA_OP, inputs, args, outs).names
    if not m.batch_first:
        _transpose01(w, made[0], final)
    return Pieces([final.name, made[1] if need_weights else None])


def _out(w, node, picked, index, shape):
    """The Out of result `index`, named after the getitem that picks it."""
    base = picked[index].name if index in picked else f"{node.name}_{index}"
    return Out(w.ir.claim(base) if index in picked else w.ir.fresh(base), "float32", shape)


def _transpose01(w, x, out):
    """aten.transpose_copy.int(x, 0, 1) into `out`; returns its name."""
    return w.emit("aten.transpose_copy.int", [x], {"dim0": 0, "dim1": 1}, out).name
