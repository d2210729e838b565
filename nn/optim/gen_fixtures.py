#!/usr/bin/python3
"""Writes testdata/optim.json: 5 optimizer steps on fixed parameters with
fixed gradients, run with PyTorch 1.13 (SGD, Adam, AdamW) and with a LARS
written here by hand in the standard solo-learn formulation.

Run from this directory:  /usr/bin/python3 gen_fixtures.py
The Go tests only read the JSON; they never need torch.
"""
import json

import torch
from torch.optim import SGD, Adam, AdamW, Optimizer


class LARS(Optimizer):
    """LARS as in solo-learn (solo/utils/lars.py), after NVIDIA apex:
    for adapted parameters (not excluded), when both norms are non-zero,
        lars_lr = eta * ||p|| / (||g|| + wd * ||p|| + eps)
        d = (g + wd * p) * lars_lr          (clip_lr: lars_lr = min(lars_lr / lr, 1))
    excluded parameters (1-d: biases and norm layers) get d = g (no weight
    decay, no adaptation); then SGD with momentum:
        buf = d (first step) or momentum * buf + (1 - dampening) * d
        d = d + momentum * buf (nesterov) or buf
        p -= lr * d
    """

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 eta=1e-3, eps=1e-8, clip_lr=False, exclude_bias_n_norm=True):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, eta=eta, eps=eps, clip_lr=clip_lr,
                        exclude_bias_n_norm=exclude_bias_n_norm)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            wd, momentum, dampening = group["weight_decay"], group["momentum"], group["dampening"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad
                p_norm = torch.norm(p.data)
                g_norm = torch.norm(p.grad.data)
                if p.ndim != 1 or not group["exclude_bias_n_norm"]:
                    if p_norm != 0 and g_norm != 0:
                        lars_lr = p_norm / (g_norm + p_norm * wd + group["eps"])
                        lars_lr *= group["eta"]
                        if group["clip_lr"]:
                            lars_lr = min(lars_lr / group["lr"], 1)
                        d_p = d_p.add(p, alpha=wd)
                        d_p *= lars_lr
                if momentum != 0:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        buf = state["momentum_buffer"] = torch.clone(d_p).detach()
                    else:
                        buf = state["momentum_buffer"]
                        buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
                    d_p = d_p.add(buf, alpha=momentum) if group["nesterov"] else buf
                p.add_(d_p, alpha=-group["lr"])


SHAPES = {"0.weight": (4, 3), "0.bias": (4,), "1.weight": (4,), "1.bias": (4,), "2.weight": (2, 4)}
STEPS = 5

CONFIGS = {
    "sgd": (SGD, dict(lr=0.1)),
    "sgd_momentum_wd": (SGD, dict(lr=0.1, momentum=0.9, weight_decay=5e-4)),
    "sgd_nesterov_wd": (SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2)),
    "sgd_dampening": (SGD, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=1e-3)),
    "adam": (Adam, dict(lr=0.05)),
    "adam_wd": (Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2)),
    "adamw": (AdamW, dict(lr=0.01, weight_decay=0.05)),
    "lars": (LARS, dict(lr=5.0, momentum=0.9, weight_decay=1e-2, eta=1e-3)),
    "lars_nesterov_clip": (LARS, dict(lr=0.5, momentum=0.9, nesterov=True, weight_decay=1e-4, eta=0.02, clip_lr=True)),
}


def main():
    g = torch.Generator().manual_seed(1234)
    init = {n: torch.randn(s, generator=g) for n, s in SHAPES.items()}
    grads = [{n: torch.randn(s, generator=g) * (0.1 if i % 2 else 1.0) for n, s in SHAPES.items()} for i in range(STEPS)]
    out = {
        "shapes": {n: list(s) for n, s in SHAPES.items()},
        "init": {n: t.flatten().tolist() for n, t in init.items()},
        "grads": [{n: t.flatten().tolist() for n, t in gs.items()} for gs in grads],
        "configs": {},
    }
    for name, (cls, kw) in CONFIGS.items():
        params = {n: t.clone().requires_grad_(True) for n, t in init.items()}
        opt = cls(list(params.values()), **kw)
        for gs in grads:
            for n, p in params.items():
                p.grad = gs[n].clone()
            opt.step()
        cfg = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kw.items()}
        out["configs"][name] = {
            "optimizer": cls.__name__,
            "hyper": cfg,
            "params": {n: p.detach().flatten().tolist() for n, p in params.items()},
        }
    with open("testdata/optim.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
