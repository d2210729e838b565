#!/usr/bin/python3
"""Writes testdata/<head>.safetensors (the PyTorch module's state_dict) and
testdata/heads.json (input, output, gradients and updated running
statistics after one training-mode forward/backward) for three heads built
as torch.nn.Sequential exactly like heads.NewMLP builds them.

Run from this directory:  /usr/bin/python3 gen_fixtures.py
"""
import json
import sys

import torch
from torch import nn

sys.path.insert(0, "../safetensors")
from gen_fixture import save  # noqa: E402  (the hand-written safetensors writer)


def mlp(dims, hidden_bn=False, last_bn=False, bias=True):
    layers = []
    for i in range(1, len(dims)):
        last = i == len(dims) - 1
        layers.append(nn.Linear(dims[i - 1], dims[i], bias=bias))
        if (not last and hidden_bn) or (last and last_bn):
            layers.append(nn.BatchNorm1d(dims[i]))
        if not last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


HEADS = {
    "moco": dict(dims=[6, 10, 4]),
    "byol": dict(dims=[6, 10, 4], hidden_bn=True),
    "barlow": dict(dims=[6, 8, 8, 5], hidden_bn=True, bias=False),
    "simclr2": dict(dims=[6, 7, 3], hidden_bn=True, last_bn=True),
}


def main():
    torch.manual_seed(11)
    out = {}
    for name, spec in HEADS.items():
        m = mlp(**spec)
        with torch.no_grad():  # non-trivial BN affine parameters
            for mod in m:
                if isinstance(mod, nn.BatchNorm1d):
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.5, 0.5)
        save(m.state_dict(), {"head": name}, f"testdata/{name}.safetensors")
        x = torch.randn(8, spec["dims"][0], requires_grad=True)
        w = torch.randn(8, spec["dims"][-1])
        m.train()
        y = m(x)
        (y * w).sum().backward()
        out[name] = {
            "spec": spec,
            "names": list(m.state_dict().keys()),
            "x": x.detach().flatten().tolist(),
            "w": w.flatten().tolist(),
            "y": y.detach().flatten().tolist(),
            "dx": x.grad.flatten().tolist(),
            "grads": {n: p.grad.flatten().tolist() for n, p in m.named_parameters()},
            "buffers": {n: b.flatten().tolist() for n, b in m.named_buffers()},
        }
    with open("testdata/heads.json", "w") as f:
        json.dump(out, f, indent=0)


if __name__ == "__main__":
    main()
