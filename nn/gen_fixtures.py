#!/usr/bin/python3
"""Generate the PyTorch parity fixtures of package nn and nn/resnet.

Run once with Debian's python3-torch (PyTorch 1.13) from the repository root:

    /usr/bin/python3 nn/gen_fixtures.py

It writes nn/testdata/<group>.bin (little-endian float32 arrays, concatenated)
and nn/testdata/<group>.json (index: name -> offset in floats and shape, plus
the list of cases with their layer configuration). The Go tests read these
files and never need torch.

torchvision is not required: its ResNet (v1.5) is defined below in plain
torch with torchvision's module names, so state_dict keys are identical.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


class Writer:
    """Collects named float32 arrays and case descriptions for one group."""

    def __init__(self, group):
        self.group = group
        self.chunks = []
        self.index = {}
        self.cases = []
        self.off = 0

    def add(self, name, t):
        assert name not in self.index, name
        a = np.array(t.detach().cpu().numpy(), dtype="<f4", order="C")  # keeps 0-d shapes
        self.index[name] = {"offset": self.off, "shape": list(a.shape)}
        self.chunks.append(a.tobytes())
        self.off += a.size

    def state(self, prefix, module):
        for k, v in module.state_dict().items():
            self.add(f"{prefix}/state.{k}", v)

    def save(self, extra=None):
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, self.group + ".bin"), "wb") as f:
            for c in self.chunks:
                f.write(c)
        meta = {"torch": torch.__version__, "cases": self.cases, "tensors": self.index}
        if extra:
            meta.update(extra)
        with open(os.path.join(OUT, self.group + ".json"), "w") as f:
            json.dump(meta, f, indent=0, sort_keys=True)
            f.write("\n")


def run_case(w, name, module, x, training, cfg, grad_filter=None, state_of=None):
    """Record the state, a forward and a backward pass of module on x.

    With state_of, the initial state is that of an earlier case (not stored
    again)."""
    module.train(training)
    if state_of is None:
        w.state(name, module)
    else:
        cfg = dict(cfg, state_of=state_of)
    # The reference pass runs in float64 on the float32 inputs and state, so
    # the fixtures hold the exact answer rounded to float32: the Go float32
    # result is compared with the truth, not with PyTorch's own float32
    # rounding errors (up to ~7e-5 relative on the ResNet-50 gradients).
    module.double()
    x = x.clone().double().requires_grad_(True)
    out = module(x)
    g = torch.randn(out.shape).double()
    out.backward(g)
    w.add(f"{name}/x", x)
    w.add(f"{name}/out", out)
    w.add(f"{name}/gout", g)
    w.add(f"{name}/grad.x", x.grad)
    for k, p in module.named_parameters():
        if grad_filter is None or grad_filter(k, p):
            w.add(f"{name}/grad.{k}", p.grad)
    if training:
        for k, b in module.named_buffers():
            w.add(f"{name}/after.{k}", b)
    cfg = dict(cfg, name=name, training=training)
    w.cases.append(cfg)


class SplitBatchNorm(nn.BatchNorm2d):
    """MoCo's single-machine ghost BatchNorm (facebookresearch/moco, colab demo)."""

    def __init__(self, num_features, num_splits, **kw):
        super().__init__(num_features, **kw)
        self.num_splits = num_splits

    def forward(self, input):
        N, C, H, W = input.shape
        if self.training or not self.track_running_stats:
            running_mean_split = self.running_mean.repeat(self.num_splits)
            running_var_split = self.running_var.repeat(self.num_splits)
            outcome = nn.functional.batch_norm(
                input.view(-1, C * self.num_splits, H, W), running_mean_split, running_var_split,
                self.weight.repeat(self.num_splits), self.bias.repeat(self.num_splits),
                True, self.momentum, self.eps).view(N, C, H, W)
            self.running_mean.data.copy_(running_mean_split.view(self.num_splits, C).mean(dim=0))
            self.running_var.data.copy_(running_var_split.view(self.num_splits, C).mean(dim=0))
            self.num_batches_tracked.add_(1)  # the Go layer counts batches as BatchNorm2d does
            return outcome
        return nn.functional.batch_norm(input, self.running_mean, self.running_var,
                                        self.weight, self.bias, False, self.momentum, self.eps)


def randomize_bn(m):
    """Give BatchNorms non-trivial affine parameters and running statistics."""
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):  # includes SplitBatchNorm
            with torch.no_grad():
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0, 0.2)
                mod.running_mean.normal_(0, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                mod.num_batches_tracked.fill_(3)


def layers():
    w = Writer("layers")
    x2 = torch.randn(5, 7)
    lin = nn.Linear(7, 4)
    run_case(w, "linear", lin, x2, True, {"kind": "linear", "in": 7, "out": 4, "bias": True})
    lin = nn.Linear(7, 3, bias=False)
    run_case(w, "linear-nobias", lin, torch.randn(2, 3, 7), True, {"kind": "linear", "in": 7, "out": 3, "bias": False})
    for cname, (cin, cout, k, s, p, bias, h) in {
        "conv3x3": (3, 8, 3, 1, 1, False, 9),
        "conv3x3-s2": (4, 6, 3, 2, 1, True, 9),
        "conv1x1": (8, 5, 1, 1, 0, False, 6),
        "conv1x1-s2": (6, 8, 1, 2, 0, False, 7),
        "conv7x7-s2": (3, 4, 7, 2, 3, False, 12),
    }.items():
        conv = nn.Conv2d(cin, cout, k, s, p, bias=bias)
        run_case(w, cname, conv, torch.randn(2, cin, h, h), True,
                 {"kind": "conv2d", "in": cin, "out": cout, "kernel": k, "stride": s, "padding": p, "bias": bias})
    for training in (True, False):
        tag = "train" if training else "eval"
        bn = nn.BatchNorm1d(6)
        randomize_bn(bn)
        run_case(w, f"bn1d-{tag}", bn, torch.randn(8, 6) * 2 + 1, training, {"kind": "batchnorm", "channels": 6})
        bn = nn.BatchNorm1d(4)
        randomize_bn(bn)
        run_case(w, f"bn1d3-{tag}", bn, torch.randn(3, 4, 5), training, {"kind": "batchnorm", "channels": 4})
        bn = nn.BatchNorm2d(5)
        randomize_bn(bn)
        run_case(w, f"bn2d-{tag}", bn, torch.randn(4, 5, 6, 7) * 3 - 1, training, {"kind": "batchnorm", "channels": 5})
    bn = SplitBatchNorm(3, 2)
    randomize_bn(bn)
    run_case(w, "ghost-bn", bn, torch.randn(6, 3, 4, 5), True, {"kind": "batchnorm", "channels": 3, "splits": 2})
    run_case(w, "relu", nn.ReLU(), torch.randn(3, 4, 5), True, {"kind": "relu"})
    run_case(w, "maxpool", nn.MaxPool2d(3, 2, 1), torch.randn(2, 3, 9, 8), True,
             {"kind": "maxpool", "kernel": 3, "stride": 2, "padding": 1})
    run_case(w, "avgpool1", nn.AdaptiveAvgPool2d((1, 1)), torch.randn(2, 3, 5, 4), True,
             {"kind": "avgpool", "out_h": 1, "out_w": 1})
    run_case(w, "avgpool3", nn.AdaptiveAvgPool2d((3, 2)), torch.randn(2, 3, 7, 5), True,
             {"kind": "avgpool", "out_h": 3, "out_w": 2})
    run_case(w, "flatten", nn.Flatten(), torch.randn(2, 3, 2, 2), True, {"kind": "flatten"})
    seq = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    run_case(w, "sequential", seq, torch.randn(5, 6), True, {"kind": "mlp"})
    w.save()


# --- torchvision's ResNet (torchvision/models/resnet.py), plain torch ---

def conv3x3(i, o, stride=1):
    return nn.Conv2d(i, o, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(i, o, stride=1):
    return nn.Conv2d(i, o, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, width=64, cifar=False):
        super().__init__()
        self.inplanes = width
        if cifar:
            self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        else:
            self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.Identity() if cifar else nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes) if num_classes else nn.Identity()
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


SPECS = {18: (BasicBlock, [2, 2, 2, 2]), 34: (BasicBlock, [3, 4, 6, 3]), 50: (Bottleneck, [3, 4, 6, 3])}


def resnet(depth, **kw):
    block, layers = SPECS[depth]
    return ResNet(block, layers, **kw)


def resnets():
    # Names, shapes and parameter counts of real-width networks (no values).
    structure = {}
    for label, depth, kw in [
        ("resnet18", 18, {}), ("resnet34", 34, {}), ("resnet50", 50, {}),
        ("resnet18-cifar10", 18, {"cifar": True, "num_classes": 10}),
        ("resnet50-cifar-nofc", 50, {"cifar": True, "num_classes": 0}),
    ]:
        m = resnet(depth, **kw)
        structure[label] = {
            "state": [[k, list(v.shape)] for k, v in m.state_dict().items()],
            "num_parameters": sum(p.numel() for p in m.parameters()),
        }
    for arch, depth, width in [("resnet18-w8", 18, 8), ("resnet50-w4", 50, 4)]:
        w = Writer(arch)
        m = resnet(depth, width=width, cifar=True, num_classes=10)
        randomize_bn(m)
        x = torch.randn(2, 3, 32, 32)
        small = lambda k, p: p.numel() <= 4096 or k == "conv1.weight"
        for training in (True, False):
            tag = "train" if training else "eval"
            mc = resnet(depth, width=width, cifar=True, num_classes=10)
            mc.load_state_dict(m.state_dict())
            run_case(w, f"{arch}-{tag}", mc, x, training, {"kind": "resnet", "arch": arch},
                     grad_filter=None if training else small,
                     state_of=None if training else f"{arch}-train")
        w.save({"structure": structure} if arch == "resnet18-w8" else None)
    # The ImageNet stem (7x7 stride-2 convolution, 3x3 stride-2 max-pool).
    w = Writer("resnet18-w4-imagenet")
    m = resnet(18, width=4, cifar=False, num_classes=5)
    randomize_bn(m)
    run_case(w, "resnet18-w4-imagenet-train", m, torch.randn(2, 3, 64, 64), True,
             {"kind": "resnet", "arch": "resnet18-w4", "imagenet": True, "classes": 5})
    w.save()


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if torch.__version__.split(".")[:2] != ["1", "13"]:
        print("warning: fixtures were made with PyTorch 1.13, this is", torch.__version__, file=sys.stderr)
    layers()
    resnets()
