"""Writes safetensors files (the weights `vkd compile --weights` reads) with numpy alone.

Layout: an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape
and byte range, then the raw little-endian data. The header is padded with spaces to 8 bytes so
the data section starts aligned, as the reference implementation does.
"""
import json
import struct

import numpy as np

_DTYPES = {
    np.dtype(np.float32): "F32",
    np.dtype(np.float16): "F16",
    np.dtype(np.int8): "I8",
    np.dtype(np.int32): "I32",
    np.dtype(np.int64): "I64",
}


def to_bytes(tensors):
    """The file's bytes for `tensors` (name -> numpy array, in the order given)."""
    header, chunks, offset = {}, [], 0
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        if array.dtype not in _DTYPES:
            raise ValueError(f"safetensors: tensor '{name}' has unsupported dtype {array.dtype}")
        raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _DTYPES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save(path, tensors):
    """Writes `tensors` (name -> numpy array) to `path`."""
    with open(path, "wb") as f:
        f.write(to_bytes(tensors))
