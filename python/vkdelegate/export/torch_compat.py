"""Workarounds for the PyTorch this project is tested with (Debian's torch 1.13 on Python 3.11).

torch 1.13 predates Python 3.11 support. Its FX tracer lets a traced value be unpacked
(`a, b = x.chunk(2, dim=1)`, as torchvision's ShuffleNetV2 does) by looking at the caller's
bytecode for an UNPACK_SEQUENCE at `f_lasti // 2`; from 3.11 on the instruction list that index
reads no longer counts the inline CACHE entries, so the lookup lands on the wrong instruction and
tracing fails with "Proxy object cannot be iterated". `fx_tuple_unpacking()` looks the
instruction up by its byte offset instead, for the duration of a trace.
"""
import contextlib
import dis
import inspect
import sys

import torch.fx.proxy


def _unpack_aware_iter(self):
    """Proxy.__iter__ with the caller's instruction found by its byte offset."""
    frame = inspect.currentframe().f_back
    inst = next((i for i in dis.get_instructions(frame.f_code) if i.offset == frame.f_lasti),
                None)
    if inst is not None and inst.opname == "UNPACK_SEQUENCE":
        return (self[i] for i in range(inst.argval))
    return self.tracer.iter(self)


def _needs_patch():
    """Whether this torch's Proxy.__iter__ still indexes instructions by f_lasti // 2 while
    Python's instruction list skips CACHE entries (3.11+)."""
    if sys.version_info < (3, 11):
        return False
    source = inspect.getsource(torch.fx.proxy.Proxy.__iter__)
    return "f_lasti // 2" in source


@contextlib.contextmanager
def fx_tuple_unpacking():
    """Tracing inside this block can unpack traced tuples on Python 3.11+ with torch < 2."""
    if not _needs_patch():
        yield
        return
    original = torch.fx.proxy.Proxy.__iter__
    torch.fx.proxy.Proxy.__iter__ = _unpack_aware_iter
    try:
        yield
    finally:
        torch.fx.proxy.Proxy.__iter__ = original
