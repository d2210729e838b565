#!/usr/bin/python3
"""Peer benchmark of `duelctl bench data`: the paper's augmentation recipe as
batched tensor ops in plain PyTorch (torchvision is not installed here).

For every batch of --batch uint8 32x32 RGB images it makes two views with:
RandomResizedCrop(32, scale (0.08, 1), ratio (3/4, 4/3)) as one affine
grid_sample per view (bilinear, align_corners=False, crop parameters drawn as
torchvision's get_params, 10 attempts, vectorised), RandomHorizontalFlip(0.75)
folded into the affine grid, RandomApply(ColorJitter(0.4, 0.4, 0.4, 0.1),
p=0.5) (brightness, contrast, saturation, hue through HSV: torchvision's
_rgb2hsv and a closed form of its _hsv2rgb, faster on CPU than its einsum; per-image factors,
one random op order per batch, computed for all images and selected with a
mask), RandomGrayscale(0.2) and Normalize. It prints views per second
(median of --repeats) and, with --duelctl BIN, runs `BIN bench data` after
each PyTorch round (so both sides see the same load) and prints the ratio
Go / PyTorch of the medians.

    /usr/bin/python3 bench/data_pytorch.py --duelctl ./duelctl

Prints one JSON object as its last line.
"""
import argparse
import json
import math
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
GRAY = torch.tensor([0.2989, 0.587, 0.114]).view(1, 3, 1, 1)  # torchvision's tensor rgb_to_grayscale


def crop_params(n, h, w, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    area = h * w
    target = area * torch.empty(n, 10).uniform_(*scale)
    aspect = torch.exp(torch.empty(n, 10).uniform_(math.log(ratio[0]), math.log(ratio[1])))
    cw = torch.round(torch.sqrt(target * aspect))
    ch = torch.round(torch.sqrt(target / aspect))
    ok = (cw > 0) & (cw <= w) & (ch > 0) & (ch <= h)
    first = ok.float().argmax(dim=1, keepdim=True)
    anyok = ok.any(dim=1)
    cw = torch.where(anyok, cw.gather(1, first).squeeze(1), torch.full((n,), float(w)))
    ch = torch.where(anyok, ch.gather(1, first).squeeze(1), torch.full((n,), float(h)))
    top = torch.floor(torch.rand(n) * (h - ch + 1))
    left = torch.floor(torch.rand(n) * (w - cw + 1))
    return top, left, ch, cw


def crop_flip(x, size, flip_p=0.75):
    n, _, h, w = x.shape
    top, left, ch, cw = crop_params(n, h, w)
    sx = cw / w
    sx = torch.where(torch.rand(n) < flip_p, -sx, sx)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = sx
    theta[:, 0, 2] = (2 * left + cw) / w - 1
    theta[:, 1, 1] = ch / h
    theta[:, 1, 2] = (2 * top + ch) / h - 1
    grid = F.affine_grid(theta, (n, 3, size, size), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def rgb2hsv(img):
    r, g, b = img.unbind(dim=1)
    maxc = torch.max(img, dim=1)[0]
    minc = torch.min(img, dim=1)[0]
    eqc = maxc == minc
    cr = maxc - minc
    ones = torch.ones_like(maxc)
    s = cr / torch.where(eqc, ones, maxc)
    crd = torch.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = torch.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return torch.stack((h, s, maxc), dim=1)


def hsv2rgb(img):
    # Closed form of torchvision's _hsv2rgb (its einsum over a one-hot sector
    # mask is several times slower on CPU): channel n in (5, 3, 1) for
    # (R, G, B) is v - v*s*clamp(min(k, 4-k), 0, 1), k = (n + 6h) mod 6.
    h, s, v = img.unbind(dim=1)
    h6 = (h * 6.0).unsqueeze(1) + torch.tensor([5.0, 3.0, 1.0]).view(1, 3, 1, 1)
    k = torch.remainder(h6, 6.0)
    ramp = torch.clamp(torch.minimum(k, 4.0 - k), 0.0, 1.0)
    v = v.unsqueeze(1)
    return v - (v * s.unsqueeze(1)) * ramp


def jitter(x, p=0.5, bri=0.4, con=0.4, sat=0.4, hue=0.1):
    n = x.shape[0]
    y = x
    for op in torch.randperm(4).tolist():
        if op == 0:
            y = (y * torch.empty(n, 1, 1, 1).uniform_(1 - bri, 1 + bri)).clamp(0, 1)
        elif op == 1:
            f = torch.empty(n, 1, 1, 1).uniform_(1 - con, 1 + con)
            mean = (y * GRAY).sum(1, keepdim=True).mean(dim=(2, 3), keepdim=True)
            y = (f * y + (1 - f) * mean).clamp(0, 1)
        elif op == 2:
            f = torch.empty(n, 1, 1, 1).uniform_(1 - sat, 1 + sat)
            gray = (y * GRAY).sum(1, keepdim=True)
            y = (f * y + (1 - f) * gray).clamp(0, 1)
        else:
            hsv = rgb2hsv(y)
            hsv[:, 0] = torch.remainder(hsv[:, 0] + torch.empty(n, 1, 1).uniform_(-hue, hue), 1.0)
            y = hsv2rgb(hsv)
    m = (torch.rand(n) < p).view(n, 1, 1, 1)
    return torch.where(m, y, x)


def grayscale(x, p=0.2):
    n = x.shape[0]
    g = (x * GRAY).sum(1, keepdim=True).expand_as(x)
    return torch.where((torch.rand(n) < p).view(n, 1, 1, 1), g, x)


def view(u8, size):
    x = u8.permute(0, 3, 1, 2).float().div_(255)
    x = crop_flip(x, size)
    x = jitter(x)
    x = grayscale(x)
    return (x - MEAN) / STD


def run(batch, size, seconds):
    imgs = torch.randint(0, 256, (batch, 32, 32, 3), dtype=torch.uint8)
    view(imgs, size), view(imgs, size)  # warm-up
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        v1, v2 = view(imgs, size), view(imgs, size)
        n += v1.shape[0] + v2.shape[0]
    return n / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duelctl", help="duelctl binary to compare with")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rates, go_rates = [], []
    for r in range(a.repeats):
        # Alternate the two sides so that both see the same machine load.
        rates.append(run(a.batch, a.size, a.seconds))
        line = f"round {r + 1}: pytorch {rates[-1]:.0f} views/s"
        if a.duelctl:
            res = subprocess.run([a.duelctl, "bench", "data", "--json", "--batch", str(a.batch), "--size", str(a.size),
                                  "--seconds", str(a.seconds), "--repeats", "1"],
                                 check=True, capture_output=True, text=True)
            go_rates.append(json.loads(res.stdout.strip().splitlines()[-1])["views_per_s"])
            line += f", go {go_rates[-1]:.0f} views/s"
        print(line)
    pt = statistics.median(rates)
    out = {"pytorch_views_per_s": pt, "threads": a.threads, "batch": a.batch}
    print(f"pytorch ({a.threads} threads, batch {a.batch}): median {pt:.0f} views/s")
    if a.duelctl:
        go = statistics.median(go_rates)
        out["go_views_per_s"] = go
        out["ratio"] = go / pt
        print(f"go: median {go:.0f} views/s; ratio go/pytorch {out['ratio']:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
