#!/usr/bin/python3
"""Writes testdata/schedule.json: the learning rate of every optimisation
step under solo-learn's schedules, driven as PyTorch Lightning drives them
(optimizer.step(), then scheduler.step(); with interval "step" once per
batch, with interval "epoch" once per epoch), for schedule_parity_test.go.

WarmupCosine below is written here from the formulas of solo-learn's
solo/utils/lr_scheduler.py LinearWarmupCosineAnnealingLR (after Lightning
Bolts), in its chainable form, the one a training loop runs:
    last_epoch 0:                  warmup_start_lr
    0 < last_epoch < W:            lr + (base - warmup_start_lr) / (W - 1)
    last_epoch == W:               base
    (last_epoch - 1 - T) % (2 (T - W)) == 0:
                                   lr + (base - eta_min) (1 - cos(pi / (T - W))) / 2
    otherwise:                     eta_min + (lr - eta_min)
                                     * (1 + cos(pi (e - W) / (T - W))) / (1 + cos(pi (e - W - 1) / (T - W)))
solo-learn builds it with W = warmup_epochs * steps_per_epoch and
T = total steps (interval "step", its default), warmup_start_lr 3e-5 by
default (the base rate itself when warmup_epochs is 0), eta_min = min_lr.
MultiStepLR is PyTorch's own (solo-learn's "step" scheduler).

Run from this directory:  /usr/bin/python3 gen_schedule_fixtures.py
The Go tests only read the JSON; they never need torch.
"""
import json
import math

import torch
from torch.optim.lr_scheduler import MultiStepLR, _LRScheduler


class WarmupCosine(_LRScheduler):
    def __init__(self, optimizer, warmup, total, warmup_start_lr=0.0, eta_min=0.0):
        self.warmup, self.total = warmup, total
        self.warmup_start_lr, self.eta_min = warmup_start_lr, eta_min
        super().__init__(optimizer)

    def get_lr(self):
        e, W, T = self.last_epoch, self.warmup, self.total
        out = []
        for base, group in zip(self.base_lrs, self.optimizer.param_groups):
            lr = group["lr"]
            if e == 0:
                out.append(self.warmup_start_lr)
            elif e < W:
                out.append(lr + (base - self.warmup_start_lr) / (W - 1))
            elif e == W:
                out.append(base)
            elif (e - 1 - T) % (2 * (T - W)) == 0:
                out.append(lr + (base - self.eta_min) * (1 - math.cos(math.pi / (T - W))) / 2)
            else:
                out.append(self.eta_min + (lr - self.eta_min)
                           * (1 + math.cos(math.pi * (e - W) / (T - W)))
                           / (1 + math.cos(math.pi * (e - W - 1) / (T - W))))
        return out


def rates(make, steps, per_epoch=1):
    """The rate of each of steps optimizer steps; the scheduler steps after
    every per_epoch of them."""
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=BASE[0])
    sched = make(opt)
    out = []
    for s in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        if (s + 1) % per_epoch == 0:
            sched.step()
    return out


BASE = [0.0]


def case(name, base, steps, make, per_epoch=1, **meta):
    BASE[0] = base
    return {"name": name, "base": base, "steps": steps, "per_epoch": per_epoch,
            "lr": rates(make, steps, per_epoch), **meta}


def main():
    cases = [
        # warmup_start_lr = base / W: the Go schedule's warm-up
        case("cosine_start_base_over_w", 0.05, 16, lambda o: WarmupCosine(o, 4, 12, 0.05 / 4, 0.001),
             warmup=4, total=12, min_lr=0.001, warmup_start_lr=0.05 / 4),
        # solo-learn's default warmup_start_lr
        case("cosine_solo_default_start", 0.05, 12, lambda o: WarmupCosine(o, 4, 12, 3e-5, 0.001),
             warmup=4, total=12, min_lr=0.001, warmup_start_lr=3e-5),
        # warmup_epochs 0: solo-learn starts at the base rate
        case("cosine_no_warmup", 0.4, 10, lambda o: WarmupCosine(o, 0, 10, 0.4, 0.0),
             warmup=0, total=10, min_lr=0.0, warmup_start_lr=0.4),
        # a long run: the chainable form's rounding
        case("cosine_long", 0.4, 2000, lambda o: WarmupCosine(o, 100, 2000, 0.4 / 100, 0.0),
             warmup=100, total=2000, min_lr=0.0, warmup_start_lr=0.4 / 100),
        # interval "epoch", 5 steps an epoch: the rate changes once an epoch
        case("cosine_epoch_interval", 1e-3, 50, lambda o: WarmupCosine(o, 3, 10, 1e-3 / 3, 0.0), per_epoch=5,
             warmup=3, total=10, min_lr=0.0, warmup_start_lr=1e-3 / 3),
        # MultiStepLR once per step and once per epoch
        case("multistep", 0.1, 12, lambda o: MultiStepLR(o, [3, 7], gamma=0.1), milestones=[3, 7], gamma=0.1),
        case("multistep_epoch", 1.0, 20, lambda o: MultiStepLR(o, [2, 3], gamma=0.5), per_epoch=4,
             milestones=[2, 3], gamma=0.5),
    ]
    with open("testdata/schedule.json", "w") as f:
        json.dump({"cases": cases}, f)
    print("wrote testdata/schedule.json")


if __name__ == "__main__":
    main()
