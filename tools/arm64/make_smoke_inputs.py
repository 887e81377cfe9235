#!/usr/bin/env python3
"""Writes the weights and inputs of the arm64 smoke test into OUTDIR:

  conv.safetensors, conv_x.npy      for test/cli/graphs/conv.json
  linear.safetensors, lin_x.npy     for test/cli/graphs/linear.json

The values are those test/cli/make_compile_weights.cpp writes for the same graphs (int8 weights
in a fixed pattern, power-of-two scales, inputs that are multiples of 0.5), so every result is
exact and `vkd run --check` holds bit for bit. That helper is a test binary of a native build;
this script needs only the host's python3 (standard library), which the build needs anyway.

  python3 tools/arm64/make_smoke_inputs.py OUTDIR
"""
import json
import os
import struct
import sys


def weight_bytes(n, k, seed):
    """Int8 weights -7 .. 7 in make_compile_weights.cpp's pattern."""
    return struct.pack(f"{n * k}b", *(((i * 7 + seed) % 15) - 7 for i in range(n * k)))


def f32_bytes(values):
    return struct.pack(f"<{len(values)}f", *values)


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, bytes)], stored back to back in that order."""
    header, offset = {}, 0
    for name, dtype, shape, data in tensors:
        end = offset + len(data)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, end]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as other writers do
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, _, _, data in tensors:
            f.write(data)


def write_npy_f32(path, shape, values):
    """A version 1.0 .npy of little-endian float32, C order."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"  # magic + header: a multiple of 64
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(f32_bytes(values))


def write_conv(out):
    write_safetensors(os.path.join(out, "conv.safetensors"), [
        ("conv1.weight", "I8", [6, 5, 3, 3], weight_bytes(6, 45, 2)),
        ("conv1.scale", "F32", [6], f32_bytes([0.25, 0.125, 0.5, 0.25, 0.0625, 0.125])),
        ("conv1.bias", "F32", [6], f32_bytes([0.5, -1.0, 0.0, 2.25, -0.75, 1.5])),
        ("dw.weight", "I8", [5, 1, 3, 3], weight_bytes(5, 9, 5)),
        ("dw.scale", "F32", [5], f32_bytes([0.5, 0.25, 0.125, 0.25, 1.0])),
        ("pw.weight", "I8", [4, 5, 1, 1], weight_bytes(4, 5, 3)),
        ("pw.scale", "F32", [4], f32_bytes([0.125, 0.25, 0.0625, 0.5])),
    ])
    n = 2 * 5 * 7 * 6
    write_npy_f32(os.path.join(out, "conv_x.npy"), [2, 5, 7, 6],
                  [0.5 * ((i * 13) % 37 - 18) for i in range(n)])


def write_linear(out):
    write_safetensors(os.path.join(out, "linear.safetensors"), [
        ("lin1.weight", "I8", [5, 8], weight_bytes(5, 8, 1)),
        ("lin1.scale", "F32", [5], f32_bytes([0.25, 0.125, 0.5, 0.25, 0.0625])),
        ("lin1.bias", "F32", [5], f32_bytes([0.5, -1.0, 0.0, 2.25, -0.75])),
        ("lin2.weight", "I8", [3, 8], weight_bytes(3, 8, 4)),
        ("lin2.scale", "F32", [3], f32_bytes([0.5, 0.25, 0.125])),
    ])
    write_npy_f32(os.path.join(out, "lin_x.npy"), [2, 3, 8],
                  [0.5 * ((i * 11) % 41 - 20) for i in range(48)])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write_conv(out)
    write_linear(out)


if __name__ == "__main__":
    main()
