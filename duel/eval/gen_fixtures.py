#!/usr/bin/python3
"""Writes testdata/linear_probe.json: the paper's linear probe (Appendix E:
one nn.Linear on frozen features, cross-entropy, torch.optim.Adam with
weight_decay) run with PyTorch 1.13 from fixed initial weights over fixed
per-epoch row orders, batches taken in order with a shorter last batch
(DataLoader drop_last=False). The learning rate and weight decay are larger
than the paper's so that every step moves the weights visibly.

Run from this directory:  /usr/bin/python3 gen_fixtures.py
The Go tests only read the JSON; they never need torch.
"""
import json

import torch

torch.manual_seed(0)
N, D, C, TEST = 50, 6, 4, 20
EPOCHS, BATCH, LR, WD = 3, 16, 0.05, 1e-2

x = torch.randn(N, D)
y = torch.randint(0, C, (N,))
xt = torch.randn(TEST, D)
yt = torch.randint(0, C, (TEST,))
lin = torch.nn.Linear(D, C)
w0, b0 = lin.weight.detach().clone(), lin.bias.detach().clone()
perms = [torch.randperm(N) for _ in range(EPOCHS)]

opt = torch.optim.Adam(lin.parameters(), lr=LR, weight_decay=WD)
losses = []
for perm in perms:
    total = 0.0
    for s in range(0, N, BATCH):
        idx = perm[s:s + BATCH]
        loss = torch.nn.functional.cross_entropy(lin(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    losses.append(total / N)
with torch.no_grad():
    logits = lin(xt)

out = {
    "n": N, "d": D, "classes": C, "epochs": EPOCHS, "batch": BATCH, "lr": LR, "wd": WD,
    "x": x.flatten().tolist(), "y": y.tolist(), "x_test": xt.flatten().tolist(), "y_test": yt.tolist(),
    "weight0": w0.flatten().tolist(), "bias0": b0.tolist(),
    "perms": [p.tolist() for p in perms],
    "weight": lin.weight.detach().flatten().tolist(), "bias": lin.bias.detach().tolist(),
    "epoch_loss": losses, "test_logits": logits.flatten().tolist(),
    "top1": (logits.argmax(1) == yt).float().mean().item(),
}
with open("testdata/linear_probe.json", "w") as f:
    json.dump(out, f)
print("wrote testdata/linear_probe.json, top1", out["top1"])
