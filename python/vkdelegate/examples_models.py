"""Small models for the exporter's examples and tests (seeded random weights, no downloads)."""
import torch
from torch import nn


def _conv(cin, cout, k, stride=1):
    """A 'same'-padded convolution with a bias: the building block of every stage below."""
    return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2)


class TinyUNet(nn.Module):
    """A U-Net-style segmentation net that exercises what the exporter must keep apart.

    Encoder: conv + ReLU6 (a hardtanh in the exported graph, not a relu), max pool + conv +
    ReLU, a strided conv + ReLU. Bottleneck: conv, a residual add, then ReLU6 after the add.
    Decoder: two 1x1 convs that upsample by pixel_shuffle(2), each followed by a skip add with
    the encoder map of the same size. Head: 1x1 conv to `classes` channels at the input
    resolution.
    """

    def __init__(self, in_channels=3, width=16, classes=4):
        super().__init__()
        w = width
        self.stem = nn.Sequential(_conv(in_channels, w, 3), nn.ReLU6())
        self.down1 = nn.Sequential(nn.MaxPool2d(2), _conv(w, 2 * w, 3), nn.ReLU())
        self.down2 = nn.Sequential(_conv(2 * w, 2 * w, 3, stride=2), nn.ReLU())
        self.mid = _conv(2 * w, 2 * w, 3)
        self.mid_act = nn.ReLU6()
        self.up2 = nn.Sequential(_conv(2 * w, 8 * w, 1), nn.PixelShuffle(2))
        self.up1 = nn.Sequential(_conv(2 * w, 4 * w, 1), nn.PixelShuffle(2))
        self.head = _conv(w, classes, 1)

    def forward(self, x):
        e1 = self.stem(x)
        e2 = self.down1(e1)
        e3 = self.down2(e2)
        m = self.mid_act(self.mid(e3) + e3)
        u2 = self.up2(m) + e2
        u1 = self.up1(u2) + e1
        return self.head(u1)


def tiny_unet(in_channels=3, width=16, classes=4):
    """Factory for `--model vkdelegate.examples_models:tiny_unet` (weights from torch's RNG)."""
    return TinyUNet(in_channels, width, classes)


class TinyUNetTransposed(nn.Module):
    """A U-Net that upsamples the other two ways and concatenates its skips.

    Encoder: conv + ReLU, then twice max pool + conv + ReLU. Decoder: a learned 2x upsample
    (ConvTranspose2d, kernel 3, stride 2, padding 1, output_padding 1, + ReLU), torch.cat with
    the encoder map of the same size, conv + ReLU; then a fixed bilinear 2x upsample
    (nn.Upsample, half-pixel centres), torch.cat with the first encoder map, conv + ReLU. Head:
    1x1 conv to `classes` channels at the input resolution (H and W divisible by 4).
    """

    def __init__(self, in_channels=3, width=8, classes=4):
        super().__init__()
        w = width
        self.enc1 = nn.Sequential(_conv(in_channels, w, 3), nn.ReLU())
        self.enc2 = nn.Sequential(nn.MaxPool2d(2), _conv(w, 2 * w, 3), nn.ReLU())
        self.enc3 = nn.Sequential(nn.MaxPool2d(2), _conv(2 * w, 4 * w, 3), nn.ReLU())
        self.up2 = nn.Sequential(
            nn.ConvTranspose2d(4 * w, 2 * w, 3, stride=2, padding=1, output_padding=1),
            nn.ReLU())
        self.dec2 = nn.Sequential(_conv(4 * w, 2 * w, 3), nn.ReLU())
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec1 = nn.Sequential(_conv(3 * w, w, 3), nn.ReLU())
        self.head = _conv(w, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        e3 = self.enc3(e2)
        d2 = self.dec2(torch.cat([self.up2(e3), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


def tiny_unet_transposed(in_channels=3, width=8, classes=4):
    """Factory for `--model vkdelegate.examples_models:tiny_unet_transposed`."""
    return TinyUNetTransposed(in_channels, width, classes)


# ---- the architecture patterns of issue 31, one small classifier each ------------------------
# Each is built from ops of the README's table in a way the other example models are not: a
# BatchNorm2d no conv of its own precedes (after a concatenation, at the start of a
# pre-activation block), a channel shuffle spelled with contiguous(), stochastic depth and
# dropouts as calls in eval mode, a flatten before the classifier. Batch-norm statistics are
# measured on random inputs (recalibrate_batchnorm).

class _DenseLayer(nn.Module):
    """DenseNet's layer: BN-ReLU on the concatenated input (standalone: it follows the cat),
    1x1 conv + BN-ReLU (folded into the conv), 3x3 conv; its output joins the input."""

    def __init__(self, cin, growth):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.relu1 = nn.ReLU()
        self.conv1 = nn.Conv2d(cin, 2 * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(2 * growth)
        self.relu2 = nn.ReLU()
        self.conv2 = nn.Conv2d(2 * growth, growth, 3, padding=1, bias=False)

    def forward(self, x):
        y = self.conv1(self.relu1(self.norm1(x)))
        return torch.cat([x, self.conv2(self.relu2(self.norm2(y)))], 1)


class TinyDenseNet(nn.Module):
    """Stem conv, two dense layers, a transition (BN-ReLU, 1x1 conv, average pool), one more
    dense layer, then DenseNet's head: a standalone BN and F.relu, global average pool,
    torch.flatten, linear."""

    def __init__(self, classes=10, growth=6):
        super().__init__()
        self.stem = nn.Conv2d(3, 12, 3, stride=2, padding=1)
        self.block1 = nn.Sequential(_DenseLayer(12, growth), _DenseLayer(12 + growth, growth))
        c = 12 + 2 * growth
        self.transition = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 16, 1),
                                        nn.AvgPool2d(2))
        self.block2 = _DenseLayer(16, growth)
        self.norm5 = nn.BatchNorm2d(16 + growth)
        self.classifier = nn.Linear(16 + growth, classes)

    def forward(self, x):
        y = self.block2(self.transition(self.block1(self.stem(x))))
        y = nn.functional.adaptive_avg_pool2d(torch.relu(self.norm5(y)), 1)
        return self.classifier(torch.flatten(y, 1))


class _PreActBlock(nn.Module):
    """A pre-activation residual block (ResNet v2): BN-ReLU before each conv, the first BN at
    the start of the block, reading the residual stream."""

    def __init__(self, c):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c)
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        y = self.conv1(torch.relu(self.bn1(x)))
        return x + self.conv2(torch.relu(self.bn2(y)))


class TinyPreActResNet(nn.Module):
    """Stem conv, two pre-activation blocks, a final BN with no ReLU after it, global average
    pool, flatten, linear."""

    def __init__(self, classes=10, width=16):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.blocks = nn.Sequential(_PreActBlock(width), _PreActBlock(width))
        self.norm = nn.BatchNorm2d(width)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.norm(self.blocks(self.stem(x)))), 1))


def channel_shuffle_contiguous(x, groups):
    """ShuffleNet's channel shuffle as torchvision writes it: view (5-D), transpose,
    contiguous(), view."""
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w)
    return torch.transpose(x, 1, 2).contiguous().view(n, c, h, w)


class _ShuffleUnit(nn.Module):
    """A ShuffleNetV2 unit (stride 1): half the channels through 1x1 - depthwise 3x3 - 1x1,
    concatenated with the other half, then shuffled."""

    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(nn.Conv2d(h, h, 1), nn.ReLU(),
                                    nn.Conv2d(h, h, 3, padding=1, groups=h),
                                    nn.Conv2d(h, h, 1), nn.ReLU())

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return channel_shuffle_contiguous(torch.cat([a, self.branch(b)], 1), 2)


class TinyShuffleNet(nn.Module):
    """Stem conv, a channel shuffle with 4 groups, two ShuffleNetV2 units, global mean, linear."""

    def __init__(self, classes=10, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1), nn.ReLU())
        self.units = nn.Sequential(_ShuffleUnit(width), _ShuffleUnit(width))
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        y = self.units(channel_shuffle_contiguous(self.stem(x), 4))
        return self.fc(y.mean([2, 3]))


class TinyStochasticNet(nn.Module):
    """EfficientNet-style residual blocks whose branch ends in torchvision's StochasticDepth,
    the dropout variants as calls (F.dropout2d, F.alpha_dropout, F.feature_alpha_dropout,
    nn.Dropout), and a head that flattens a 2x2 pool with x.flatten(1) before a two-layer
    classifier."""

    def __init__(self, classes=10, width=16):
        from torchvision.ops import StochasticDepth
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1), nn.ReLU6())
        self.branches = nn.ModuleList(
            nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(width, width, 1)) for _ in range(2))
        self.drop_paths = nn.ModuleList(StochasticDepth(p, "row") for p in (0.1, 0.2))
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.fc1 = nn.Linear(4 * width, 32)
        self.dropout = nn.Dropout(0.2)
        self.fc2 = nn.Linear(32, classes)

    def forward(self, x):
        y = self.stem(x)
        for branch, drop_path in zip(self.branches, self.drop_paths):
            y = y + drop_path(branch(y))
        y = nn.functional.dropout2d(y, 0.1, self.training)
        y = nn.functional.alpha_dropout(y, 0.1, self.training)
        y = nn.functional.feature_alpha_dropout(y, 0.1, self.training)
        y = self.pool(y).flatten(1)
        return self.fc2(self.dropout(torch.relu(self.fc1(y))))


PATTERN_MODELS = {"densenet_block": TinyDenseNet, "preact_resnet": TinyPreActResNet,
                  "shufflenet_contiguous": TinyShuffleNet, "stochastic_depth": TinyStochasticNet}


def architecture_pattern(name, input_size=32):
    """One of PATTERN_MODELS (`--model vkdelegate.examples_models:architecture_pattern
    --model-arg name=densenet_block`), batch-norm statistics measured on random inputs of
    input_size^2, in eval mode."""
    if name not in PATTERN_MODELS:
        raise ValueError(f"unknown pattern model '{name}' (accepted: {', '.join(PATTERN_MODELS)})")
    return recalibrate_batchnorm(PATTERN_MODELS[name](), (2, 3, input_size, input_size))


def recalibrate_batchnorm(model, input_shape, batches=4, seed=0):
    """Measures the batch-norm statistics of a randomly initialised model on random inputs.

    torchvision initialises running mean 0 / variance 1, which do not match what random weights
    produce: in eval mode activations shrink layer after layer (a random MobileNetV2's logits
    are ~1e-9), so quantization ranges and any numeric comparison would be meaningless. A few
    train-mode passes with a cumulative average (momentum None) fix the statistics; the model
    is returned in eval mode.
    """
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    gen = torch.Generator().manual_seed(seed)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(input_shape, generator=gen))
    for m, momentum in zip(norms, saved):
        m.momentum = momentum
    return model.eval()


def scale_residual_branches(model, gamma):
    """Sets the weight of the last batch norm of every residual branch to `gamma`: torchvision's
    ResNet blocks and the MobileNetV2 / V3 inverted residuals that add their input back.

    Trained networks end their residual branches with small batch-norm weights (training with
    zero_init_residual starts them at 0), so each block nudges the residual stream. With the
    random init's 1 every block adds a unit-variance branch and a deep random network becomes
    chaotic: a 1-LSB rounding difference grows layer by layer (at 64x64, ResNet-50's logits from
    PyTorch's own int8 execution, ExecuTorch's XNNPACK, agree with PyTorch's reference-quantized
    model at cosine 0.947 with gamma 1; 0.987 with 0.5; 0.998 with 0.25; MobileNetV3-Large's at
    0.976 with gamma 1, 0.991 with 0.25),
    so no comparison between two correct int8 engines could be tighter than that.
    """
    from torchvision.models.mobilenetv2 import InvertedResidual as InvertedResidualV2
    from torchvision.models.mobilenetv3 import InvertedResidual
    from torchvision.models.resnet import BasicBlock, Bottleneck
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, Bottleneck):
                m.bn3.weight.fill_(gamma)
            elif isinstance(m, BasicBlock):
                m.bn2.weight.fill_(gamma)
            elif isinstance(m, InvertedResidual) and m.use_res_connect:
                m.block[-1][1].weight.fill_(gamma)  # the projection's (conv, batch norm)
            elif isinstance(m, InvertedResidualV2) and m.use_res_connect:
                m.conv[-1].weight.fill_(gamma)  # the projection's batch norm
    return model


def torchvision_quantizable(name, input_size=224, residual_gamma=None, **kwargs):
    """`torchvision.models.quantization.<name>` (float, random weights) with batch-norm
    statistics measured on 4 x 2 random inputs of input_size^2 (recalibrate_batchnorm):
    `--model vkdelegate.examples_models:torchvision_quantizable --model-arg name=mobilenet_v2`.
    `residual_gamma`: for ResNets and MobileNetV3, the trained-like residual branch scale of
    scale_residual_branches (default: left at the random init's 1).
    """
    import torchvision
    factory = getattr(torchvision.models.quantization, name)
    if name == "googlenet":  # its random init, said explicitly (torchvision warns otherwise)
        kwargs.setdefault("init_weights", True)
    model = factory(weights=None, quantize=False, **kwargs)
    if residual_gamma is not None:
        scale_residual_branches(model, float(residual_gamma))
    return recalibrate_batchnorm(model, (2, 3, input_size, input_size))
