#!/usr/bin/python3
"""Peer benchmark of `duelctl bench step --method simclr|moco`: the same
self-supervised training step in PyTorch.

The step is duelctl's cpu-small preset's, on fixed random views of 32x32
images, SGD (lr 0.1, momentum 0.9) as `bench step` sets it:

  simclr  both views through a CIFAR-stem ResNet (torchvision's definition,
          from nn/gen_fixtures.py, fc removed) and one Linear projection into
          256, L2-normalised, NT-Xent over the 2B rows (tau 0.5).
  moco    MoCo v2 asymmetric: the queries (view 0) through the encoder and
          its Linear projection, the keys (view 1) through the momentum
          copies without gradient, the key batch shuffled across 4 ghost
          BatchNorm groups (MoCo's SplitBatchNorm, in both encoders, as the
          preset's --bn-splits 4 --shuffle-bn); InfoNCE (tau 0.5) of each
          query against its key and a queue of 2048 rows; then the EMA
          update (0.99) of the momentum copies and the enqueue.

With --duelctl BIN it then runs `BIN bench step --method M` with the same
arguments and prints the ratio Go / PyTorch. Run PyTorch at its best, as
bench/RESULTS.md does:

    env -u OPENBLAS_CORETYPE \\
        GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184 \\
        /usr/bin/python3 bench/ssl_step_pytorch.py --method moco --duelctl ./duelctl

Prints one JSON object as its last line.
"""
import argparse
import copy
import json
import os
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nn"))
import gen_fixtures  # noqa: E402  (torchvision's ResNet in plain torch)
from step_pytorch import run_duelctl, time_steps  # noqa: E402  (the supervised step's peer)


class SplitBatchNorm(nn.BatchNorm2d):
    """Ghost BatchNorm over `splits` groups of the batch (MoCo's demo)."""

    def __init__(self, bn, splits):
        super().__init__(bn.num_features)
        self.splits = splits

    def forward(self, x):
        n, c, h, w = x.shape
        if not self.training:
            return super().forward(x)
        s = self.splits
        rm = self.running_mean.repeat(s)
        rv = self.running_var.repeat(s)
        out = F.batch_norm(x.view(-1, c * s, h, w), rm, rv, self.weight.repeat(s), self.bias.repeat(s),
                           True, self.momentum, self.eps).view(n, c, h, w)
        self.running_mean.data.copy_(rm.view(s, c).mean(dim=0))
        self.running_var.data.copy_(rv.view(s, c).mean(dim=0))
        return out


def ghost(module, splits):
    """Replaces every BatchNorm2d of module by a SplitBatchNorm."""
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(module, name, SplitBatchNorm(child, splits))
        else:
            ghost(child, splits)
    return module


def encoder(arch):
    base, _, w = arch.partition("-w")
    depth = int(base.removeprefix("resnet"))
    m = gen_fixtures.resnet(depth, width=int(w) if w else 64, cifar=True, num_classes=10)
    feat = m.fc.in_features
    m.fc = nn.Identity()
    return m, feat


def nt_xent(z1, z2, tau):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = z @ z.t() / tau
    sim.fill_diagonal_(float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, target)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", default="simclr", choices=["simclr", "moco"])
    ap.add_argument("--arch", default="resnet18-w16")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duelctl", help="duelctl binary to run with the same arguments for the ratio")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    tau, dim, queue_len, splits, ema = 0.5, 256, 2048, 4, 0.99

    enc, feat = encoder(a.arch)
    proj = nn.Linear(feat, dim)
    if a.method == "moco":
        ghost(enc, splits)
        kenc, kproj = copy.deepcopy(enc), copy.deepcopy(proj)
        for p in list(kenc.parameters()) + list(kproj.parameters()):
            p.requires_grad_(False)
        queue = F.normalize(torch.randn(queue_len, dim), dim=1)
    params = list(enc.parameters()) + list(proj.parameters())
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    enc.train()
    x1, x2 = torch.randn(a.batch, 3, 32, 32), torch.randn(a.batch, 3, 32, 32)

    def step():
        nonlocal queue
        if a.method == "simclr":
            loss = nt_xent(proj(enc(x1)), proj(enc(x2)), tau)
        else:
            q = F.normalize(proj(enc(x1)), dim=1)
            with torch.no_grad():
                perm = torch.randperm(a.batch)  # shuffle BN across the ghost groups
                k = F.normalize(kproj(kenc(x2[perm])), dim=1)[torch.argsort(perm)]
            pos = (q * k).sum(dim=1, keepdim=True)
            neg = q @ queue.t()
            loss = F.cross_entropy(torch.cat([pos, neg], dim=1) / tau, torch.zeros(a.batch, dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.method == "moco":
            with torch.no_grad():
                for pk, pq in zip(list(kenc.parameters()) + list(kproj.parameters()), params):
                    pk.mul_(ema).add_(pq, alpha=1 - ema)
                queue = torch.cat([k, queue])[:queue_len]

    times, cpu_ms = time_steps(step, a.warmup, a.steps)
    step_ms = statistics.median(times)
    res = {"method": a.method, "arch": a.arch, "batch": a.batch, "threads": torch.get_num_threads(), "torch": torch.__version__,
           "img_per_s": a.batch / step_ms * 1e3, "step_ms": step_ms, "step_ms_all": times, "cpu_ms_per_step": cpu_ms}
    print(f"pytorch {a.method} {a.arch} batch {a.batch} ({res['threads']} threads): step {step_ms:.1f} ms = "
          f"{res['img_per_s']:.1f} img/s; CPU {cpu_ms:.0f} ms per step")
    if a.duelctl:
        cmd = [a.duelctl, "bench", "step", "--method", a.method, "--arch", a.arch, "--batch", str(a.batch),
               "--steps", str(a.steps), "--warmup", str(a.warmup), "--json"]
        go = run_duelctl(cmd, a.threads)
        res["go"] = go
        res["ratio"] = go["img_per_s"] / res["img_per_s"]
        print(f"ratio go/pytorch: step {res['ratio']:.2f}x ({go['step_ms']:.1f} vs {step_ms:.1f} ms)")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
