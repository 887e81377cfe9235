"""The walk from a converted PT2E graph to graph IR nodes, one node at a time.

The graph is what torch.export + convert_pt2e make (or an ExportedProgram of it): ATen
OpOverloads between `quantized_decomposed` quantize / dequantize ops, weights as int8 constants
behind a dequantize. The handlers (ops.py) read a node and emit graph IR ops with ATen argument
names; a target without a handler becomes `<namespace>.<name>` with its arguments as its schema
names them. Everything here is shared by the handlers: values as the walk sees them (Ref
kinds), reading arguments, emitting nodes, constants, the names of IR values and the int8
mapping of PyTorch's 8-bit dtypes.

Names: an IR value keeps the name of the node that made it (`conv2d_3`, `hardtanh`); the int8
tensor a quantize makes of it is `<that name>_q` (`conv2d_3_q`: what `vkd run --intermediates`
writes and compile reports show), each dequantize of it `<that name>_dq` (`_dq_1`, ... for the
other consumers); a weight is named after its module (`layer1.0.conv1.weight` in the
safetensors file, `layer1_0_conv1_weight` in the IR). After a walk each node's meta
"vkd_value" holds the IR name of its result (ir_value_names).
"""
import math
import operator
from dataclasses import dataclass

import numpy as np
import torch
from torch.fx.passes.shape_prop import ShapeProp

from .errors import ExportError
from .ir import GraphIR

Q_PER_TENSOR = "quantized_decomposed.quantize_per_tensor"
DQ_PER_TENSOR = "quantized_decomposed.dequantize_per_tensor"
DQ_PER_CHANNEL = "quantized_decomposed.dequantize_per_channel"


# ---- what a node is to the walk -----------------------------------------------------------

@dataclass
class Tensor:
    """A value already in the graph IR."""
    name: str


@dataclass
class Param:
    """A constant tensor of the graph (get_attr or folded), written to the IR when a node reads
    it as a tensor; scales and zero points are read as numbers instead."""
    tensor: torch.Tensor
    data_name: str
    written: str = ""


@dataclass
class Dequant:
    """A dequantize of an int8 value, emitted once per consumer (the decomposed form PT2E
    produces, and what the compiler's fusion patterns match: one dq per consumer)."""
    source: str
    args: dict
    base: str
    shape: list
    uses: int = 0


@dataclass
class Pieces:
    """The tensors of a node with several outputs (a split) in the IR, in order; a getitem
    picks one."""
    names: list


@dataclass
class Literal:
    """A non-tensor result (a size, an int) known from shape propagation."""
    value: object


@dataclass
class Out:
    """Where a node's result goes: its IR name, dtype and shape."""
    name: str
    dtype: str
    shape: list


# ---- dtypes and literals ----------------------------------------------------------------------

_DTYPE_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.int32: "int32",
    torch.int64: "int64", torch.int8: "int8", torch.qint8: "int8", torch.quint8: "int8",
    torch.uint8: "int8",
}


def dtype_name(dtype):
    """The graph IR dtype of a torch dtype: PyTorch's 8-bit quantized dtypes are all int8 in the
    IR (uint8 ones shifted by 128, see int8_qargs)."""
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def json_literal(value, where):
    """`value` as a graph IR literal (JSON): ints, finite floats, bools, None, strings, lists."""
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ExportError(f"{where}: the graph IR has no literal for {value}")
        return value
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout, torch.device)):
        return dtype_name(value) if isinstance(value, torch.dtype) else \
            str(value).replace("torch.", "")
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_quantized:
        return json_literal(value.item(), where)
    if isinstance(value, (list, tuple, torch.Size)):
        return [json_literal(v, where) for v in value]
    raise ExportError(f"{where}: cannot write an argument of type {type(value).__name__}")


def int8_qargs(scale, zero_point, dtype, quant_min=None, quant_max=None):
    """quantize/dequantize args on the IR's int8 scale. PyTorch's uint8 activations map
    exactly: q_int8 = q_uint8 - 128, zero point and range shifted the same way."""
    if dtype in (torch.quint8, torch.uint8):
        shift, lo, hi = 128, 0, 255
    elif dtype in (torch.qint8, torch.int8):
        shift, lo, hi = 0, -128, 127
    else:
        raise ExportError(f"quantized dtype {dtype} is not 8-bit (the graph IR holds int8)")
    lo = lo if quant_min is None else int(quant_min)
    hi = hi if quant_max is None else int(quant_max)
    return {"scale": float(np.float32(scale)), "zero_point": int(zero_point) - shift,
            "quant_min": lo - shift, "quant_max": hi - shift, "dtype": "int8"}


def int8_data(ints, dtype):
    """Integer data of a quantized constant as int8 (uint8 data shifted by 128)."""
    ints = np.asarray(ints).astype(np.int64)
    if dtype in (torch.quint8, torch.uint8):
        ints = ints - 128
    return ints.astype(np.int8)


# ---- shape propagation ------------------------------------------------------------------------

def _holds_tensor(value):
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return False


class _Propagate(ShapeProp):
    """ShapeProp that also keeps each non-tensor result (sizes and ints computed from shapes), so
    the walk can use them as literals: the graph IR has concrete shapes only."""

    def run_node(self, n):
        result = super().run_node(n)
        if not _holds_tensor(result):
            n.meta["vkd_literal"] = result
        return result


def propagate(gm, example_inputs):
    """Runs `gm` once on `example_inputs`, recording every node's output dtype and shape."""
    with torch.no_grad():
        _Propagate(gm).propagate(*example_inputs)


# ---- the walk ---------------------------------------------------------------------------------

class Walker:
    """Visits the graph in order and builds the graph IR (`self.ir`). Handlers are looked up by
    `find_handler(walker, node)` (ops.py) and use the methods below."""

    def __init__(self, gm, find_handler, where=""):
        self.gm = gm
        self.find_handler = find_handler
        self.where = where
        self.ir = GraphIR(reserved=[n.name for n in gm.graph.nodes])
        self.env = {}
        self.qparams = {}  # int8 IR value -> the args of the quantize that made it
        self.quantized_from = {}  # int8 IR value -> the float value it quantizes

    def run(self):
        for node in self.gm.graph.nodes:
            self.node = node
            self.env[node] = self.visit(node)
            ref = self.env[node]
            node.meta["vkd_value"] = ref.name if isinstance(ref, Tensor) else \
                list(ref.names) if isinstance(ref, Pieces) else None
        return self.ir

    def visit(self, node):
        if node.op == "placeholder":
            return self.placeholder(node)
        if node.op == "get_attr":
            return Param(_fetch_attr(self.gm, node.target), node.target)
        if node.op == "output":
            for a in _leaves(node.args[0]):
                ref = self.ref(a)
                self.ir.outputs.extend(ref.names if isinstance(ref, Pieces) else [self.input(a)])
            return None
        if "vkd_literal" in node.meta:
            return Literal(node.meta["vkd_literal"])
        return self.find_handler(self, node)

    def placeholder(self, node):
        meta = node.meta.get("tensor_meta")
        if meta is None:
            return Literal(node.meta.get("vkd_literal"))
        name = self.ir.claim(node.name)
        self.ir.add_input(name, dtype_name(meta.dtype), meta.shape)
        return Tensor(name)

    # ---- reading arguments --------------------------------------------------------------------

    def fail(self, message):
        """An ExportError naming the node being walked."""
        node = self.node
        target = node.target if isinstance(node.target, str) else \
            getattr(node.target, "__name__", str(node.target))
        return ExportError(f"{self.where}node '{node.name}' ({node.op} {target}): {message}")

    def ref(self, arg):
        return self.env[arg] if isinstance(arg, torch.fx.Node) else Literal(arg)

    def is_tensor(self, arg):
        return isinstance(self.ref(arg), (Tensor, Param, Dequant))

    def is_pieces(self, arg):
        return isinstance(self.ref(arg), Pieces)

    def input(self, arg):
        """The IR value name of a tensor argument: writes a constant the first time it is read,
        emits a fresh dequantize for each consumer of a deferred one."""
        ref = self.ref(arg)
        if isinstance(ref, Tensor):
            return ref.name
        if isinstance(ref, Dequant):
            ref.uses += 1
            name = self.ir.claim(ref.base) if ref.uses == 1 else self.ir.fresh(ref.base)
            return self.ir.add_node(DQ_PER_TENSOR, [ref.source], ref.args, name, "float32",
                                    ref.shape)
        if isinstance(ref, Param):
            if not ref.written:
                ref.written = self.constant(ref.tensor, ref.data_name)
            return ref.written
        if isinstance(ref, Pieces):
            raise self.fail("expected a tensor argument, got the pieces of a split (index them)")
        raise self.fail(f"expected a tensor argument, got {ref.value!r}")

    def literal(self, arg):
        """A non-tensor argument's Python value (Nodes resolved through the walk)."""
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.literal(a) for a in arg)
        ref = self.ref(arg)
        if isinstance(ref, Literal):
            return ref.value
        if isinstance(ref, Param):
            return ref.tensor
        raise self.fail("expected a literal argument, got a tensor computed by the graph")

    def scalar(self, arg):
        """A number given as a literal or as a one-element constant tensor (a `.tensor`
        quantize overload's scale and zero point)."""
        value = self.literal(arg)
        return value.item() if isinstance(value, torch.Tensor) else value

    def out(self, node=None):
        """The Out of `node` (default: the node being walked), named after it."""
        node = node or self.node
        meta = node.meta.get("tensor_meta")
        if not hasattr(meta, "shape"):
            raise self.fail("its result is not a single tensor (only single-output ops export)")
        return Out(self.ir.claim(node.name), dtype_name(meta.dtype), list(meta.shape))

    def outs(self, node=None):
        """The Outs of a node whose result is a sequence of tensors (a split), each named after
        the getitem that picks it (a piece nothing picks: after the node)."""
        node = node or self.node
        metas = node.meta.get("tensor_meta")
        if not isinstance(metas, (list, tuple)) or not all(hasattr(m, "shape") for m in metas):
            raise self.fail("its result is not a sequence of tensors")
        picked = {}
        for user in node.users:
            if user.target is operator.getitem and isinstance(user.args[1], int):
                picked[user.args[1] % len(metas)] = user.name
        return [Out(self.ir.claim(picked[k]) if k in picked else self.ir.fresh(f"{node.name}_{k}"),
                    dtype_name(m.dtype), list(m.shape)) for k, m in enumerate(metas)]

    def temp(self, base, dtype, shape):
        """An Out for an intermediate value (one of several IR nodes a handler emits)."""
        return Out(self.ir.fresh(base), dtype, list(shape))

    def value_type(self, name):
        v = self.ir.values[name]
        return v["dtype"], v["shape"]

    # ---- emitting -----------------------------------------------------------------------------

    def emit(self, op, inputs, args, out):
        """One IR node; trailing absent optional inputs ("") are left out."""
        return Tensor(self.emit_outputs(op, inputs, args, [out])[0])

    def emit_pieces(self, op, inputs, args, outs):
        """One IR node with several outputs (`outs`, in order): a split."""
        return Pieces(self.emit_outputs(op, inputs, args, outs))

    def emit_outputs(self, op, inputs, args, outs):
        inputs = list(inputs)
        while inputs and inputs[-1] == "":
            inputs.pop()
        args = {k: json_literal(v, f"{self.where}node '{self.node.name}' arg '{k}'")
                for k, v in args.items()}
        return self.ir.add_node_outputs(op, inputs, args,
                                        [(o.name, o.dtype, o.shape) for o in outs])

    def constant(self, tensor, data_name):
        """Writes a float/int constant; returns its IR value name (named after its data)."""
        if tensor.is_quantized:
            raise self.fail(f"quantized constant '{data_name}' is read without a dequantize")
        array = tensor.detach().cpu().contiguous().numpy()
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        if array.dtype.name not in ("float32", "float16", "int8", "int32", "int64"):
            raise self.fail(f"constant '{data_name}' has dtype {array.dtype}, which the graph IR "
                            "does not hold")
        return self.ir.add_constant(data_name.replace(".", "_"), array, data_name)

    def quantize(self, x, qargs):
        """A per-tensor quantize of IR value `x` to int8, named `<x>_q`; remembers its args for
        the dequantizes that follow."""
        shape = self.value_type(x)[1]
        out = Out(self.ir.fresh(f"{x}_q"), "int8", shape)
        self.qparams[out.name] = qargs
        self.quantized_from[out.name] = x
        return self.emit(Q_PER_TENSOR, [x], qargs, out)

    def dequantize_later(self, source, qargs):
        """A deferred per-tensor dequantize of int8 IR value `source` (see Dequant), named
        `<the float value it quantizes>_dq`."""
        base = self.quantized_from.get(source, source)
        return Dequant(source, qargs, f"{base}_dq", self.value_type(source)[1])

    def constant_name(self, preferred, tensor):
        """`preferred` as the data name of constant `tensor`, or None when other data holds
        that name already (a module whose weight was quantized twice, differently)."""
        held = self.ir.tensors.get(preferred)
        if held is None:
            return preferred
        array = tensor.detach().cpu().numpy() if isinstance(tensor, torch.Tensor) else tensor
        same = held.shape == array.shape and np.array_equal(held, array)
        return preferred if same else None


def ir_value_names(gm):
    """{node name: IR value name} of the last walk over `gm` (to_graph_ir): each node whose
    result is one IR tensor (a quantize's: `<value>_q`), or a list for a split's pieces."""
    return {n.name: n.meta["vkd_value"] for n in gm.graph.nodes if n.meta.get("vkd_value")}


def _fetch_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _leaves(arg):
    """The Nodes of an output argument (a Node, or nested tuples / lists / dicts of them)."""
    if isinstance(arg, (list, tuple)):
        return [leaf for a in arg for leaf in _leaves(a)]
    if isinstance(arg, dict):
        return [leaf for a in arg.values() for leaf in _leaves(a)]
    return [arg]
