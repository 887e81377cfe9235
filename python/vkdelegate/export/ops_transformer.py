"""A transformer block's float ops (ops.py registers the rest): aten.layer_norm (and ExecuTorch's
edge form aten.native_layer_norm), and each
nn.MultiheadAttention as one aten._native_multi_head_attention node (the op of its eval-mode
fast path, which the compiler's CPU reference runs) with its projections as float32 constants.

torch.export would decompose an attention module into a dozen ops (projections, views, bmm,
softmax, a mean over the heads). `attention_as_one_op(model)`, applied to the copy of the model
that quantize() exports, makes each module call `vkdelegate::multi_head_attention` instead: a
custom op computing exactly what the module computes (F.multi_head_attention_forward with the
module's parameters), which VkdQuantizer leaves float and the walk below writes as one node.
`vkd compile --partition` leaves it and the layer norms to the host.
"""
import types
import torch
import torch.nn.functional as F
from torch import nn

from .errors import ExportError
from .ops import arg, generic, handles
from .walk import Out, Param, Pieces

MHA_OP = "aten._native_multi_head_attention"


@handles("aten.layer_norm.default")
def _layer_norm(w, node):
    """layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5): weight / bias as
    float32 constants where given."""
    tensors = [arg(node, i, name, None) for i, name in ((2, "weight"), (3, "bias"))]
    weight, bias = ("" if t is None else w.input(t) for t in tensors)
    args = {"normalized_shape": list(w.literal(arg(node, 1, "normalized_shape"))),
            "eps": float(w.literal(arg(node, 4, "eps", 1e-5)))}
    return w.emit("aten.layer_norm", [w.input(node.args[0]), weight, bias], args, w.out())


@handles("aten.native_layer_norm.default")
def _native_layer_norm(w, node):
    """native_layer_norm(input, normalized_shape, weight, bias, eps) -> (output, mean, rstd), the
    op ExecuTorch's edge dialect has for a LayerNorm: aten.layer_norm named after the getitem of
    its output where nothing reads the mean or rstd (the graph IR has no op writing them), else
    the node as it is (which the compiler leaves to the host)."""
    picked = {u.args[1]: u for u in node.users}
    if set(picked) - {0}:
        return generic(w, node)
    tensors = [arg(node, i, name, None) for i, name in ((2, "weight"), (3, "bias"))]
    weight, bias = ("" if t is None else w.input(t) for t in tensors)
    args = {"normalized_shape": list(w.literal(arg(node, 1, "normalized_shape"))),
            "eps": float(w.literal(arg(node, 4, "eps")))}
    out = _out(w, node, picked, 0, list(node.meta["val"][0].shape))
    made = w.emit("aten.layer_norm", [w.input(node.args[0]), weight, bias], args, out)
    return Pieces([made.name, None, None])


# ---- nn.MultiheadAttention as one op ----------------------------------------------------------

def _multi_head_attention(query, key, value, in_proj_weight, in_proj_bias, out_proj_weight,
                          out_proj_bias, num_heads, batch_first, need_weights,
                          average_attn_weights):
    """nn.MultiheadAttention's eval-mode forward on 3-D inputs without masks: (output, the
    attention weights, or an empty tensor when need_weights is False)."""
    q, k, v = (t.transpose(0, 1) if batch_first else t for t in (query, key, value))
    out, weights = F.multi_head_attention_forward(
        q, k, v, in_proj_weight.shape[1], num_heads, in_proj_weight, in_proj_bias, None, None,
        False, 0.0, out_proj_weight, out_proj_bias, training=False, need_weights=need_weights,
        average_attn_weights=average_attn_weights)
    out = out.transpose(0, 1).contiguous() if batch_first else out
    return out, weights if weights is not None else query.new_empty(0)


# A CompositeImplicitAutograd op: torch.export keeps it as one node (what the walk reads), while
# a decomposition pass (ExecuTorch's to_edge, run_decompositions) turns it back into the ATen ops
# of its body, which CPU runtimes that know nothing of it (ExecuTorch's kernels) run.
_LIBRARY = torch.library.Library("vkdelegate", "FRAGMENT")
_LIBRARY.define(
    "multi_head_attention(Tensor query, Tensor key, Tensor value, Tensor in_proj_weight, "
    "Tensor? in_proj_bias, Tensor out_proj_weight, Tensor? out_proj_bias, int num_heads, "
    "bool batch_first, bool need_weights, bool average_attn_weights) -> (Tensor, Tensor)")
_LIBRARY.impl("multi_head_attention", _multi_head_attention, "CompositeImplicitAutograd")


def _refusal(m, query, key_padding_mask, attn_mask, is_causal):
    """Why the attention module or call cannot be one aten._native_multi_head_attention node
    (None when it can)."""
    if m.training:
        return "MultiheadAttention in training mode (call model.eval() first)"
    if key_padding_mask is not None or attn_mask is not None or is_causal:
        return "MultiheadAttention with a key_padding_mask or attn_mask (not exported yet)"
    if not m._qkv_same_embed_dim:
        return "MultiheadAttention with kdim / vdim other than embed_dim (not exported yet)"
    if m.bias_k is not None or m.add_zero_attn:
        return "MultiheadAttention with add_bias_kv or add_zero_attn (not exported yet)"
    if query.dim() != 3:
        return f"MultiheadAttention on a {query.dim()}-D query (only batched, 3-D inputs export)"
    return None


def _one_op_forward(path):
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        refusal = _refusal(self, query, key_padding_mask, attn_mask, is_causal)
        if refusal:
            raise ExportError(f"module '{path}': {refusal}")
        out, weights = torch.ops.vkdelegate.multi_head_attention(
            query, key, value, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
            self.out_proj.bias, self.num_heads, self.batch_first, bool(need_weights),
            bool(average_attn_weights))
        return out, weights if need_weights else None
    return forward


def attention_as_one_op(model):
    """`model` with each nn.MultiheadAttention calling vkdelegate::multi_head_attention (an
    attention it cannot express raises ExportError naming the module when called). Changes
    `model` itself: give it a copy."""
    for path, module in model.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            module.forward = types.MethodType(_one_op_forward(path or "(the model)"), module)
    return model


@handles("vkdelegate.multi_head_attention.default")
def _multihead_attention(w, node):
    """One aten._native_multi_head_attention(query, key, value, in_proj_weight, in_proj_bias,
    out_proj_weight, out_proj_bias; embed_dim, num_head, need_weights, average_attn_weights),
    batch-first: sequence-first inputs get a transpose to batch-first (one per distinct
    tensor: self-attention reads one three times), the result one back. A bias the module
    lacks is zeros. The weights output exists only where the model reads it."""
    query, key, value, in_w, in_b, out_w, out_b = node.args[:7]
    heads, batch_first, need_weights, average = (w.literal(a) for a in node.args[7:11])
    picked = {u.args[1]: u for u in node.users}
    metas = node.meta["tensor_meta"]
    need_weights = need_weights and 1 in picked
    weight = w.ref(in_w)
    prefix = weight.data_name.rsplit(".", 1)[0] if isinstance(weight, Param) else node.name
    embed = w.value_type(w.input(in_w))[1][1]

    def constant(source, name, size):
        if source is not None:
            return w.input(source)
        return w.constant(torch.zeros(size), f"{prefix}.{name}")

    names = {}
    for source in (query, key, value):
        if source not in names:
            names[source] = w.input(source)
            if not batch_first:
                dtype, shape = w.value_type(names[source])
                moved = w.temp(f"{names[source]}_batch_first", dtype,
                               [shape[1], shape[0]] + list(shape[2:]))
                names[source] = _transpose01(w, names[source], moved)
    inputs = [names[s] for s in (query, key, value)] + [
        w.input(in_w), constant(in_b, "in_proj_bias", 3 * embed), w.input(out_w),
        constant(out_b, "out_proj.bias", embed)]
    args = {"embed_dim": embed, "num_head": heads, "need_weights": bool(need_weights),
            "average_attn_weights": bool(average)}

    out_shape = list(metas[0].shape)
    final = _out(w, node, picked, 0, out_shape)
    result = final if batch_first else w.temp(f"{final.name}_batch_first", "float32",
                                              [out_shape[1], out_shape[0], out_shape[2]])
    outs = [result] + ([_out(w, node, picked, 1, list(metas[1].shape))] if need_weights else [])
    made = w.emit_pieces(MHA_OP, inputs, args, outs).names
    if not batch_first:
        _transpose01(w, made[0], final)
    return Pieces([final.name, made[1] if need_weights else None])


def _out(w, node, picked, index, shape):
    """The Out of result `index`, named after the getitem that picks it."""
    base = picked[index].name if index in picked else f"{node.name}_{index}"
    return Out(w.ir.claim(base) if index in picked else w.ir.fresh(base), "float32", shape)


def _transpose01(w, x, out):
    """aten.transpose_copy.int(x, 0, 1) into `out`; returns its name."""
    return w.emit("aten.transpose_copy.int", [x], {"dim0": 0, "dim1": 1}, out).name
