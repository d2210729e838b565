#!/usr/bin/python3
"""Writes testdata/parity.bin and testdata/parity.json: a few training steps
of each SSL method, transcribed in plain PyTorch from the papers and their
reference code, for TestMethodParity (parity_test.go).

Run from the repository root with Debian's python3-torch (PyTorch 1.13, CPU):

    /usr/bin/python3 duel/ssl/gen_parity_fixtures.py

The Go tests read the two files and never need Python. The format is
nn/gen_fixtures.py's: parity.bin holds little-endian float32 arrays one after
the other, parity.json an index (name -> offset in floats and shape), the
cases (each method's configuration, under ssl.Config's field names, plus the
optimizer's) and the batches (step, sample ids).

What is independent of the Go code: every network, loss, optimizer step,
momentum update, queue and memory update below is written from the papers
(SimCLR, MoCo v2 and its single-GPU shuffle-BN demo, BYOL, Barlow Twins,
the DUEL paper's Eq. 17, Algorithms 1 and 2 and Appendix D) with torch
operations. What is shared with the Go code on purpose, because it is a
choice and not a definition: the random draws (MoCo's key permutation and
D-SimCLR's memory samples come from the SplitMix64 streams of common.go,
transcribed below, so that both sides draw the same ones), the documented
readings of the paper (docs/duel-readings.md: DUEL's similarity grid, the
four admission readings, the fill-then-policy memory, the key view
re-encoded for "target", the safe update's estimate on the incoming rows,
--max-age and --mem-refresh), the update order of Algorithm 3 (loss,
optimizer, momentum update, memory update, then any refresh), and ghost
BatchNorm's interleaved groups (MoCo's SplitBatchNorm). Each such choice
is said so where it is made.

Besides one case per method, the cases cover the memory options (the safe
update, keeping one update and rejecting one; the compete, insert-first
and max-score admissions; --mem-refresh through MoCo's key encoder and
through D-SimCLR's encoder; --max-age), the paper's optimizer (Adam, with
weight decay) and BYOL's heads without BatchNorm. The generator refuses a
case that would not exercise its option (a reading that decides as
Protected does throughout, a safe update of one outcome, ...).

The network is torchvision's ResNet-18 at width 2 with the CIFAR stem
(nn/gen_fixtures.py's transcription, fc removed) on 3x16x16 images, batch
8, projections of 16 values, three steps (SGD with momentum unless a case
says Adam): the fixture is under 1.5 MB and the Go test takes a fraction of
a second. (On 8x8 images layer4's BatchNorm sees one value per sample, and
float32 errors grow by orders of magnitude in three steps, in PyTorch as
in Go.) Every step runs in
float64 from the float32 initial state and views, so the fixture holds the
exact answer rounded to float32 and the Go test measures its own float32
error only. The same steps are also run in float32 and PyTorch's own error
is stored beside each case (Float32Errors), measured as the Go test
measures Go's: the yardstick of the test's tolerances.
"""
import copy
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "nn"))
import gen_fixtures as gf  # noqa: E402  (torchvision's ResNet, MoCo's SplitBatchNorm, the Writer)

OUT = os.path.join(HERE, "testdata")
GROUP = "parity"

ARCH, DEPTH, WIDTH = "resnet18-w2", 18, 2
IMAGES, BATCH, STEPS, SHAPE = 16, 8, 3, (3, 16, 16)
# DUEL decisions are compared exactly; a decision whose top two scores are
# closer than this could flip under the Go side's float32 features (see
# duel_evict), so the generator refuses to write such a fixture.
MIN_GAP = 1e-2
# Likewise for the safe update (Algorithm 2), which compares two
# distinctiveness informations, means over the B rows offered of -log(mean
# q): a component of the Go side's float32 rows that rounds to the other
# grid point (about one in 300: they differ from these by ~1e-6, the grid
# step is 1/2048) moves the q's of its row by at most 2^-12, an information
# by at most about 5e-4 / min(B, K). The generator refuses a decision whose
# two informations are closer than this, or that q off the grid, or Section
# 4.3's q = exp((cos - 1)/tau), would take otherwise.
SAFE_MIN_GAP = 1e-3
# The error measures of parity_test.go: max|got-want| / (max|want| + floor)
# per tensor, for the final values and for the updates (final - initial).
# The floors keep a tensor whose true update is zero (a Linear bias before a
# BatchNorm, its momentum copy) from dividing rounding noise by nothing.
STATE_FLOOR, UPDATE_FLOOR = 1e-3, 1e-4

# --- SplitMix64 (internal/splitmix) and the streams of common.go ---

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
TAG_SHUFFLE, TAG_MEM_NEGATIVES = 3, 4  # common.go's tagShuffle, tagMemNegatives


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def derive(seed, *keys):
    h = mix((seed + GOLDEN) & MASK)
    for k in keys:
        h = mix(h ^ mix((k + GOLDEN) & MASK))
    return h


class SplitMix:
    def __init__(self, seed):
        self.state = seed & MASK

    def uint64(self):
        self.state = (self.state + GOLDEN) & MASK
        return mix(self.state)

    def intn(self, n):
        """Lemire's multiply-and-reject, as splitmix.RNG.Intn."""
        p = self.uint64() * n
        hi, lo = p >> 64, p & MASK
        if lo < n:
            thresh = ((1 << 64) - n) % n
            while lo < thresh:
                p = self.uint64() * n
                hi, lo = p >> 64, p & MASK
        return hi


def shuffle_perm(n, seed, step, pass_):
    """The key batch permutation of step (Fisher-Yates from the end)."""
    r = SplitMix(derive(seed, TAG_SHUFFLE, step, pass_))
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = r.intn(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def pick_rows(k, n, seed, step):
    """n distinct memory positions drawn for step (all, in order, when n is 0 or >= k)."""
    idx = list(range(k))
    if n == 0 or n >= k:
        return idx
    r = SplitMix(derive(seed, TAG_MEM_NEGATIVES, step))
    for i in range(n):
        j = i + r.intn(k - i)
        idx[i], idx[j] = idx[j], idx[i]
    return idx[:n]


# --- networks ---

def ghost(m, splits):
    """MoCo's single-GPU shuffle-BN recipe: every BatchNorm2d becomes a
    SplitBatchNorm of splits groups (sample i in group i mod splits)."""
    if splits <= 1:
        return m
    for name, child in list(m.named_children()):
        if type(child) is nn.BatchNorm2d:
            g = gf.SplitBatchNorm(child.num_features, splits)
            g.load_state_dict(child.state_dict())
            setattr(m, name, g)
        else:
            ghost(child, splits)
    return m


def encoder(state, splits, dtype):
    m = gf.resnet(DEPTH, width=WIDTH, cifar=True, num_classes=0)
    m.load_state_dict(state)
    return ghost(m, splits).to(dtype).train()


def mlp(dims, hidden_bn=False, bias=True):
    """heads.NewMLP's layout: Linear, [BatchNorm1d], ReLU between layers."""
    layers = []
    for i in range(1, len(dims)):
        last = i == len(dims) - 1
        layers.append(nn.Linear(dims[i - 1], dims[i], bias=bias))
        if not last and hidden_bn:
            layers.append(nn.BatchNorm1d(dims[i]))
        if not last:
            layers.append(nn.ReLU())
    m = nn.Sequential(*layers)
    gf.randomize_bn(m)  # non-trivial affine parameters and running statistics
    return m


def copy_to(m, dtype):
    """A copy of a float32 head in dtype, in training mode."""
    return copy.deepcopy(m).to(dtype).train()


def ema(target, online, m):
    """MoCo's and BYOL's momentum update, on parameters only (buffers are
    the target's own, as in both reference implementations)."""
    with torch.no_grad():
        for t, o in zip(target.parameters(), online.parameters()):
            t.mul_(m).add_(o, alpha=1 - m)


def embed(enc, head, x):
    return F.normalize(head(enc(x)), dim=1)


# --- losses ---

def info_nce(q, k, neg, tau, eps, batch_neg):
    """The paper's general InfoNCE (Appendix B, Eq. 17), the constant log K
    left out: -s+ + log(eps*exp(s+) + sum_n exp(s_n)), averaged over the
    batch, negatives the rows of neg and, with batch_neg, the other keys."""
    b = q.shape[0]
    pos = (q * k).sum(1) / tau
    cols = []
    if eps > 0:
        cols.append((pos + math.log(eps))[:, None])
    if neg is not None:
        cols.append(q @ neg.T / tau)
    if batch_neg:
        s = q @ k.T / tau
        cols.append(s[~torch.eye(b, dtype=torch.bool)].view(b, b - 1))
    out = (torch.logsumexp(torch.cat(cols, 1), 1) - pos).mean()
    if eps == 1 and not batch_neg and neg is not None:
        # MoCo's own formulation: cross-entropy over [q.k | q.queue] / T, label 0.
        logits = torch.cat([pos[:, None], q @ neg.T / tau], 1)
        ce = F.cross_entropy(logits, torch.zeros(b, dtype=torch.long))
        assert torch.allclose(out, ce, rtol=1e-12 if out.dtype == torch.float64 else 1e-5), (out, ce)
    return out


def nt_xent(z1, z2, neg, tau, eps, batch_neg):
    """SimCLR's NT-Xent with Eq. 17's eps: each of the 2B rows has the other
    view of its image as positive; negatives are the 2B-2 other rows (with
    batch_neg) and the rows of neg."""
    b = z1.shape[0]
    z = torch.cat([z1, z2])
    m = 2 * b
    s = z @ z.T / tau
    pidx = torch.cat([torch.arange(b, m), torch.arange(0, b)])
    pos = s[torch.arange(m), pidx]
    cols = []
    if eps > 0:
        cols.append((pos + math.log(eps))[:, None])
    if batch_neg:
        keep = ~torch.eye(m, dtype=torch.bool)
        keep[torch.arange(m), pidx] = False
        cols.append(s[keep].view(m, m - 2))
    if neg is not None:
        cols.append(z @ neg.T / tau)
    out = (torch.logsumexp(torch.cat(cols, 1), 1) - pos).mean()
    if eps == 1 and batch_neg and neg is None:
        # SimCLR's own formulation: cross-entropy over the 2B-1 other rows.
        ce = F.cross_entropy(s.masked_fill(torch.eye(m, dtype=torch.bool), -math.inf), pidx)
        assert torch.allclose(out, ce, rtol=1e-12 if out.dtype == torch.float64 else 1e-5), (out, ce)
    return out


def byol_loss(p, z):
    """BYOL's normalised MSE, 2 - 2 cos, averaged over the batch."""
    return (2 - 2 * (F.normalize(p, dim=-1) * F.normalize(z, dim=-1)).sum(-1)).mean()


def barlow_loss(z1, z2, lam):
    """facebookresearch/barlowtwins: BatchNorm1d without affine parameters,
    c = bn(z1).T bn(z2) / N, sum (c_ii - 1)^2 + lam * sum_{i!=j} c_ij^2."""
    n = z1.shape[0]
    bn = lambda z: F.batch_norm(z, None, None, training=True, eps=1e-5)  # noqa: E731
    c = bn(z1).T @ bn(z2) / n
    on = (torch.diagonal(c) - 1).pow(2).sum()
    off = (c - torch.diag(torch.diagonal(c))).pow(2).sum()
    return on + lam * off


# --- the active memory ---

def grid(rows):
    """docs/duel-readings.md, "Scores": each component x of the float32 unit
    row becomes round(2048 x) (halves up) before similarities are taken."""
    x = rows.detach().numpy().astype(np.float32).astype(np.float64)
    return np.floor(x * 2048 + 0.5).astype(np.int64)


def duel_evict(held, batch, gaps):
    """Appendix D's update_DUEL on a full memory, in the Protected reading
    (MAX_SCORE a rank below every held row: new rows cannot leave before
    their batch ends), on the grid rows (q = (1 + d/2048^2)/2, exact in
    float64). Returns the selection over [held; batch] and appends, per
    decision, the gap between the two highest scores of the rows that may
    leave."""
    k, b = held.shape[0], batch.shape[0]
    comb = np.concatenate([grid(held), grid(batch)])
    q = torch.from_numpy(0.5 + (comb @ comb.T).astype(np.float64) * 2.0 ** -23)
    selection = torch.tensor([i < k for i in range(k + b)])
    score = torch.cat((q[:k, :k].sum(-1), torch.zeros(b, dtype=torch.float64)), 0)
    max_score = -2.0 ** 24
    for i in range(k, k + b):
        J = int(torch.argmax(score))
        cand = sorted((float(score[c]) for c in range(k) if selection[c]), reverse=True)
        if len(cand) > 1:
            gaps.append(cand[0] - cand[1])
        score -= q[J] * selection.double()
        selection[J] = False
        score[J] = 0.
        t = q[i] * selection.double()
        score += t
        selection[i] = True
        score[i] = t.sum() + max_score
    return selection


def score_matrix(held, batch):
    """Appendix D's score_matrix = score_function(comb comb^T) with
    score_function(x) = (1 + x)/2, on the grid rows of docs/duel-readings.md,
    "Scores" (q = (1 + d/2048^2)/2 for a grid dot product d, exact in
    float64)."""
    comb = np.concatenate([grid(held), grid(batch)])
    return torch.from_numpy(0.5 + (comb @ comb.T).astype(np.float64) * 2.0 ** -23)


# MAX_SCORE of Appendix D's pseudocode in the readings that take it as a
# number (docs/duel-readings.md, "The update order"): 0 in compete, "a large
# positive constant" in max-score (any value above every score, at most
# K + B, makes the same decisions; this one is not the Go side's 2^24).
MAX_SCORE = {"compete": 0.0, "max-score": 1e6}


def duel_reading(held, batch, admission, gaps):
    """update_DUEL on a full memory in the admission readings other than
    Protected (duel_evict), docs/duel-readings.md's table "The update
    order"; returns the selection over [held; batch] and appends, per
    decision, the gap between the two highest scores of the rows that may
    leave (every row held at that moment: new rows are not protected).

    compete, max-score: Appendix D's pseudocode as printed, MAX_SCORE the
    reading's. The paper leaves MAX_SCORE undefined; in compete the
    documented reading also gives the newcomer its q with itself, which
    t.sum() leaves out (the rows held have theirs in their initial score:
    without it a newcomer would score about 1 less than a held twin).

    insert-first: Algorithm 1 (Section 4.2) as printed, one arrival x_b at a
    time: M <- M u {x_b}; J <- argmin over the K+1 rows of
    I_d(x_j; f, M) = -log(mean over x_k in M of q(j,k)) (Definition 3); M <-
    M minus {x_J}, with Appendix D's q = (1 + cos)/2, as the documented
    reading does for every admission ("Other readings", "The similarity
    q"); a newcomer can be turned away on arrival."""
    k, b = held.shape[0], batch.shape[0]
    q = score_matrix(held, batch)
    selection = torch.tensor([i < k for i in range(k + b)])

    def gap(scores):
        top = sorted(scores.tolist(), reverse=True)
        if len(top) > 1:
            gaps.append(top[0] - top[1])

    if admission == "insert-first":
        for i in range(k, k + b):
            selection[i] = True  # M <- M u {x_b}
            members = selection.nonzero().flatten()
            s = q[members][:, members].sum(1)
            info = -torch.log(s / len(members))  # I_d(x_j; f, M)
            gap(s)
            J = int(members[torch.argmin(info)])  # ties (none here, see MIN_GAP): the lowest position
            selection[J] = False  # M <- M minus {x_J}
        return selection
    max_score = MAX_SCORE[admission]
    score = torch.cat((q[:k, :k].sum(-1), torch.zeros(b, dtype=torch.float64)), 0)
    for i in range(k, k + b):
        # (a) Select target, among the rows selected (the others score 0,
        # the rows selected at least their q with themselves, about 1).
        gap(score[selection])
        J = int(torch.argmax(score.masked_fill(~selection, -math.inf)))
        # (b) Logical deletion
        score -= q[J] * selection.double()
        selection[J] = False
        score[J] = 0.
        # (c) Logical insertion
        t = q[i] * selection.double()
        score += t
        selection[i] = True
        score[i] = t.sum() + max_score
        if admission == "compete":
            score[i] += q[i, i]
    return selection


def distinctiveness(memory, sample, kernel="grid"):
    """Algorithm 2's I_d(f, M; D_t) = E_{x~D_t}[I_d(x; f, M)] with
    I_d(x; f, M) = -log E_{y~M}[q(x,y)] (Section 3), the expectation over
    D_t estimated on sample, the incoming rows (docs/duel-readings.md, "The
    safe update"). q is the documented reading's, Appendix D's (1 + cos)/2
    on the grid rows of "Scores", as everywhere in the policy (kernel
    "grid"); "cos" takes it on the rows themselves, "exp" is Section 4.3's
    exp((cos - 1)/tau) at the paper's tau 0.5, the generator's checks that
    a decision does not depend on the reading."""
    if kernel == "grid":
        q = 0.5 + torch.from_numpy((grid(sample) @ grid(memory).T).astype(np.float64)) * 2.0 ** -23
    elif kernel == "cos":
        q = (1 + sample.double() @ memory.double().T) / 2
    else:
        q = torch.exp((sample.double() @ memory.double().T - 1) / 0.5)
    return float((-torch.log(q.mean(1))).mean())


class Memory:
    """K rows, oldest first, with their sample ids: appended while not full
    (the rest of that batch then goes through the policy, as memory.Memory
    does; docs/duel-readings.md, "Filling the memory"), then managed by the
    policy: fifo (MoCo's queue: the oldest rows leave) or duel, in one of
    the admission readings of docs/duel-readings.md.

    With the step of each add (bench/ssl_step_pytorch.py's calls leave it
    out, and the options below off), each row also has the step at which it
    entered and the step at which its features were computed (on entry or by
    refresh). max_age: rows that entered more than max_age steps before an
    add leave first, the batch refills their places (--max-age). safe:
    Algorithm 2 (Appendix C), the policy's update kept only when it does not
    lower the distinctiveness information of the memory (--safe-update)."""

    def __init__(self, k, policy, admission="protected", safe=False, max_age=0):
        self.k, self.policy, self.admission = k, policy, admission
        self.safe, self.max_age = safe, max_age
        self.rows = None
        self.ids = []
        self.steps, self.fresh = [], []
        self.gaps = []
        self.expired = 0  # rows that left for their age
        self.refreshed = 0  # rows re-embedded
        self.differs = []  # per policy update of a reading: does Protected decide otherwise?
        self.safe_log = []  # per policy update with safe: the step, the decision and the two informations

    def add(self, rows, ids, step=None):
        rows = F.normalize(rows.detach(), dim=1)
        # Rows placed by hand (the bench's self-check) have no steps.
        pad = len(self.ids) - len(self.steps)
        self.steps, self.fresh = self.steps + [None] * pad, self.fresh + [None] * pad
        if self.max_age:
            # "rows that entered more than N steps ago leave before the
            # policy runs; the batch refills their places."
            keep = [p for p, s in enumerate(self.steps) if step - s <= self.max_age]
            self.expired += len(self.ids) - len(keep)
            if len(keep) < len(self.ids):
                self.rows = self.rows[keep] if keep else None
                self.ids = [self.ids[p] for p in keep]
                self.steps = [self.steps[p] for p in keep]
                self.fresh = [self.fresh[p] for p in keep]
        held0 = self.rows
        fill = min(len(ids), self.k - len(self.ids))
        self.rows = rows[:fill].clone() if not self.ids else torch.cat([self.rows, rows[:fill]])
        self.ids = self.ids + ids[:fill]
        self.steps, self.fresh = self.steps + [step] * fill, self.fresh + [step] * fill
        rest, rest_ids = rows[fill:], ids[fill:]
        if not rest_ids:
            return
        if self.policy == "fifo":
            n = len(rest_ids)
            sel = torch.tensor([p >= n for p in range(self.k + n)])
        elif self.admission == "protected":
            sel = duel_evict(self.rows, rest, self.gaps)
        else:
            sel = duel_reading(self.rows, rest, self.admission, self.gaps)
            self.differs.append(not torch.equal(sel, duel_evict(self.rows, rest, [])))
        new_rows = torch.cat([self.rows, rest])[sel]
        if self.safe:
            # Algorithm 2: M' <- filter(M, {d_b}; pi, f); if I_d(f, M; D_t)
            # <= I_d(f, M'; D_t) then M <- M'. The filter is the policy's
            # update, from the full memory (the rows of an add that fill
            # the memory are appended, "Filling the memory"), and the
            # sample of D_t is what the policy was given, rest. The paper
            # has no partial fill (its memory always holds K rows). Where an
            # add fills some rows, the generator requires the update to be
            # kept in this reading and in the other, where the whole add is
            # the filter (M the memory before the fill, the whole batch the
            # sample; rejecting would then drop the filled rows too), so
            # that the fixture does not depend on which (FillReadingSame).
            before, after = distinctiveness(self.rows, rest), distinctiveness(new_rows, rest)
            d = dict(Step=step, Accepted=before <= after, Before=before, After=after)
            for kernel in ("cos", "exp"):
                keeps = distinctiveness(self.rows, rest, kernel) <= distinctiveness(new_rows, rest, kernel)
                d["Agrees_" + kernel] = keeps == d["Accepted"]
            if fill > 0 and held0 is not None:
                d["FillReadingSame"] = d["Accepted"] and distinctiveness(held0, rows) <= distinctiveness(new_rows, rows)
            self.safe_log.append(d)
            if not before <= after:
                return
        pick = lambda xs: [x for x, s in zip(xs, sel.tolist()) if s]  # noqa: E731
        self.rows = new_rows
        self.ids = pick(self.ids + rest_ids)
        self.steps = pick(self.steps + [step] * len(rest_ids))
        self.fresh = pick(self.fresh + [step] * len(rest_ids))

    def stalest(self, n):
        """The positions of the n rows whose features are the oldest,
        increasing ("stalest first"; ties: the lowest position, a choice)."""
        order = sorted(range(len(self.ids)), key=lambda p: (self.fresh[p], p))
        return sorted(order[:n])

    def refresh(self, pos, rows, step):
        """Writes the re-embedded rows at positions pos, computed at step."""
        self.rows = self.rows.clone()
        self.rows[pos] = F.normalize(rows.detach(), dim=1)
        for p in pos:
            self.fresh[p] = step
        self.refreshed += len(pos)


# --- the methods ---

class Method:
    """One method's networks, optimizer and memory, and its training step."""

    def __init__(self, cfg, enc_state, heads, dtype):
        self.cfg = cfg
        self.splits = cfg.get("BNSplits", 1)
        self.enc = encoder(enc_state, self.splits, dtype)
        self.heads = {name: copy_to(h, dtype) for name, h in heads.items()}
        self.parts = [("", self.enc)] + [(n, h) for n, h in self.heads.items()]
        params = list(self.enc.parameters())
        for n, h in self.heads.items():
            params += list(h.parameters())
        if cfg["Method"] in ("moco", "dmoco", "byol"):
            ke, kp = ("key_encoder", "key_projector") if "moco" in cfg["Method"] else ("target_encoder", "target_projector")
            self.kenc, self.kproj = encoder(enc_state, self.splits, dtype), copy_to(heads["projector"], dtype)
            for p in list(self.kenc.parameters()) + list(self.kproj.parameters()):
                p.requires_grad_(False)
            self.parts += [(ke, self.kenc), (kp, self.kproj)]
        if cfg.get("Optimizer", "sgd") == "adam":
            # The paper's optimizer (Appendix E.2), torch.optim.Adam's L2 weight decay.
            self.opt = torch.optim.Adam(params, lr=cfg["LR"], betas=(cfg["Beta1"], cfg["Beta2"]), eps=cfg["AdamEps"],
                                        weight_decay=cfg["WeightDecay"])
        else:
            self.opt = torch.optim.SGD(params, lr=cfg["LR"], momentum=cfg["Momentum"])
        self.mem = None
        if "MemorySize" in cfg:
            self.mem = Memory(cfg["MemorySize"], cfg["Policy"], cfg.get("Admission", "protected"),
                              cfg.get("SafeUpdate", False), cfg.get("MaxAge", 0))

    def key_embed(self, x, step, pass_):
        """MoCo's keys without gradient; with shuffle BN the batch is permuted
        across the BatchNorm groups before the key encoder and put back after."""
        with torch.no_grad():
            if not (self.cfg.get("ShuffleBN") and self.splits > 1):
                return embed(self.kenc, self.kproj, x)
            perm = shuffle_perm(x.shape[0], self.cfg["Seed"], step, pass_)
            ks = embed(self.kenc, self.kproj, x[perm])
            k = torch.empty_like(ks)
            k[perm] = ks
            return k

    def memory_negatives(self, step):
        """The memory rows drawn for step (constants), None while it is empty."""
        if not self.mem.ids:
            return None
        return self.mem.rows[pick_rows(len(self.mem.ids), self.cfg["MemNegatives"], self.cfg["Seed"], step)]

    def step(self, x0, x1, ids, step, images):
        c = self.cfg
        proj = self.heads["projector"]
        name = c["Method"]
        if name in ("simclr", "dsimclr"):
            z1, z2 = embed(self.enc, proj, x0), embed(self.enc, proj, x1)
            neg = None
            if name == "dsimclr" and c["Negatives"] != "batch" and len(self.mem.ids) >= 2:
                # D-SimCLR: memory samples re-embedded by the current networks,
                # stop-gradient, BatchNorm in training mode.
                idx = pick_rows(len(self.mem.ids), c["MemNegatives"], c["Seed"], step)
                with torch.no_grad():
                    neg = embed(self.enc, proj, images[[self.mem.ids[p] for p in idx]])
            batch_neg = c["Negatives"] != "memory" or neg is None
            loss = nt_xent(z1, z2, neg, c["Tau"], c["Eps"], batch_neg)
            # MemoryFrom "step" (docs/duel-readings.md, "What enters the
            # memory"): the target view's projections before the update.
            rows = z1.detach()
        elif name in ("moco", "dmoco"):
            q = embed(self.enc, proj, x0)
            k = self.key_embed(x1, step, 0)
            neg = None
            if c["Negatives"] != "batch":
                neg = self.memory_negatives(step)
            # With an empty memory (the first step) the batch supplies the
            # negatives: the README's choice, where MoCo's queue starts with
            # random vectors.
            batch_neg = c["Negatives"] != "memory" or neg is None
            loss = info_nce(q, k, neg, c["Tau"], c["Eps"], batch_neg)
            rows = k  # MemoryFrom "step": the step's keys enter, as MoCo enqueues them
        elif name == "byol":
            pred = self.heads["predictor"]
            p1, p2 = pred(proj(self.enc(x0))), pred(proj(self.enc(x1)))
            with torch.no_grad():
                t1, t2 = self.kproj(self.kenc(x0)), self.kproj(self.kenc(x1))
            loss = byol_loss(p1, t2) + byol_loss(p2, t1)
        elif name == "barlow":
            loss = barlow_loss(proj(self.enc(x0)), proj(self.enc(x1)), c["BarlowLambda"])
        else:
            raise ValueError(name)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        # Algorithm 3: momentum update, then memory update.
        if name in ("moco", "dmoco", "byol"):
            ema(self.kenc, self.enc, c["EMA"])
            ema(self.kproj, proj, c["EMA"])
        if self.mem is not None:
            if c.get("MemoryFrom") == "target":
                # The target view (view 0) re-encoded after the update.
                if name in ("moco", "dmoco"):
                    rows = self.key_embed(x0, step, 1)
                else:
                    with torch.no_grad():
                        rows = embed(self.enc, proj, x0)
            if isinstance(self.mem, Memory):
                self.mem.add(rows, ids, step)
            else:
                self.mem.add(rows, ids)  # bench/ssl_step_pytorch.py's FastMemory
            if c.get("MemRefresh", 0) > 0:
                self.refresh_memory(step, images)
        return float(loss)

    def refresh_memory(self, step, images):
        """--mem-refresh N (docs/duel-readings.md, "Stale rows"): "the N rows
        whose features are the oldest are re-embedded from their images by
        the current key encoder (D-MoCo) or encoder (D-SimCLR) and written
        back", without gradient, BatchNorm in training mode as for every
        other key (its running statistics move). Choices shared with the Go
        side: it runs after the memory update of the step, the images are
        the samples as the test's image source gives them (plain), the
        count is rounded down to a multiple of the BatchNorm groups and
        nothing is refreshed below two rows a group, the rows are encoded in
        position order, and MoCo's shuffle across the groups is the draw of
        pass 2 (pass 0: the step's keys, 1: the target view)."""
        c, mem = self.cfg, self.mem
        n = min(c["MemRefresh"], len(mem.ids)) // self.splits * self.splits
        if n < 2 * self.splits:
            return
        pos = mem.stalest(n)
        x = images[[mem.ids[p] for p in pos]]
        if c["Method"] in ("moco", "dmoco"):
            rows = self.key_embed(x, step, 2)
        else:
            with torch.no_grad():
                rows = embed(self.enc, self.heads["projector"], x)
        mem.refresh(pos, rows, step)


COMMON = dict(Arch=ARCH, ProjDim=16, Tau=0.5, Seed=5, LR=0.02, Momentum=0.9)
CASES = [
    # SimCLR: the paper's single Linear projection, eps 1 (standard NT-Xent).
    dict(Name="simclr", Method="simclr", ProjHidden=0, Eps=1.0, Negatives="batch"),
    # MoCo v2: its MLP head, temperature 0.2, a FIFO queue of K = 12 keys
    # (the 8 keys of step 0, then 4 filled and 4 through the queue), ghost
    # BatchNorm in 2 groups with the keys shuffled across them.
    dict(Name="moco", Method="moco", ProjHidden=32, Tau=0.2, Eps=1.0, EMA=0.9, Negatives="memory",
         Policy="fifo", MemorySize=12, MemNegatives=0, MemoryFrom="step", ShuffleBN=True, BNSplits=2),
    # D-MoCo: the DUEL memory, 6 of its rows drawn per step, batch keys as
    # well (mixed) and eps 0 (Appendix F.3), and the target view re-encoded
    # by the updated key encoder entering the memory (Algorithm 3).
    dict(Name="dmoco", Method="dmoco", ProjHidden=0, Eps=0.0, EMA=0.9, Negatives="mixed",
         Policy="duel", Admission="protected", MemorySize=12, MemNegatives=6, MemoryFrom="target",
         ShuffleBN=True, BNSplits=2),
    # D-SimCLR: 6 memory samples re-embedded per step beside the batch (mixed, eps 1).
    dict(Name="dsimclr", Method="dsimclr", ProjHidden=0, Eps=1.0, Negatives="mixed",
         Policy="duel", Admission="protected", MemorySize=12, MemNegatives=6, MemoryFrom="step"),
    # BYOL: projector and predictor with BatchNorm (the STL-10 heads).
    dict(Name="byol", Method="byol", ProjHidden=32, PredHidden=24, HeadBN=True, EMA=0.9),
    # Barlow Twins: 32-32-16 projector, lambda 5e-3.
    dict(Name="barlow", Method="barlow", ProjHidden=32, BarlowLambda=5e-3, LR=2e-4),
    # D-SimCLR as Appendix F.3's other corner: memory negatives only, eps 0
    # (the positive out of the denominator), and the target view re-embedded
    # by the updated networks entering the memory.
    dict(Name="dsimclr-memory-eps0", Method="dsimclr", ProjHidden=0, Eps=0.0, Negatives="memory",
         Policy="duel", Admission="protected", MemorySize=12, MemNegatives=6, MemoryFrom="target", Seed=21),  # a seed whose DUEL decisions clear MIN_GAP
    # --- the memory options and the paper's optimizer (appended: the heads
    # are drawn in order, so the cases above keep their starts). Each Seed
    # is one whose DUEL decisions clear MIN_GAP and safe updates SAFE_MIN_GAP.
    # D-MoCo with Algorithm 2's safe update: K = 10, so that step 1 fills 2
    # rows and offers 6 to the policy (accepted), step 2 offers all 8
    # (rejected: the memory stays as it was).
    dict(Name="dmoco-safe", Method="dmoco", ProjHidden=0, Eps=0.0, EMA=0.9, Negatives="mixed",
         Policy="duel", Admission="protected", SafeUpdate=True, MemorySize=10, MemNegatives=6, MemoryFrom="target",
         ShuffleBN=True, BNSplits=2, Seed=46),
    # The other admission readings of docs/duel-readings.md, each deciding
    # otherwise than Protected would on the same rows at least once.
    dict(Name="dsimclr-compete", Method="dsimclr", ProjHidden=0, Eps=1.0, Negatives="mixed",
         Policy="duel", Admission="compete", MemorySize=12, MemNegatives=6, MemoryFrom="target", Seed=52),
    dict(Name="dsimclr-insert-first", Method="dsimclr", ProjHidden=0, Eps=1.0, Negatives="mixed",
         Policy="duel", Admission="insert-first", MemorySize=10, MemNegatives=6, MemoryFrom="step", Seed=1),
    dict(Name="dsimclr-max-score", Method="dsimclr", ProjHidden=0, Eps=1.0, Negatives="mixed",
         Policy="duel", Admission="max-score", MemorySize=12, MemNegatives=6, MemoryFrom="step", Seed=1),
    # --mem-refresh: D-MoCo's 4 stalest rows re-encoded by the key encoder
    # (shuffled across its 2 BatchNorm groups), D-SimCLR's 5 by the encoder.
    dict(Name="dmoco-refresh", Method="dmoco", ProjHidden=0, Eps=0.0, EMA=0.9, Negatives="mixed",
         Policy="duel", Admission="protected", MemRefresh=4, MemorySize=12, MemNegatives=6, MemoryFrom="step",
         ShuffleBN=True, BNSplits=2, Seed=5),
    dict(Name="dsimclr-refresh", Method="dsimclr", ProjHidden=0, Eps=1.0, Negatives="mixed",
         Policy="duel", Admission="protected", MemRefresh=5, MemorySize=12, MemNegatives=6, MemoryFrom="target",
         Seed=1),
    # --max-age 1: at step 2 the rows of step 0 leave before the fill and the policy.
    dict(Name="dsimclr-max-age", Method="dsimclr", ProjHidden=0, Eps=1.0, Negatives="mixed",
         Policy="duel", Admission="protected", MaxAge=1, MemorySize=10, MemNegatives=6, MemoryFrom="target", Seed=25),
    # The paper's optimizer (Appendix E.2: Adam; duelctl's default), with L2 weight decay.
    dict(Name="dmoco-adam", Method="dmoco", ProjHidden=0, Eps=0.0, EMA=0.9, Negatives="mixed",
         Policy="duel", Admission="protected", MemorySize=12, MemNegatives=6, MemoryFrom="step",
         ShuffleBN=True, BNSplits=2, Seed=3, Optimizer="adam", LR=1e-3, Beta1=0.9, Beta2=0.999, AdamEps=1e-8,
         WeightDecay=1e-4),
    # BYOL's CIFAR-10 heads (Appendix E.2: no BatchNorm, paper-cifar10's --head-bn=false).
    dict(Name="byol-nobn", Method="byol", ProjHidden=32, PredHidden=24, HeadBN=False, EMA=0.9),
]


def heads_of(cfg, feat):
    d, h = cfg["ProjDim"], cfg.get("ProjHidden", 0)
    m = cfg["Method"]
    if m == "byol":
        return {"projector": mlp([feat, h, d], hidden_bn=cfg["HeadBN"]),
                "predictor": mlp([d, cfg["PredHidden"], d], hidden_bn=cfg["HeadBN"])}
    if m == "barlow":
        return {"projector": mlp([feat, h, h, d], hidden_bn=True, bias=False)}
    return {"projector": mlp([feat, d] if h == 0 else [feat, h, d])}


def run(cfg, enc_state, heads, views, batches, images, dtype):
    """Runs cfg's steps in dtype; returns the losses, every part's final
    state, the memory and its ids after each step."""
    m = Method(cfg, enc_state, heads, dtype)
    losses, mem_ids = [], []
    for s in range(STEPS):
        x0, x1 = (v.to(dtype) for v in views[s])
        losses.append(m.step(x0, x1, batches[s]["ids"], s, images.to(dtype)))
        if m.mem is not None:
            mem_ids.append(list(m.mem.ids))
    state = {prefix: {k: v.detach().clone() for k, v in mod.state_dict().items()} for prefix, mod in m.parts}
    return {"losses": losses, "state": state, "mem": m.mem, "mem_ids": mem_ids}


def errors(got, want, enc_state, heads):
    """parity_test.go's measures of got against want: the largest relative
    loss error, and over the float tensors of every part the largest
    max|diff| / (max|want| + floor) of the final values and of the updates
    (final - initial). Integer tensors and the memory's ids must be equal."""
    out = {"loss": max(abs(g - w) / abs(w) for g, w in zip(got["losses"], want["losses"])), "state": 0.0, "update": 0.0}
    for prefix, sd in want["state"].items():
        part = prefix.split("_")[-1] if prefix else ""
        start = enc_state if part in ("", "encoder") else heads[part].state_dict()
        for k, w in sd.items():
            if not w.is_floating_point():
                assert torch.equal(got["state"][prefix][k], w), (prefix, k)
                continue
            w, g, s0 = w.double(), got["state"][prefix][k].double(), start[k].double()
            ratio = lambda d, r, floor: float(d.abs().max() / (float(r.abs().max()) + floor))  # noqa: E731
            out["state"] = max(out["state"], ratio(g - w, w, STATE_FLOOR))
            out["update"] = max(out["update"], ratio((g - s0) - (w - s0), w - s0, UPDATE_FLOOR))
    if want["mem"] is not None:
        assert got["mem_ids"] == want["mem_ids"], (got["mem_ids"], want["mem_ids"])
    return out


def save(w, extra):
    """Writes w's arrays and index, the JSON compact (it indexes ~1400 arrays)."""
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, GROUP + ".bin"), "wb") as f:
        for c in w.chunks:
            f.write(c)
    meta = dict(extra, torch=torch.__version__, cases=w.cases, tensors=w.index)
    with open(os.path.join(OUT, GROUP + ".json"), "w") as f:
        json.dump(meta, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")


def main():
    torch.manual_seed(11)  # a seed whose DUEL decisions all clear MIN_GAP
    torch.set_num_threads(1)
    if torch.__version__.split(".")[:2] != ["1", "13"]:
        print("warning: the fixture was made with PyTorch 1.13, this is", torch.__version__, file=sys.stderr)
    w = gf.Writer(GROUP)

    # The data: IMAGES fixed images; step s takes BATCH distinct ids and two
    # views of each (the image, scaled, plus noise).
    images = torch.randn(IMAGES, *SHAPE)
    w.add("images", images)
    batches = []
    views = []
    for s in range(STEPS):
        ids = torch.randperm(IMAGES)[:BATCH].tolist()
        vs = [images[ids] * (0.8 + 0.4 * torch.rand(BATCH, 1, 1, 1)) + 0.3 * torch.randn(BATCH, *SHAPE)
              for _ in range(2)]
        for v, x in enumerate(vs):
            w.add(f"step{s}/view{v}", x)
        batches.append({"step": s, "ids": ids})
        views.append(vs)

    # The encoder every method starts from (its momentum copies too).
    enc0 = gf.resnet(DEPTH, width=WIDTH, cifar=True, num_classes=0)
    gf.randomize_bn(enc0)
    enc_state = enc0.state_dict()
    for k, v in enc_state.items():
        w.add(f"init/encoder/{k}", v)
    feat = 8 * WIDTH

    # Every head is drawn before any step runs (building a network draws
    # from torch's generator), so a case's start does not depend on the others'.
    cfgs = [dict(COMMON, **case) for case in CASES]
    for cfg in cfgs:
        if cfg.get("Optimizer") == "adam":
            del cfg["Momentum"]  # SGD's
    safe_outcomes = set()
    all_heads = [heads_of(cfg, feat) for cfg in cfgs]
    for cfg, heads in zip(cfgs, all_heads):
        name = cfg["Name"]
        init = {"": "init/encoder"}
        for hn, h in heads.items():
            for k, v in h.state_dict().items():
                w.add(f"{name}/init/{hn}/{k}", v)
            init[hn] = f"{name}/init/{hn}"
        ref = run(cfg, enc_state, heads, views, batches, images, torch.float64)
        for prefix in ref["state"]:
            if prefix.startswith(("key_", "target_")):
                init[prefix] = init[prefix.split("_")[1]] if prefix.endswith("projector") else "init/encoder"
        w.add(f"{name}/loss", torch.tensor(ref["losses"], dtype=torch.float64))
        for prefix, sd in ref["state"].items():
            for k, v in sd.items():
                w.add(f"{name}/final/{prefix or 'encoder'}/{k}", v)
        cfg["Init"] = init
        if ref["mem"] is not None:
            w.add(f"{name}/memory_rows", ref["mem"].rows)
            cfg["MemoryIDs"] = ref["mem_ids"]
            if ref["mem"].gaps:
                gap = min(ref["mem"].gaps)
                cfg["MinScoreGap"] = gap
                assert gap > MIN_GAP, f"{name}: a DUEL decision with a score gap of {gap:.2e}; change the seed"
        # What the memory options' cases must exercise to test anything.
        mem = ref["mem"]
        if cfg.get("Admission", "protected") != "protected":
            assert any(mem.differs), f"{name}: every decision is Protected's; change the seed"
        if cfg.get("MaxAge"):
            assert mem.expired > 0, f"{name}: no row grew too old"
        if cfg.get("MemRefresh"):
            assert mem.refreshed > 0, f"{name}: no row refreshed"
        if cfg.get("SafeUpdate"):
            assert mem.safe_log, f"{name}: the safe update never ran"
            for d in mem.safe_log:
                assert abs(d["After"] - d["Before"]) > SAFE_MIN_GAP and d["Agrees_cos"] and d["Agrees_exp"] and \
                    d.get("FillReadingSame", True), \
                    f"{name}: a safe update decision too close to call ({d}); change the seed"
                safe_outcomes.add(d["Accepted"])
            cfg["SafeUpdates"] = [{k: d[k] for k in ("Step", "Accepted", "Before", "After")} for d in mem.safe_log]
        # PyTorch's own float32 error against the float64 answer, measured as
        # parity_test.go measures Go's: the yardstick of its tolerances.
        f32 = run(cfg, enc_state, heads, views, batches, images, torch.float32)
        cfg["Float32Errors"] = errors(f32, ref, enc_state, heads)
        w.cases.append(cfg)
        print(name, "losses", ["%.6f" % l for l in ref["losses"]], "memory",
              ref["mem_ids"][-1] if ref["mem_ids"] else "-", "min gap %.3g" % cfg.get("MinScoreGap", math.nan),
              "PyTorch float32 errors", {k: "%.2e" % v for k, v in cfg["Float32Errors"].items()}, file=sys.stderr)
    assert safe_outcomes == {True, False}, "the safe update cases must keep one update and reject one"
    save(w, {"batches": batches, "steps": STEPS})
    size = os.path.getsize(os.path.join(OUT, GROUP + ".bin"))
    print(f"wrote {OUT}/{GROUP}.bin ({size} bytes) and {GROUP}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
