"""Small models for the exporter's examples and tests (seeded random weights, no downloads)."""
import torch
from torch import nn


def _conv(cin, cout, k, stride=1):
    """A 'same'-padded convolution with a bias: the building block of every stage below."""
    return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2)


class TinyUNet(nn.Module):
    """A U-Net-style segmentation net that exercises what the exporter must keep apart.

    Encoder: conv + ReLU6 (PyTorch does not fuse ReLU6 into the conv, so it stays a standalone
    quantized hardtanh), max pool + conv + ReLU, a strided conv + ReLU. Bottleneck: conv, a
    residual add, then ReLU6 standalone after the add. Decoder: two 1x1 convs that upsample by
    pixel_shuffle(2), each followed by a skip add with the encoder map of the same size. Head:
    1x1 conv to `classes` channels at the input resolution.
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
    ResNet blocks and the MobileNetV3 inverted residuals that add their input back.

    Trained networks end their residual branches with small batch-norm weights (training with
    zero_init_residual starts them at 0), so each block nudges the residual stream. With the
    random init's 1 every block adds a unit-variance branch and a deep random network becomes
    chaotic: a 1-LSB rounding difference grows layer by layer (at 64x64, ResNet-50's logits from
    PyTorch's own int8 kernels agree with PyTorch's reference-quantized model at cosine 0.970
    with gamma 1; 0.996 with 0.5; 0.999 with 0.25; MobileNetV3-Large's at 0.976 with gamma 1),
    so no comparison between two correct int8 engines could be tighter than that.
    """
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
