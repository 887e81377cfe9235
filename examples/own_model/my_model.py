"""A model of your own, as the README's "Your own model" section exports it.

Any file works the same way: `--model path/to/file.py:FACTORY` calls FACTORY() for the float
`nn.Module` (in eval mode), and `--input-shape` gives the shape of its one input. This one is a
small classifier: conv + batch norm + ReLU blocks (the exporter folds each batch norm into its
conv), a depthwise separable block with a residual add, global average pooling and a linear head.
"""
import torch
from torch import nn


class SmallNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.block = nn.Sequential(
            nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 1), nn.BatchNorm2d(16))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(x + self.block(x))
        return self.head(torch.flatten(self.pool(x), 1))


def build():
    """The factory `--model examples/own_model/my_model.py:build` names."""
    return SmallNet()
