#!/usr/bin/python3
"""Writes testdata/knn_solo.json and testdata/linear_solo.json: the kNN
classifier and a linear probe as a solo-learn user runs them, for
solo_parity_test.go.

testdata/knn_solo.json holds feature sets (random rows; rows built to tie)
and, for several k, temperatures and votes, two independent transcriptions
of the weighted kNN classifier of InstDisc / solo-learn's
WeightedKNNClassifier (distance_fx "cosine"):

  - "ref", in numpy float64: rows L2-normalised (x / max(|x|, 1e-12)),
    cosine similarities, the k most similar training rows with equal
    similarities taken in increasing row order (a stable sort), each
    voting exp(sim / T) (or 1: majority) for its label; the class scores,
    the prediction (the best class, equal scores to the lower class), and
    top-1 / top-5 (the label among the 5 best classes in that order);
  - "torch", the same steps written as solo-learn writes them in PyTorch
    1.13 float32 (F.normalize, torch.mm, Tensor.topk, a one-hot of the
    neighbours' labels times exp(sim / T) summed over the neighbours,
    Tensor.sort descending, top-5 over the first min(5, k, classes) sorted
    classes). Tensor.topk orders equal similarities as it likes; the rows
    whose neighbour set then differs from the stable one are listed in
    "tie_rows".

testdata/linear_solo.json is solo-learn's linear-evaluation optimisation
(scripts/linear: torch.optim.SGD, lr 0.1 to 3 by method, momentum 0.9 as
solo/args/linear.py defaults it, weight decay 0; MultiStepLR milestones
[60, 80] gamma 0.1 stepped once per epoch) shrunk to a few epochs with
milestones [2, 4], on fixed features and fixed per-epoch row orders
(DataLoader shuffle=True, drop_last=False), from fixed initial weights;
plus a variant without momentum, with weight decay. The frozen backbone's
augmentation (RandomResizedCrop + flip per epoch) is not part of it: the
features are fixed.

Run from this directory:  /usr/bin/python3 gen_solo_fixtures.py
The Go tests only read the JSON; they never need torch.
"""
import json

import numpy as np
import torch
import torch.nn.functional as F


# ---------------------------------------------------------------- kNN

def ref_knn(xtr, ytr, xte, yte, k, T, vote, classes):
    """numpy float64 transcription with a stable tie rule."""
    def norm(x):
        x = x.astype(np.float64)
        n = np.sqrt((x * x).sum(1, keepdims=True))
        return x / np.maximum(n, 1e-12)
    tr, te = norm(xtr), norm(xte)
    k = min(k, len(ytr))
    sims = te @ tr.T
    scores = np.zeros((len(yte), classes))
    nbrs = []
    for i in range(len(yte)):
        order = np.argsort(-sims[i], kind="stable")[:k]
        nbrs.append(sorted(order.tolist()))
        for j in order:
            w = np.exp(sims[i, j] / T) if vote == "weighted" else 1.0
            scores[i, ytr[j]] += w
    rank = [np.argsort(-s, kind="stable") for s in scores]
    pred = [int(r[0]) for r in rank]
    top1 = float(np.mean([p == y for p, y in zip(pred, yte)]))
    # top-5 over the first min(5, k) classes, as solo-learn's (with k < 5
    # at most k classes have a vote).
    top5 = float(np.mean([y in r[:min(5, k, len(ytr))].tolist() for r, y in zip(rank, yte)]))
    return scores, pred, top1, top5, nbrs, sims


def torch_knn(xtr, ytr, xte, yte, k, T, classes):
    """solo-learn's steps in PyTorch float32 (cosine, weighted)."""
    tr = F.normalize(torch.from_numpy(xtr))
    te = F.normalize(torch.from_numpy(xte))
    ytr_t, yte_t = torch.from_numpy(ytr).long(), torch.from_numpy(yte).long()
    k = min(k, len(ytr))
    sim, idx = torch.mm(te, tr.t()).topk(k, largest=True, sorted=True)
    labels = torch.gather(ytr_t.view(1, -1).expand(len(yte), -1), 1, idx)
    onehot = torch.zeros(len(yte) * k, classes).scatter_(1, labels.view(-1, 1), 1)
    probs = (onehot.view(len(yte), k, classes) * sim.div(T).exp().view(len(yte), k, 1)).sum(1)
    _, order = probs.sort(1, True)
    correct = order.eq(yte_t.view(-1, 1))
    top1 = correct[:, :1].sum().item() / len(yte)
    top5 = correct[:, :min(5, k, classes)].sum().item() / len(yte)
    return order[:, 0].tolist(), top1, top5, [sorted(r) for r in idx.tolist()]


def random_case(seed, ntr, nte, d, classes):
    """Rows of a class centre plus unit Gaussian noise (the centres about as
    far apart as the noise, so that the neighbours disagree), labels
    uniform, every class in the test labels; the seed must leave clear gaps
    (checked by the caller)."""
    g = np.random.default_rng(seed)
    centres = 0.6 * g.standard_normal((classes, d))
    ytr = g.integers(0, classes, ntr).astype(np.int32)
    yte = np.concatenate([np.arange(classes), g.integers(0, classes, nte - classes)]).astype(np.int32)
    xtr = (centres[ytr] + g.standard_normal((ntr, d))).astype(np.float32)
    xte = (centres[yte] + g.standard_normal((nte, d))).astype(np.float32)
    return xtr, ytr, xte, yte


def tie_case():
    """Rows whose cosine similarities tie exactly in float32 and float64:
    axis vectors (each product but one is an exact zero), repeated with
    different labels, a diagonal, a zero row."""
    e = np.eye(4, dtype=np.float32)
    diag01 = np.array([1, 1, 0, 0], np.float32)
    diag23 = np.array([0, 0, 1, 1], np.float32)
    zero = np.zeros(4, np.float32)
    train = [(e[0], 2), (e[1], 1), (e[0], 0), (e[0], 1), (e[1], 0), (-e[0], 3),
             (e[2], 3), (e[2], 4), (e[3], 5), (diag01, 3), (e[1], 4), (zero, 0),
             (e[3], 2), (-e[1], 5)]
    test = [(e[0], 0), (diag01, 1), (zero, 2), (2 * e[0], 3), (e[2], 4),
            (diag23, 5), (e[1], 4), (-e[0], 3), (3 * e[3], 2), (-e[2], 1)]
    xtr = np.stack([v for v, _ in train]); ytr = np.array([l for _, l in train], np.int32)
    xte = np.stack([v for v, _ in test]); yte = np.array([l for _, l in test], np.int32)
    return xtr, ytr, xte, yte


def min_gaps(sims, scores, k):
    """Smallest gap between the k-th and (k+1)-th similarity, and smallest
    relative gap between the two best class scores, over the test rows."""
    sg, cg = np.inf, np.inf
    for i in range(len(sims)):
        s = np.sort(sims[i])[::-1]
        if k < len(s):
            sg = min(sg, s[k - 1] - s[k])
        c = np.sort(scores[i])[::-1]
        cg = min(cg, (c[0] - c[1]) / c[0])
    return sg, cg


def knn_fixture():
    cases = []
    settings = {
        "random": [(1, 0.07, "weighted"), (3, 0.07, "weighted"), (5, 0.07, "weighted"),
                   (20, 0.07, "weighted"), (20, 0.5, "weighted"), (64, 0.07, "weighted"),
                   (200, 0.07, "weighted"), (200, 1.0, "weighted"), (7, 0.07, "majority")],
        "ties": [(1, 0.07, "weighted"), (2, 0.07, "weighted"), (3, 0.07, "weighted"),
                 (4, 1.0, "weighted"), (5, 0.07, "weighted"), (14, 0.07, "weighted"),
                 (50, 0.07, "weighted"), (3, 0.07, "majority"), (6, 0.07, "majority")],
    }
    for name in ["random", "ties"]:
        if name == "random":
            classes = 7
            xtr, ytr, xte, yte = random_case(11, 64, 40, 16, classes)
        else:
            classes = 6
            xtr, ytr, xte, yte = tie_case()
        runs = []
        for k, T, vote in settings[name]:
            scores, pred, top1, top5, nbrs, sims = ref_knn(xtr, ytr, xte, yte, k, T, vote, classes)
            run = {"k": k, "t": T, "vote": vote,
                   "ref": {"scores": scores.flatten().tolist(), "pred": pred, "top1": top1, "top5": top5}}
            if name == "random":
                # clear of float32 rounding: the k-th neighbour, and the
                # best class of a weighted vote (a majority's equal integer
                # scores are exact ties, decided by the lower class)
                sg, cg = min_gaps(sims, scores, min(k, len(ytr)))
                assert sg > 1e-4 and (vote == "majority" or cg > 1e-4), (k, T, vote, sg, cg)
                run["min_sim_gap"] = float(sg) if np.isfinite(sg) else None
            if vote == "weighted":
                tp, t1, t5, tn = torch_knn(xtr, ytr, xte, yte, k, T, classes)
                run["torch"] = {"pred": tp, "top1": t1, "top5": t5,
                                "tie_rows": [i for i in range(len(yte)) if tn[i] != nbrs[i]]}
            runs.append(run)
        cases.append({"name": name, "d": int(xtr.shape[1]), "classes": classes,
                      "x_train": xtr.flatten().tolist(), "y_train": ytr.tolist(),
                      "x_test": xte.flatten().tolist(), "y_test": yte.tolist(), "runs": runs})
    with open("testdata/knn_solo.json", "w") as f:
        json.dump({"cases": cases}, f)
    print("wrote testdata/knn_solo.json")


# ---------------------------------------------------------------- linear

def linear_fixture():
    torch.manual_seed(3)
    N, D, C, TEST = 40, 8, 5, 16
    EPOCHS, BATCH = 5, 16
    x = torch.randn(N, D)
    y = torch.randint(0, C, (N,))
    xt = torch.randn(TEST, D)
    yt = torch.randint(0, C, (TEST,))
    lin0 = torch.nn.Linear(D, C)
    perms = [torch.randperm(N) for _ in range(EPOCHS)]
    variants = {
        # solo-learn's scripts/linear: sgd, lr 0.1, weight_decay 0, momentum 0.9
        "solo": dict(lr=0.1, momentum=0.9, weight_decay=0.0, milestones=[2, 4]),
        "plain_wd": dict(lr=0.1, momentum=0.0, weight_decay=1e-3, milestones=[2, 4]),
    }
    out = {"n": N, "d": D, "classes": C, "epochs": EPOCHS, "batch": BATCH,
           "x": x.flatten().tolist(), "y": y.tolist(), "x_test": xt.flatten().tolist(), "y_test": yt.tolist(),
           "weight0": lin0.weight.detach().flatten().tolist(), "bias0": lin0.bias.detach().tolist(),
           "perms": [p.tolist() for p in perms], "variants": {}}
    for name, v in variants.items():
        lin = torch.nn.Linear(D, C)
        lin.load_state_dict(lin0.state_dict())
        opt = torch.optim.SGD(lin.parameters(), lr=v["lr"], momentum=v["momentum"], weight_decay=v["weight_decay"])
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, v["milestones"], gamma=0.1)
        losses, lrs = [], []
        for perm in perms:
            lrs.append(opt.param_groups[0]["lr"])
            total = 0.0
            for s in range(0, N, BATCH):
                idx = perm[s:s + BATCH]
                loss = F.cross_entropy(lin(x[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(idx)
            losses.append(total / N)
            sched.step()
        with torch.no_grad():
            logits = lin(xt)
        out["variants"][name] = {
            **v, "epoch_lr": lrs,
            "weight": lin.weight.detach().flatten().tolist(), "bias": lin.bias.detach().tolist(),
            "epoch_loss": losses, "test_logits": logits.flatten().tolist(),
            "top1": (logits.argmax(1) == yt).float().mean().item(),
        }
    with open("testdata/linear_solo.json", "w") as f:
        json.dump(out, f)
    print("wrote testdata/linear_solo.json")


if __name__ == "__main__":
    knn_fixture()
    linear_fixture()
