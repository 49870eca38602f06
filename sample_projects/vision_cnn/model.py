"""A small U-Net-style encoder/decoder for dense (per-pixel) classification.

The decoder stops at half resolution; logits are resized to the input size
(DeepLab-style), which keeps the model cheap.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_ch, out_ch):
        super().__init__(
            nn.Conv2d(in_ch, out_ch, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_ch),
            nn.ReLU(inplace=True),
        )


class DoubleConv(nn.Sequential):
    def __init__(self, in_ch, out_ch):
        super().__init__(ConvBNReLU(in_ch, out_ch), ConvBNReLU(out_ch, out_ch))


class Down(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv = DoubleConv(in_ch, out_ch)

    def forward(self, x):
        return self.conv(self.pool(x))


class Up(nn.Module):
    def __init__(self, in_ch, skip_ch, out_ch):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv = DoubleConv(in_ch + skip_ch, out_ch)

    def forward(self, x, skip):
        x = self.up(x)
        if x.shape[-2:] != skip.shape[-2:]:
            # odd input sizes: match the skip connection exactly
            x = F.interpolate(x, size=skip.shape[-2:], mode="nearest")
        return self.conv(torch.cat([skip, x], dim=1))


class UNet(nn.Module):
    def __init__(self, in_channels=3, num_classes=4, width=8, dropout=0.1):
        super().__init__()
        self.stem = DoubleConv(in_channels, width)
        self.down1 = Down(width, width * 2)
        self.down2 = Down(width * 2, width * 4)
        self.drop = nn.Dropout2d(dropout)
        self.up1 = Up(width * 4, width * 2, width * 2)
        self.head = nn.Conv2d(width * 2, num_classes, kernel_size=1)
        # image-level auxiliary head (does the image contain class 3 at all?)
        self.aux = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width * 4, 1))

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        s0 = self.stem(x)
        s1 = self.down1(s0)
        b = self.drop(self.down2(s1))
        y = self.up1(b, s1)
        logits = F.interpolate(self.head(y), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return logits, self.aux(b).squeeze(1)
