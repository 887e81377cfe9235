"""Runs a .pte's forward through ExecuTorch's own Python runtime (executorch.runtime), the way
a user would: `import executorch.runtime`, then load libvkd_executorch.so with ctypes (which
registers VkdBackend in the registry the runtime shares), then load and execute. First tries
once before loading the library, which must fail (VkdBackend not registered) and leave the
process able to go on: one process for both cases, as importing torch is most of the time.

usage: et_python_run.py MODEL.pte LIB.so OUT.npy IN.npy...
exit 0 with OUT.npy written; 1 when ExecuTorch raised where it should not, or did not where it
should (ExecuTorch's messages on stderr).
"""
import ctypes
import sys

import numpy as np
import torch
from executorch.runtime import Runtime  # first: loads libexecutorch.so, which the lib needs


def forward(pte, inputs):
    method = Runtime.get().load_program(pte).load_method("forward")
    return method.execute([torch.from_numpy(np.load(path)) for path in inputs])


def main(pte, lib, out, *inputs):
    try:
        forward(pte, inputs)
        print("ran without libvkd_executorch.so loaded", file=sys.stderr)
        return 1
    except RuntimeError as e:
        print(f"without the library: {e}", file=sys.stderr)
    ctypes.CDLL(lib)
    try:
        result = forward(pte, inputs)
    except RuntimeError as e:
        print(f"with the library: {e}", file=sys.stderr)
        return 1
    np.save(out, result[0].numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
