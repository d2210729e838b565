#!/usr/bin/python3
"""Writes testdata/losses.json: loss values and gradients with respect to
the inputs, computed with PyTorch 1.13 (in float64 from float32 inputs).

Run from this directory:  /usr/bin/python3 gen_fixtures.py
The Go tests only read the JSON; they never need torch.
"""
import json
import math

import torch
import torch.nn.functional as F

torch.manual_seed(7)


def leaf(t):
    """A float64 leaf holding float32-representable values."""
    return t.float().double().requires_grad_(True)


def unit(*shape):
    return F.normalize(torch.randn(*shape), dim=1)


def lse_general(pos, neg, eps):
    """-pos + log(eps*exp(pos) + sum(exp(neg))), row-wise (paper Eq. 17)."""
    terms = [neg]
    if eps > 0:
        terms.insert(0, (pos + math.log(eps))[:, None])
    return -pos + torch.logsumexp(torch.cat(terms, 1), 1)


def infonce_ref(q, k, negs, tau, eps, batch_neg):
    pos = (q * k).sum(1) / tau
    neg = []
    if batch_neg:
        s = q @ k.T / tau
        b = q.shape[0]
        off = ~torch.eye(b, dtype=torch.bool)
        neg.append(s[off].view(b, b - 1))
    if negs is not None:
        neg.append(q @ negs.T / tau)
    neg = torch.cat(neg, 1)
    if eps == 1:  # the standard form: cross-entropy with the positive at index 0
        logits = torch.cat([pos[:, None], neg], 1)
        return F.cross_entropy(logits, torch.zeros(q.shape[0], dtype=torch.long))
    return lse_general(pos, neg, eps).mean()


def ntxent_ref(z1, z2, negs, tau, eps, batch_neg):
    b = z1.shape[0]
    z = torch.cat([z1, z2], 0)
    s = z @ z.T / tau
    target = torch.cat([torch.arange(b) + b, torch.arange(b)])
    pos = s[torch.arange(2 * b), target]
    if eps == 1 and batch_neg:  # SimCLR's reference form
        s = s.masked_fill(torch.eye(2 * b, dtype=torch.bool), float("-inf"))
        if negs is not None:
            s = torch.cat([s, z @ negs.T / tau], 1)
        return F.cross_entropy(s, target)
    neg = []
    if batch_neg:
        keep = ~torch.eye(2 * b, dtype=torch.bool)
        keep[torch.arange(2 * b), target] = False
        neg.append(s[keep].view(2 * b, 2 * b - 2))
    if negs is not None:
        neg.append(z @ negs.T / tau)
    return lse_general(pos, torch.cat(neg, 1), eps).mean()


def byol_ref(p, z):
    p, z = F.normalize(p, dim=-1), F.normalize(z, dim=-1)
    return (2 - 2 * (p * z).sum(dim=-1)).mean()


def barlow_ref(z1, z2, lambd):
    # facebookresearch/barlowtwins main.py: BatchNorm1d(affine=False) in
    # training mode (batch statistics, biased variance, eps 1e-5).
    bn = torch.nn.BatchNorm1d(z1.shape[1], affine=False).double()
    c = bn(z1).T @ bn(z2)
    c = c / z1.shape[0]
    on_diag = torch.diagonal(c).add(-1).pow(2).sum()
    n = c.shape[0]
    off = c.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()
    return on_diag + lambd * off.pow(2).sum()


def record(name, kind, params, inputs, fn, consts=()):
    leaves = {k: leaf(v) if k not in consts else v.float().double() for k, v in inputs.items()}
    loss = fn(**leaves)
    loss.backward()
    return {
        "name": name,
        "kind": kind,
        "params": params,
        "inputs": {k: {"shape": list(v.shape), "data": v.detach().float().flatten().tolist()} for k, v in leaves.items()},
        "loss": loss.item(),
        "grads": {k: v.grad.flatten().tolist() for k, v in leaves.items() if k not in consts},
    }


def main():
    cases = []
    # Cross-entropy.
    logits = torch.randn(6, 5) * 2
    labels = [0, 4, 2, 2, 1, 3]
    cases.append(record("ce", "cross_entropy", {"labels": labels}, {"logits": logits},
                        lambda logits: F.cross_entropy(logits, torch.tensor(labels))))
    big = torch.randn(4, 10) * 30  # large logits: stability
    cases.append(record("ce_large", "cross_entropy", {"labels": [9, 0, 3, 3]}, {"logits": big},
                        lambda logits: F.cross_entropy(logits, torch.tensor([9, 0, 3, 3]))))

    # InfoNCE (MoCo form and the paper's variants).
    B, D, N = 5, 8, 7
    for tau, eps, batch_neg, with_mem in [(0.5, 1, False, True), (0.5, 0, False, True), (0.2, 1, True, True),
                                          (0.5, 0, True, True), (0.5, 1, True, False), (0.5, 0, True, False),
                                          (0.3, 0.5, True, True)]:
        name = f"infonce_tau{tau}_eps{eps}_batch{int(batch_neg)}_mem{int(with_mem)}"
        inputs = {"q": unit(B, D), "k": unit(B, D)}
        if with_mem:
            inputs["negatives"] = unit(N, D)
        params = {"tau": tau, "eps": eps, "batch_negatives": batch_neg}
        cases.append(record(name, "infonce", params, inputs,
                            lambda q, k, negatives=None: infonce_ref(q, k, negatives, tau, eps, batch_neg),
                            consts=("negatives",)))

    # NT-Xent (SimCLR) and D-SimCLR's extra memory negatives.
    for tau, eps, batch_neg, with_mem in [(0.5, 1, True, False), (0.1, 1, True, False), (0.5, 1, True, True),
                                          (0.5, 0, True, True), (0.5, 1, False, True), (0.5, 0, True, False)]:
        name = f"ntxent_tau{tau}_eps{eps}_batch{int(batch_neg)}_mem{int(with_mem)}"
        inputs = {"z1": unit(B, D), "z2": unit(B, D)}
        if with_mem:
            inputs["negatives"] = unit(N, D)
        params = {"tau": tau, "eps": eps, "batch_negatives": batch_neg}
        cases.append(record(name, "ntxent", params, inputs,
                            lambda z1, z2, negatives=None: ntxent_ref(z1, z2, negatives, tau, eps, batch_neg),
                            consts=("negatives",)))

    # BYOL's normalised MSE (unnormalised inputs).
    cases.append(record("byol", "byol", {}, {"p": torch.randn(6, 9), "z": torch.randn(6, 9) * 3}, byol_ref))

    # Barlow Twins.
    for lambd in [5e-3, 0.1]:
        cases.append(record(f"barlow_{lambd}", "barlow", {"lambda": lambd},
                            {"z1": torch.randn(8, 6) * 2 + 1, "z2": torch.randn(8, 6)},
                            lambda z1, z2: barlow_ref(z1, z2, lambd)))

    with open("testdata/losses.json", "w") as f:
        json.dump(cases, f, indent=0)


if __name__ == "__main__":
    main()
