"""Writes torch_grads.json: forward values and gradients of composite
expressions computed by PyTorch (float64), for autograd/torch_test.go.

Run from the repository root with PyTorch 1.13:
    /usr/bin/python3 autograd/testdata/gen_torch.py
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def rnd(*shape, lo=-1.0, hi=1.0):
    # Rounded to float32 so that both sides start from the same values.
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).float().double()


def mlp_ce(x, w1, b1, w2, b2, onehot):
    h = torch.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    return -(torch.log_softmax(logits, 1) * onehot).sum(1).mean()


def contrastive(q, k):
    qn = F.normalize(q, dim=1)
    kn = F.normalize(k, dim=1)
    lp = torch.log_softmax(qn @ kn.t() / 0.2, -1)
    return -(lp * torch.eye(q.shape[0], dtype=q.dtype)).sum(1).mean()


def broadcast_mix(a, b, c):
    # (2,3,4), (3,1), (4)
    y = torch.tanh(a * b) / (torch.sigmoid(c) + 1) - a / (b * b + 1)
    y = y + torch.sqrt(torch.abs(a) + 1).log() * c.exp()
    return (y.pow(3) - y.square()).sum(dim=2).mean(0).max(0)[0]


def axis_ops(x, w):
    # (3,4) along axis 0 and 1
    s = torch.softmax(x, 0) * w
    l = torch.log_softmax(x * 3, 1)
    n = F.normalize(x, dim=0)
    return (s + l * n).sum(0, keepdim=True).sum()


def batch_ops(a, b, c):
    # a (3,2,4), b (1,4,5), c (3,5,2)
    ab = torch.bmm(a, b.expand(3, 4, 5))  # (3,2,5)
    t = ab.permute(0, 2, 1)  # (3,5,2)
    cat = torch.cat([t, c, t[:, 1:3, :]], 1)  # (3,12,2)
    return cat.max(1)[0].sum() + (cat[:, 2:7, :] * 0.5).mean() - cat.transpose(1, 2).reshape(3, -1).sum(1).mean()


def cross_entropy(x):
    return F.cross_entropy(x * 2, torch.tensor([1, 0, 4])) + F.cross_entropy(x.t(), torch.tensor([2, 2, 0, 1, 2]))


cases = []


def add(name, fn, inputs, const=()):
    ts = [t.clone().requires_grad_(i not in const) for i, t in enumerate(inputs)]
    y = fn(*ts)
    y.backward()
    cases.append({
        "name": name,
        "inputs": [{"shape": list(t.shape), "data": t.detach().flatten().tolist()} for t in ts],
        "const": list(const),
        "value": y.item(),
        "grads": [None if t.grad is None else t.grad.flatten().tolist() for t in ts],
    })


onehot = torch.zeros(4, 3, dtype=torch.float64)
onehot[torch.arange(4), torch.tensor([2, 0, 1, 2])] = 1
add("mlp_ce", mlp_ce, [rnd(4, 5), rnd(5, 6), rnd(6, lo=-.1, hi=.1), rnd(6, 3), rnd(3, lo=-.1, hi=.1), onehot], const=(5,))
add("contrastive", contrastive, [rnd(4, 8), rnd(4, 8)])
add("broadcast_mix", broadcast_mix, [rnd(2, 3, 4), rnd(3, 1, lo=.2, hi=1.2), rnd(4)])
add("axis_ops", axis_ops, [rnd(3, 4, lo=-2, hi=2), rnd(3, 4)])
add("cross_entropy", cross_entropy, [rnd(3, 5, lo=-2, hi=2)])
add("batch_ops", batch_ops, [rnd(3, 2, 4), rnd(1, 4, 5), rnd(3, 5, 2)])
# docs/extending.md's worked example, over both signs and large |x|.
add("softplus", lambda x, w: (F.softplus(x) * w).sum(), [rnd(3, 5, lo=-30, hi=30), rnd(3, 5)])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_grads.json")
with open(path + ".tmp", "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f)
os.replace(path + ".tmp", path)
print("wrote", path)
