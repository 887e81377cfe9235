"""torchao's int8 linears in the graph IR's form.

A model quantized by torchao's quantize_() holds its linear weights as Int8Tensor subclasses;
torch.export unwraps them into the arithmetic torchao runs (torchao 0.18, int8_tensor.py):
  Int8DynamicActivationInt8WeightConfig: (s, zp) = choose_qparams_affine(x, per row);
      q = quantize_affine(x, s, zp); acc = _int_mm(q + 128 as uint8, W_q^T) - 128 * colsum(W_q^T)
      (the int32 dot products, exact); y = float(acc) * s[row] * s_w[n] (+ bias)
  Int8WeightOnlyConfig: y = mm(x, float(W_q)^T) * s_w[n] (+ bias)
rewrite() replaces each such chain by what it means, in ops the graph IR names:
  dynamic:     linear(dequantize_affine(q, s, zp), dequantize_affine(W_q, [1, K], s_w), bias)
  weight-only: linear(x, dequantize_affine(W_q, [1, K], s_w), bias)
which `vkd compile` fuses into one q8da_linear / q8csw_linear (compiler/ops/ConvLinear.cpp),
computing torchao's own arithmetic (runtime/ops/Linear.h). A chain that does not have this
exact form is left as it is (its ATen ops then go to the host or are refused by name).
"""
import torch

aten = torch.ops.aten
_ASSERT = aten._assert_tensor_metadata.default
_CASTS = (aten.to.dtype, aten._to_copy.default)
_VIEWS = (aten.reshape.default, aten.view.default, aten.flatten.using_ints)


def rewrite(gm):
    """`gm` (a GraphModule from torch.export) with every torchao int8 linear rewritten (see
    the module's docstring); returns how many were rewritten."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.graph is None:
            continue
        if node.target is aten._int_mm.default:
            count += _rewrite_dynamic(gm.graph, node)
        elif node.target is aten.mm.default:
            count += _rewrite_weight_only(gm.graph, node)
    if count:
        _drop_unread(gm.graph)
        gm.recompile()
    return count


def _users(node):
    """The nodes reading `node`, its metadata asserts left out."""
    return [u for u in node.users if u.target is not _ASSERT]


def _through(node, targets):
    """The first node behind `node` whose op is not one of `targets` (following argument 0)."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and \
            node.target in targets:
        node = node.args[0]
    return node


def _weight(t_node):
    """W_q [N, K] int8 under torchao's `W_q.t()` (and a float cast for weight-only), or None."""
    t_node = _through(t_node, _CASTS)
    if not isinstance(t_node, torch.fx.Node) or t_node.target is not aten.t.default:
        return None
    w = t_node.args[0]
    val = w.meta.get("val") if isinstance(w, torch.fx.Node) else None
    return w if val is not None and val.dtype == torch.int8 and val.dim() == 2 else None


def _tail(start, act_scale=None, zero_point=False):
    """torchao's epilogue after the matrix product `start`: through casts, views, `- 128 *
    colsum(W_q)` (right after _int_mm: its uint8 trick), `* act_scale` (dynamic), with
    `zero_point` then `- zp * s_x * rowsum(W_q)` (an asymmetric activation's correction, which
    the dequantize_affine of the rewrite includes), `* s_w` and `+ bias`, each node the only
    reader of the one before. Returns (last node, s_w node, bias or None) or None."""
    node, w_scale, bias = start, None, None
    while True:
        users = _users(node)
        if len(users) != 1:
            break
        user = users[0]
        if user.target in (aten.sub.Tensor, aten.sub_.Tensor):
            after_scale = act_scale is None and start.target is aten._int_mm.default
            if user.args[0] is not node or not (node is start or zero_point and after_scale and
                                                w_scale is None):
                break
        elif user.target in _CASTS:  # to float32 (torchao's int32 -> float, output_dtype)
            val = user.meta.get("val")
            if user.args[0] is not node or val is None or val.dtype != torch.float32:
                break
        elif user.target in _VIEWS:  # [M, N] back to the input's leading dims, before the bias
            if user.args[0] is not node or w_scale is None or bias is not None:
                break
        elif user.target is aten.mul.Tensor and w_scale is None:
            other = user.args[1] if user.args[0] is node else user.args[0]
            source = _through(other, _CASTS + _VIEWS)
            if act_scale is not None and source is act_scale:
                act_scale = None  # the activation's scale: comes first
            elif act_scale is None:
                w_scale = source
            else:
                break
        elif user.target in (aten.add.Tensor, aten.add_.Tensor) and w_scale is not None and \
                bias is None:
            bias = user.args[1] if user.args[0] is node else user.args[0]
        else:
            break
        node = user
    if w_scale is None or not isinstance(w_scale, torch.fx.Node):
        return None
    return node, w_scale, bias


def _rewrite_dynamic(graph, mm):
    w = _weight(mm.args[1])
    q = _through(mm.args[0], _CASTS + _VIEWS + (aten.add.Tensor,))
    if w is None or not isinstance(q, torch.fx.Node) or \
            q.target is not torch.ops.torchao.quantize_affine.default:
        return 0
    x, block, scale, zero_point = q.args[:4]
    tail = _tail(mm, act_scale=_through(scale, _CASTS + _VIEWS),
                 zero_point=zero_point is not None)
    if tail is None:
        return 0
    last, w_scale, bias = tail
    quant_min, quant_max = _q_range(q)
    k = w.meta["val"].shape[1]
    with graph.inserting_after(last):
        x_dq = graph.call_function(torch.ops.torchao.dequantize_affine.default,
                                   (q, list(block), scale, zero_point, torch.int8, quant_min,
                                    quant_max))
    return _replace(graph, last, x_dq, w, k, w_scale, bias, after=x_dq, source=x)


def _rewrite_weight_only(graph, mm):
    w = _weight(mm.args[1])
    if w is None:
        return 0
    x = _through(mm.args[0], _VIEWS)
    tail = _tail(mm)
    if tail is None:
        return 0
    last, w_scale, bias = tail
    return _replace(graph, last, x, w, w.meta["val"].shape[1], w_scale, bias)


def _q_range(q):
    """quantize_affine's (quant_min, quant_max), by position or keyword."""
    args = list(q.args) + [None] * 7
    return q.kwargs.get("quant_min", args[5]), q.kwargs.get("quant_max", args[6])


def _replace(graph, last, x, w, k, w_scale, bias, after=None, source=None):
    """The linear of `x` with W_q dequantized per output channel, in place of `last` (when
    `last` has the linear's shape: the leading dims of `source`, the activation x comes from
    (default: x), and N); the new nodes go after `after` (default: `last`; a node made for
    the rewrite, removed when nothing is replaced). Returns 1, or 0."""
    n = w.meta["val"].shape[0]
    x_val, last_val = (source or x).meta.get("val"), last.meta.get("val")
    if x_val is None or last_val is None or \
            tuple(last_val.shape) != tuple(x_val.shape[:-1]) + (n,):
        if after is not None:
            graph.erase_node(after)
        return 0
    with graph.inserting_after(after or last):
        w_dq = graph.call_function(torch.ops.torchao.dequantize_affine.default,
                                   (w, [1, k], w_scale, None, torch.int8, -128, 127))
    with graph.inserting_after(w_dq):
        y = graph.call_function(aten.linear.default,
                                (x, w_dq) + ((bias,) if bias is not None else ()))
    y.meta.update(last.meta)
    last.replace_all_uses_with(y)
    return 1


def _drop_unread(graph):
    """Removes what the rewrite left unread: the old chains and their metadata asserts."""
    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.nodes)):
            if node.op == "call_function" and node.target is not _ASSERT and \
                    all(u.target is _ASSERT for u in node.users):
                for u in list(node.users):
                    graph.erase_node(u)
                graph.erase_node(node)
                changed = True
