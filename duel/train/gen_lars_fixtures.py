#!/usr/bin/python3
"""Writes testdata/lars_solo.json for lars_parity_test.go: solo-learn's
LARS as duelctl train --optimizer lars applies it, on the parameters of a
real model.

  - "params": every trainable parameter of BYOL as solo-learn builds it
    (torchvision 0.14 resnet18 with the CIFAR stem: conv1 3x3, no fc; the
    projector and predictor Linear, BatchNorm1d, ReLU, Linear at hidden 32,
    output 32), in order, with its shape and whether solo-learn's LARS
    (exclude_bias_n_norm=True) leaves it out of the adaptation and the
    weight decay: p.ndim == 1.
  - "steps": a few LARS steps (momentum 0.9, weight decay 1e-4; eta 1e-3
    without clip_lr, solo-learn's LARS defaults and its ImageNet scripts;
    and eta 0.02 with clip_lr, its CIFAR and ImageNet-100 scripts) on a
    subset of those parameters from fixed values and fixed gradients, the
    rate of each step from solo-learn's LinearWarmupCosineAnnealingLR
    (interval "step", warmup_start_lr = base / warmup: see
    nn/optim/gen_schedule_fixtures.py) as Lightning drives it.

The LARS step is transcribed here from solo-learn's solo/utils/lars.py:
for a parameter that is not excluded, when |p| and |g| are non-zero,
    lars_lr = eta |p| / (|g| + wd |p| + eps)      (clip_lr: min(lars_lr / lr, 1))
    d = (g + wd p) lars_lr
else d = g; then buf = d (first step) or momentum buf + d; p -= lr buf.

Run from this directory:  /usr/bin/python3 gen_lars_fixtures.py
The Go tests only read the JSON; they never need torch.
"""
import json
import math

import numpy as np
import torch
import torchvision


def f32(t):
    """Shortest decimal strings that read back as the same float32."""
    return [float(repr(np.float32(v))) for v in t.detach().flatten().tolist()]


def byol_params():
    enc = torchvision.models.resnet18()
    enc.fc = torch.nn.Identity()
    enc.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    enc.maxpool = torch.nn.Identity()

    def head(i, h, o):
        return torch.nn.Sequential(torch.nn.Linear(i, h), torch.nn.BatchNorm1d(h), torch.nn.ReLU(), torch.nn.Linear(h, o))
    parts = [("", enc), ("projector", head(512, 32, 32)), ("predictor", head(32, 32, 32))]
    return [{"part": part, "name": n, "shape": list(p.shape), "excluded": p.ndim == 1}
            for part, m in parts for n, p in m.named_parameters()]


def lars_step(params, grads, bufs, lr, momentum, wd, eta, clip, eps=1e-8):
    with torch.no_grad():
        for i, (p, g) in enumerate(zip(params, grads)):
            d = g
            pn, gn = torch.norm(p), torch.norm(g)
            if p.ndim != 1 and pn != 0 and gn != 0:
                r = eta * pn / (gn + pn * wd + eps)
                if clip:
                    r = min(r / lr, 1)
                d = (d + wd * p) * r
            if bufs[i] is None:
                bufs[i] = d.clone()
            else:
                bufs[i].mul_(momentum).add_(d)
            p.add_(bufs[i], alpha=-lr)


def rates(base, warmup, total, steps):
    """LinearWarmupCosineAnnealingLR's chainable form, stepped per batch,
    warmup_start_lr = base / warmup, eta_min 0."""
    out, lr = [], 0.0
    for e in range(steps):
        if e == 0:
            lr = base / warmup
        elif e < warmup:
            lr = lr + (base - base / warmup) / (warmup - 1)
        elif e == warmup:
            lr = base
        else:
            lr = lr * (1 + math.cos(math.pi * (e - warmup) / (total - warmup))) / (
                1 + math.cos(math.pi * (e - warmup - 1) / (total - warmup)))
        out.append(lr)
    return out


SUBSET = [("", "bn1.weight"), ("", "bn1.bias"), ("", "layer1.0.bn2.bias"),
          ("projector", "1.weight"), ("projector", "1.bias"), ("projector", "3.weight"),
          ("projector", "3.bias"), ("predictor", "0.bias")]


def main():
    params = byol_params()
    shapes = {(p["part"], p["name"]): p["shape"] for p in params}
    g = torch.Generator().manual_seed(7)
    STEPS, BASE, WARMUP, TOTAL = 4, 0.4, 2, 6
    init = [torch.randn(shapes[k], generator=g) for k in SUBSET]
    grads = [[torch.randn(shapes[k], generator=g) * (0.05 if s % 2 else 1.0) for k in SUBSET] for s in range(STEPS)]
    init = [torch.tensor(f32(t)).view(t.shape) for t in init]
    grads = [[torch.tensor(f32(t)).view(t.shape) for t in gs] for gs in grads]
    lrs = rates(BASE, WARMUP, TOTAL, STEPS)
    variants = {}
    for name, eta, clip in [("imagenet", 1e-3, False), ("cifar", 0.02, True)]:
        ps = [t.clone() for t in init]
        bufs = [None] * len(ps)
        for s in range(STEPS):
            lars_step(ps, grads[s], bufs, lrs[s], 0.9, 1e-4, eta, clip)
        variants[name] = {"eta": eta, "clip_lr": clip, "params": [f32(p) for p in ps]}
    out = {
        "params": params,
        "subset": [{"part": p, "name": n} for p, n in SUBSET],
        "lr": BASE, "warmup": WARMUP, "total": TOTAL, "momentum": 0.9, "wd": 1e-4, "step_lr": lrs,
        "init": [f32(t) for t in init],
        "grads": [[f32(t) for t in gs] for gs in grads],
        "variants": variants,
    }
    with open("testdata/lars_solo.json", "w") as f:
        json.dump(out, f)
    print("wrote testdata/lars_solo.json,", len(params), "parameters")


if __name__ == "__main__":
    main()
