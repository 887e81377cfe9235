"""Tiny models for the exporter CLI tests (test_cli_errors.py, test_output_names.py), given as
`--model <this file>:FACTORY`: a conv or two on a few channels, so each export takes
milliseconds, and the ways a model can be wrong."""
import collections

import torch
from torch import nn


class ConvRelu(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x))


def conv_relu(width=4):
    return ConvRelu(width)


def nan_weight():
    model = ConvRelu()
    with torch.no_grad():
        model.conv.weight[1, 2, 0, 1] = float("nan")
    return model


def inf_bias():
    model = ConvRelu()
    with torch.no_grad():
        model.conv.bias[3] = float("-inf")
    return model


class LogConv(ConvRelu):
    """log of a standard normal input: NaN wherever the input is negative."""

    def forward(self, x):
        return self.relu(self.conv(torch.log(x)))


def nan_activation():
    return LogConv()


def raises():
    raise RuntimeError("the factory failed on purpose")


def not_a_module():
    return 42


class SizeToo(ConvRelu):
    def forward(self, x):
        return self.relu(self.conv(x)), x.size(1)


def non_tensor_output():
    return SizeToo()


class Heads(nn.Module):
    """Two heads of the same shape, returned as torchvision's segmentation models do."""

    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.aux = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return {"out": self.head(x), "aux": self.aux(x)}


def dict_outputs():
    return Heads()


Detections = collections.namedtuple("Detections", "logits features")
Features = collections.namedtuple("Features", "fine coarse")


class NamedTupleHeads(Heads):
    """A namedtuple inside a namedtuple, one field given by keyword."""

    def forward(self, x):
        y = self.head(x)
        return Detections(self.aux(x), features=Features(y, nn.functional.max_pool2d(y, 2)))


def namedtuple_outputs():
    return NamedTupleHeads()


class TwoInputs(nn.Module):
    """Two float inputs: an image and a map added after the conv."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x, y):
        return torch.relu(self.conv(x) + y)


def two_inputs():
    return TwoInputs()


class Tokens(nn.Module):
    """Integer token ids and float features: an embedding, a linear, an add."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.proj = nn.Linear(8, 8)

    def forward(self, input_ids, feats):
        return torch.relu(self.proj(self.embed(input_ids)) + feats)


def tokens():
    return Tokens()


def _register_shift():
    """vkd_test::shift(x, amount) = x + amount: an op no table of the exporter or the compiler
    knows. Registered once per process (the CLI loads this file again under its own name)."""
    if hasattr(torch.ops.vkd_test, "shift"):
        return

    @torch.library.custom_op("vkd_test::shift", mutates_args=())
    def shift(x: torch.Tensor, amount: float) -> torch.Tensor:
        return x + amount

    @shift.register_fake
    def _(x, amount):
        return torch.empty_like(x)

    # Its out variant, which ExecuTorch's .pte names (its kernel:
    # test/executorch/vkd_test_shift_kernel.cpp).
    torch.library.define("vkd_test::shift.out",
                         "(Tensor x, float amount, *, Tensor(a!) out) -> Tensor(a!)")

    @torch.library.impl("vkd_test::shift.out", "CompositeExplicitAutograd")
    def _(x, amount, *, out):
        return out.copy_(x + amount)


class CustomOp(nn.Module):
    """A conv, the unknown op, a conv."""

    def __init__(self):
        super().__init__()
        _register_shift()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.b(torch.ops.vkd_test.shift(self.a(x), 0.5))


def custom_op():
    return CustomOp()
