"""The strides of ExecuTorch's EDGE_DO_NOT_DECOMP copies of kept ops, as the ATen op gives them.

A partitioner whose ops_to_not_decompose returns a per-node filter puts the program on
ExecuTorch's EDGE_DO_NOT_DECOMP path: each kept node becomes a copy of its op in that namespace,
registered CompositeExplicitAutograd, and the program is traced again. Under fake tensors that
copy answers with a contiguous output where the ATen op's own fake kernel follows its inputs'
layout: aten.scaled_dot_product_attention returns the query's layout, so on BERT's head split
(query [B, H, L, E] viewing a [B, L, H, E] buffer) the head merge (transpose(1, 2)) was
contiguous at export time, torch.export wrote its reshape as a view, and the second trace fails
("Cannot view a tensor with shape [1, 32, 12, 32] and strides ..."). Giving the copy the ATen op
as its fake kernel traces it as export traced the op. (ExecuTorch 1.5.1; its _program.py names
the issue, "SDPA and contiguous views", at _can_skip_using_EDGE_DO_NOT_DECOMP.)"""
import torch
from executorch.exir.program import _program as et_program


def fake_like_aten(op):
    """Defines ExecuTorch's EDGE_DO_NOT_DECOMP copy of `op` now (ExecuTorch reuses it) with
    `op` itself as its fake kernel, once."""
    et_program._register_no_decomp_op(op)
    copy = et_program.aten_op_to_transform_op[op]
    if torch._library.simple_registry.singleton.find(copy.name()).fake_impl.kernel is None:
        torch.library.register_fake(copy, lambda *args, **kwargs: op(*args, **kwargs))
