#!/usr/bin/python3
"""Peer benchmark of `duelctl bench step --method M`: the same self-supervised
training step in PyTorch, for all six methods (simclr, moco, dmoco, dsimclr,
byol, barlow).

Both sides run duelctl's cpu-small preset's step (train.Preset("cpu-small",
M), the settings `bench step` keeps) on fixed random views of --batch 32x32
images (ids 0..B-1), the same step over and over:

  encoder     ResNet-18 at width 16 (--arch), CIFAR stem, no fc (features 128)
  optimizer   SGD, lr 0.1, momentum 0.9, weight decay 5e-4 on every trained
              parameter (what `bench step` builds, not the preset's Adam)
  simclr      both views through encoder and projector Linear(128, 256),
              L2-normalised; NT-Xent (tau 0.5, eps 1) over the 2B rows
  moco        MoCo v2: queries (view 0) through encoder and Linear(128, 256);
              keys (view 1) through the momentum copies without gradient, the
              key batch shuffled across 4 ghost BatchNorm groups (bn_splits 4,
              shuffle_bn, in both encoders) and put back; InfoNCE (tau 0.5,
              eps 1) of each query against its key and all K = 2048 memory
              rows (negatives "memory", mem_negatives 0); then the EMA (0.99)
              of the key encoder and projector, then the FIFO memory takes the
              step's B keys (memory_from "step")
  dmoco       moco with the DUEL memory (policy duel, admission protected)
              instead of the FIFO queue: every step B keys arrive at a full
              memory and the policy evicts B rows
  dsimclr     simclr plus 64 memory samples (mem_negatives 64, negatives
              "mixed": the batch and the samples): 64 positions drawn from the
              memory, their images fetched (random normal 3x32x32 images on
              both sides, as `bench step`'s image source) and re-embedded by
              the current encoder and projector without gradient (BatchNorm in
              training mode); NT-Xent with them as extra negatives; then the
              B view-0 projections (memory_from "step") enter the full DUEL
              memory (protected)
  byol        online: encoder, projector Linear(128,512)-BN-ReLU-Linear(512,
              256), predictor Linear(256,512)-BN-ReLU-Linear(512,256) on both
              views; target (EMA copies of encoder and projector, no
              gradient) on both views; symmetric normalised MSE; EMA 0.99
  barlow      encoder and projector Linear(128,512)-BN-ReLU-Linear(512,512)-
              BN-ReLU-Linear(512,512), no biases, on both views; Barlow Twins
              loss, lambda 5e-3

A memory (moco, dmoco, dsimclr) is full before the first step: K random unit
rows on both sides (`bench step` fills it with random rows, ids -1..-K), so
every step's update goes through the policy.

What runs on the PyTorch side (torch 1.13, CPU, --threads threads):

  The method code is duel/ssl/gen_parity_fixtures.py's, imported, not copied:
  its Method class (networks, heads, ghost BatchNorm, key shuffle, EMA, the
  step in Algorithm 3's order, losses, pick_rows) is the PyTorch transcription
  that TestMethodParity checks our Go methods against to float32 rounding.
  The networks are built at --arch by setting its DEPTH and WIDTH. This
  script changes only what a fixture generator does differently from a fast
  training loop:

  - the memory: FastMemory below replaces its Memory, whose DUEL update
    (duel_evict, the reference) rebuilds the (K+B)^2 score matrix and scans
    every held row in Python at each of the B decisions. FastMemory makes the
    same decisions (the grid of docs/duel-readings.md, exact scores, ties to
    the lowest position, Protected admission; --check verifies it decision
    by decision against duel_evict and gen_parity_fixtures.Memory) as
    duel/memory's fast path does: it keeps the K x K grid dot products and
    the scores between updates, so an update is one B x (K+B) x Z float32
    product (exact: grid dots are integers below 2^24), B numpy passes over
    the K scores (argmax, subtract the evicted row's dots, add the
    newcomer's) and the O(KB) bookkeeping. The FIFO queue is a ring buffer
    (MoCo's own enqueue).
  - memory negatives: with mem_negatives 0 the memory's rows are used in
    place (no gather of all K rows; Go does the same).
  - the optimizer: the same SGD with weight_decay 5e-4, as `bench step`'s.
  - dsimclr's memory samples: `images` is a source of fresh random images
    (torch.randn), as `bench step`'s image source.
  - eps: the presets' eps 1 runs as EPS = 1 - 2^-40, the same losses in
    float32 (--check: equal to eps 1's), so that the parity code's
    info_nce and nt_xent skip their self-checks, which run only at eps == 1
    and recompute the loss in the method's own formulation (moco/dmoco: one
    more B x K x 256 product, ~1 ms a step; --check times them).

  What stays in, though Go does it faster: the parity code's pure-Python
  SplitMix draws (MoCo's key permutation, dsimclr's 64 memory positions,
  ~0.1 ms each), its per-parameter EMA loop (MoCo's and BYOL's own), and
  torch.optim.SGD's default (per-parameter) CPU path.

What runs on the duelctl side: `BIN bench step --method M --arch A --batch B
--steps S --warmup W --json` with GOMAXPROCS=--threads: train.NewMethodFor
with the cpu-small preset (arch and batch from the flags, SGD 0.1), the
memory filled with random rows, SGD 0.1/0.9/5e-4, the method's Loss,
backward, optimizer step and Update (EMA, memory update) per step; the
DUEL memory decides on the host with duel/memory's fast path (NewDUEL,
protected), dsimclr's memory samples are random normal images. With
--duelctl the script first reads each method's cpu-small settings from
`BIN train --method M --steps 0` (config.json) and stops if they differ from
those below.

Each of --rounds rounds times --steps steps (after --warmup) in PyTorch, then
runs duelctl; the per-round medians, their best and median and the ratios
duelctl/PyTorch (images per second, above 1: duelctl faster) are printed.
Each round also measures the CPU time other processes took meanwhile
(/proc/stat's busy time less this process's and duelctl's); a round where
they took more than --disturbed CPU-seconds is left out of the figures and
repeated. --quiet-load L waits, before each method, for the 1-minute load
average to fall below L.
Run PyTorch at its best, as bench/RESULTS.md does:

    env -u OPENBLAS_CORETYPE \\
        GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184 \\
        /usr/bin/python3 bench/ssl_step_pytorch.py --method all --rounds 3 --duelctl ./duelctl

    /usr/bin/python3 bench/ssl_step_pytorch.py --check   # FastMemory vs the parity code

Prints one JSON object as its last line.
"""
import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "duel", "ssl"))
import gen_parity_fixtures as gpf  # noqa: E402  (the verified PyTorch transcription of every method)
from step_pytorch import run_duelctl, time_steps  # noqa: E402  (the supervised step's peer)

METHODS = ["simclr", "moco", "dmoco", "dsimclr", "byol", "barlow"]
WEIGHT_DECAY = 5e-4  # bench step's SGD
# The eps the PyTorch side runs for the presets' eps 1: the same losses in
# float32 (log(EPS) = -2^-40 vanishes beside every logit), but gen_parity_
# fixtures' info_nce and nt_xent then skip their self-checks, which run only
# at eps == 1 and recompute the loss in the method's own formulation
# (--check measures them and checks the losses against eps 1).
EPS = 1.0 - 2.0 ** -40

# cpu-small's settings of each method (train.Preset), under ssl.Config's
# names as gen_parity_fixtures reads them.
COMMON = dict(ProjDim=256, Tau=0.5, Eps=1.0, LR=0.1, Momentum=0.9, Seed=1)
MEMORY = dict(MemorySize=2048, Admission="protected", MemoryFrom="step")
PRESETS = {
    "simclr": dict(ProjHidden=0, Negatives="batch", BNSplits=1),
    "moco": dict(MEMORY, ProjHidden=0, EMA=0.99, Negatives="memory", Policy="fifo", MemNegatives=0,
                 ShuffleBN=True, BNSplits=4),
    "dmoco": dict(MEMORY, ProjHidden=0, EMA=0.99, Negatives="memory", Policy="duel", MemNegatives=0,
                  ShuffleBN=True, BNSplits=4),
    "dsimclr": dict(MEMORY, ProjHidden=0, Negatives="mixed", Policy="duel", MemNegatives=64, BNSplits=1),
    "byol": dict(ProjHidden=512, PredHidden=512, HeadBN=True, EMA=0.99, BNSplits=1),
    "barlow": dict(ProjHidden=512, ProjDim=512, BarlowLambda=5e-3, BNSplits=1),
}
# config.json names of the settings above, and settings that must be off.
JSON_NAMES = dict(ProjDim="proj_dim", ProjHidden="proj_hidden", PredHidden="pred_hidden", HeadBN="head_bn",
                  Tau="tau", Eps="eps", EMA="ema", BarlowLambda="barlow_lambda", Negatives="negatives",
                  MemorySize="memory_size", Policy="policy", Admission="admission", MemNegatives="mem_negatives",
                  MemoryFrom="memory_from", ShuffleBN="shuffle_bn", BNSplits="bn_splits")
OFF = dict(safe_update=False, max_age=0, mem_refresh=0, sync_bn=False, stem="cifar")
CONTRASTIVE = {"simclr", "moco", "dmoco", "dsimclr"}


def preset(method, memory_size=0):
    cfg = dict(COMMON, Method=method, Name=method, **PRESETS[method])
    if method not in CONTRASTIVE:
        for k in ("Tau", "Eps"):
            del cfg[k]
    if memory_size and "MemorySize" in cfg:
        cfg["MemorySize"] = memory_size
    return cfg


def check_preset(duelctl, method, cfg):
    """Compares cfg with duelctl's cpu-small settings of method (config.json
    of `train --steps 0`); raises on a difference."""
    with tempfile.TemporaryDirectory(prefix="ssl_step_") as d:
        out = os.path.join(d, "run")
        subprocess.run([duelctl, "train", "--method", method, "--steps", "0", "--out", out, "--json"],
                       check=True, capture_output=True, text=True)
        with open(os.path.join(out, "config.json")) as f:
            go = json.load(f)
    want = {JSON_NAMES[k]: v for k, v in cfg.items() if k in JSON_NAMES and k != "MemorySize"}
    want.update(OFF)
    diff = {k: (v, go.get(k)) for k, v in want.items() if go.get(k) != v}
    if go.get("preset") != "cpu-small" or diff:
        raise SystemExit(f"{method}: this script's settings differ from duelctl's cpu-small preset "
                         f"(setting: (script, duelctl)): {diff}")


# --- the memory ---

GRID = 2048  # docs/duel-readings.md, "Scores": components rounded to multiples of 1/2048


def to_grid(x):
    """floor(2048 x + 1/2) of float32 unit rows, computed in float64 as
    duel/memory's gridOf (exact), returned as float32 (|X| <= 2048)."""
    return np.floor(x.astype(np.float64) * GRID + 0.5).astype(np.float32)


class FastMemory:
    """A full memory of K unit rows (float32), in slots that do not move, its
    order (oldest first) kept apart; add(rows, ids) runs the policy on B rows.

    duel: Appendix D's update in the Protected reading (new rows cannot
    leave before their batch ends), with duel/memory's fast path's state:
    the grid rows per slot, the K x K grid dot products between slots
    (float32, exact integers: |X.Y| < 2^24) and each slot's score as the
    exact integer sum of its dots with the rows held (q = 1/2 + d 2^-23 is
    affine in d, and every held row sums over the same number of rows, so
    comparing these integers compares the q scores). During an update the
    key of a slot is its score plus (K-1-position) / 2^bits: argmax breaks
    ties on the lowest position, as torch.argmax on the reference's
    memory order, and all of it is exact in float64.

    fifo: a ring buffer, the B oldest rows replaced (MoCo's enqueue)."""

    def __init__(self, rows, ids, policy):
        self.k, self.z = rows.shape
        self.policy = policy
        self.slots = np.ascontiguousarray(F.normalize(rows, dim=1).numpy(), dtype=np.float32)
        self.rows = torch.from_numpy(self.slots)  # the memory negatives, in slot order, shared
        self.slot_ids = np.asarray(ids, dtype=np.int64)
        self.order = np.arange(self.k)  # order[p]: the slot at position p
        self.ptr = 0
        if policy == "duel":
            self.frac = 2.0 ** -math.ceil(math.log2(self.k + 1))
            # Scores up to (K+B) 2^22 in magnitude plus the position
            # fraction must stay exact in float64 (checked for B <= K).
            assert 2 * self.k * 2 ** 22 / self.frac < 2 ** 52, "memory too large for exact float64 keys"
            self.grid = to_grid(self.slots)
            self.dots = np.ascontiguousarray(self.grid @ self.grid.T)
            self.flat = self.dots.reshape(-1)  # a view, for the column writes
            self.row_start = (np.arange(self.k) * self.k)[:, None]
            self.score = self.dots.sum(1, dtype=np.float64)
            self.tie = (self.k - 1 - np.arange(self.k)) * self.frac
        elif policy != "fifo":
            raise ValueError(policy)
        self.ids = self.slot_ids.tolist()

    def add(self, rows, ids):
        x = F.normalize(rows.detach().float(), dim=1).numpy()
        b = x.shape[0]
        if b > self.k:
            raise ValueError(f"a batch of {b} rows for a memory of {self.k}")
        if self.policy == "fifo":
            s = (self.ptr + np.arange(b)) % self.k
            self.ptr = (self.ptr + b) % self.k
            self.order = np.roll(np.arange(self.k), -self.ptr)
        else:
            s = self.duel(x)
        self.slots[s] = x
        self.slot_ids[s] = ids
        self.ids = self.slot_ids[self.order].tolist()

    def duel(self, x):
        """Runs the policy on the batch x; returns the slots the B new rows
        take (those of the rows they evict, in batch order) and leaves the
        state describing the memory after the update."""
        b, k = x.shape[0], self.k
        g = to_grid(x)
        old = g @ self.grid.T  # B x K: the new rows against the rows held
        new = g @ g.T  # B x B: against each other
        key = self.score + self.tie
        victims = np.empty(b, dtype=np.int64)
        dots = self.dots
        for i in range(b):
            j = int(key.argmax())  # (a) the top score among the rows held (newcomers are protected)
            victims[i] = j
            key -= dots[j]  # (b) j leaves
            key[j] = -np.inf
            key += old[i]  # (c) row i enters
        rows = old.copy()  # the new rows' dots with the slots after the update
        rows[:, victims] = new
        dots[victims, :] = rows
        self.flat[(self.row_start + victims).ravel()] = rows.T.ravel()  # dots[:, victims] = rows.T, faster
        self.score = key - self.tie
        self.score[victims] = rows.sum(1, dtype=np.float64)
        self.grid[victims] = g
        gone = np.zeros(k, dtype=bool)
        gone[victims] = True
        self.order = np.concatenate([self.order[~gone[self.order]], victims])
        rank = np.empty(k, dtype=np.int64)
        rank[self.order] = np.arange(k)
        self.tie = (k - 1 - rank) * self.frac
        return victims


class RandomImages:
    """dsimclr's image source: fresh random normal images for any ids, as
    `bench step`'s (a dataset fetch and augmentation in training)."""

    def __init__(self, shape, seed=3):
        self.shape = shape
        self.gen = torch.Generator().manual_seed(seed)

    def __getitem__(self, ids):
        return torch.randn(len(ids), *self.shape, generator=self.gen)


class BenchMethod(gpf.Method):
    """gen_parity_fixtures.Method with bench step's optimizer, FastMemory
    (filled with mem_rows) and the memory's rows used in place as
    negatives."""

    def __init__(self, cfg, enc_state, heads, mem_rows=None):
        super().__init__(cfg, enc_state, heads, torch.float32)
        for g in self.opt.param_groups:
            g["weight_decay"] = WEIGHT_DECAY
        if self.mem is not None:
            self.mem = FastMemory(mem_rows, [-1 - i for i in range(len(mem_rows))], cfg["Policy"])

    def memory_negatives(self, step):
        n, k = self.cfg["MemNegatives"], len(self.mem.ids)
        if n == 0 or n >= k:
            return self.mem.rows  # every row, in slot order (the loss does not depend on the order)
        return self.mem.rows[self.mem.order[gpf.pick_rows(k, n, self.cfg["Seed"], step)]]


def parse_arch(arch):
    base, _, w = arch.partition("-w")
    return int(base.removeprefix("resnet")), int(w) if w else 64


def build(method, arch, memory_size=0, seed=0, bench=True):
    """The method of cpu-small at arch, its memory (if any) full of random
    rows: (method object, cfg). bench: the bench's eps (EPS for 1)."""
    depth, width = parse_arch(arch)
    gpf.DEPTH, gpf.WIDTH = depth, width  # gpf.encoder builds at these
    torch.manual_seed(seed)
    cfg = preset(method, memory_size)
    if bench and cfg.get("Eps") == 1:
        cfg["Eps"] = EPS
    enc0 = gpf.gf.resnet(depth, width=width, cifar=True, num_classes=0)
    feat = 8 * width * (4 if depth >= 50 else 1)  # the pooled features (Bottleneck's expansion 4)
    heads = gpf.heads_of(cfg, feat)
    rows = torch.randn(cfg["MemorySize"], cfg["ProjDim"]) if "MemorySize" in cfg else None
    return BenchMethod(cfg, enc0.state_dict(), heads, rows), cfg


# --- the self-check ---

def check_memory(k, b, z, updates, seed):
    """FastMemory against gen_parity_fixtures.Memory (duel_evict, the
    reference transcription of Appendix D, and its FIFO), from the same full
    memory: the same ids and rows in the same order after every update.
    The rows are drawn with replacement from a pool of clustered rows, so
    exact duplicates, and ties between their scores, are common."""
    gen = torch.Generator().manual_seed(seed)
    n = k + updates * b
    centers = torch.randn(8, z, generator=gen)
    pool = centers[torch.randint(0, 8, (n // 3,), generator=gen)] + 0.3 * torch.randn(n // 3, z, generator=gen)
    stream = pool[torch.randint(0, n // 3, (n,), generator=gen)]
    res = {"k": k, "b": b, "z": z, "updates": updates}
    for policy in ("duel", "fifo"):
        ref = gpf.Memory(k, policy)
        ref.add(stream[:k], [-1 - i for i in range(k)])
        fast = FastMemory(stream[:k], [-1 - i for i in range(k)], policy)
        for u in range(updates):
            lo = k + u * b
            ids = list(range(lo, lo + b))
            ref.add(stream[lo:lo + b], ids)
            fast.add(stream[lo:lo + b], ids)
            assert fast.ids == ref.ids, (policy, k, b, z, u)
            assert np.array_equal(fast.slots[fast.order], ref.rows.numpy()), (policy, "rows", u)
        if policy == "duel":
            res["decisions"], res["ties"] = len(ref.gaps), sum(g == 0 for g in ref.gaps)
    return res


def check_steps(method, steps=4):
    """A few steps of method on a small network (ResNet-18 at width 2, 16x16
    images, batch 8, K 24, at most 6 memory samples) as the bench runs them
    (FastMemory, memory rows in place, EPS) and as the parity code does
    (its Memory and memory_negatives, eps 1 with its self-checks), from the
    same state: the same losses to float32 rounding and the same memory ids.
    Returns the largest relative loss difference."""
    size, out = 16, []
    for bench in (True, False):
        m, cfg = build(method, "resnet18-w2", memory_size=24, seed=5, bench=bench)
        cfg["MemNegatives"] = min(cfg.get("MemNegatives", 0), 6)
        if not bench and m.mem is not None:
            ref = gpf.Memory(cfg["MemorySize"], cfg["Policy"])
            ref.rows, ref.ids = m.mem.rows.clone(), list(m.mem.ids)  # the same full memory
            m.mem = ref
            m.memory_negatives = lambda step, m=m: gpf.Method.memory_negatives(m, step)
        torch.manual_seed(9)
        x0, x1 = torch.randn(8, 3, size, size), torch.randn(8, 3, size, size)
        images = RandomImages((3, size, size))
        losses, ids = [], []
        for s in range(steps):
            losses.append(m.step(x0, x1, list(range(8)), s, images))
            ids.append(list(m.mem.ids) if m.mem is not None else None)
        out.append((losses, ids))
    (lb, ib), (lr, ir) = out
    assert ib == ir, (method, "memory ids")
    err = max(abs(a - b) / abs(b) for a, b in zip(lb, lr))
    assert err < 1e-5, (method, lb, lr)
    return err


def time_self_check(reps=30):
    """The cost of the losses' self-checks, forward and backward, at the
    bench's shapes (B 64, K 2048, Z 256): info_nce and nt_xent with eps 1
    (check included) and with EPS (no check, the same work otherwise),
    alternated; the medians in ms."""
    z = lambda n: F.normalize(torch.randn(n, 256), dim=1)  # noqa: E731
    q, k, neg = z(64).requires_grad_(), z(64), z(2048)
    losses = {"moco": lambda eps: gpf.info_nce(q, k, neg, 0.5, eps, False),
              "simclr": lambda eps: gpf.nt_xent(q, k, None, 0.5, eps, True)}
    res = {}
    for name, f in losses.items():
        t = {1.0: [], EPS: []}
        for r in range(reps + 3):
            for eps in t:
                t0 = time.perf_counter()
                f(eps).backward()
                if r >= 3:
                    t[eps].append((time.perf_counter() - t0) * 1e3)
        res[name] = {"with": statistics.median(t[1.0]), "without": statistics.median(t[EPS])}
    return res


def self_check():
    res = {"memory": [check_memory(64, 8, 16, 12, 1), check_memory(256, 32, 32, 6, 2), check_memory(2048, 64, 256, 3, 3)]}
    for r in res["memory"]:
        print(f"FastMemory = gen_parity_fixtures.Memory (duel and fifo): K {r['k']} B {r['b']} Z {r['z']}, "
              f"{r['updates']} updates, the same {r['decisions']} DUEL decisions ({r['ties']} between tied scores)")
    res["steps"] = {}
    for method in METHODS:
        err = check_steps(method)
        res["steps"][method] = err
        print(f"{method}: 4 steps as benched = as the parity code runs them: losses within {err:.1e}, same memory ids")
    res["loss_ms"] = time_self_check()
    for name, t in res["loss_ms"].items():
        print(f"{name}'s loss forward+backward (B 64, K 2048): {t['with']:.2f} ms with the parity code's "
              f"self-check (eps 1), {t['without']:.2f} ms without (eps {EPS!r})")
    return res


# --- the benchmark ---

def cpu_counters():
    """(busy CPU seconds of the whole machine, steal seconds, CPU seconds of
    this process and its waited-for children): the machine's minus ours is
    what other processes took while the benchmark ran."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = v
    t = os.times()
    return (user + nice + system + irq + softirq) / hz, steal / hz, t.user + t.system + t.children_user + t.children_system


def wait_quiet(limit, most_s):
    """Waits until the 1-minute load average is below limit (this script's
    own earlier work decays from it too), at most most_s seconds; returns it."""
    t0 = time.monotonic()
    while (load := os.getloadavg()[0]) >= limit:
        if time.monotonic() - t0 > most_s:
            raise SystemExit(f"the load stayed at or above {limit} for {most_s:.0f} s (now {load:.2f})")
        time.sleep(5)
    return load


def bench_method(a, method):
    # Waits before building anything: under OMP_WAIT_POLICY=ACTIVE torch's
    # idle threads would spin meanwhile.
    load = wait_quiet(a.quiet_load, a.quiet_wait) if a.quiet_load else os.getloadavg()[0]
    cfg = preset(method, a.memory_size)
    if a.duelctl:
        check_preset(a.duelctl, method, cfg)
    m, cfg = build(method, a.arch, a.memory_size)
    torch.manual_seed(1)
    x0, x1 = torch.randn(a.batch, 3, 32, 32), torch.randn(a.batch, 3, 32, 32)
    ids = list(range(a.batch))
    images = RandomImages((3, 32, 32))
    counter = itertools.count()

    def step():
        # bf16: the method's forward passes and losses under autocast (the
        # backward runs in the dtypes they chose, as AMP's does).
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            m.step(x0, x1, ids, next(counter), images)

    cmd = None
    if a.duelctl:
        cmd = [a.duelctl, "bench", "step", "--method", method, "--arch", a.arch, "--batch", str(a.batch),
               "--steps", str(a.steps), "--warmup", str(a.warmup), "--json"]
        if a.memory_size:
            cmd += ["--memory-size", str(a.memory_size)]
        if a.precision != "fp32":
            cmd += ["--precision", a.precision]
    rounds, kept = [], []
    while len(kept) < a.rounds and len(rounds) < 3 * a.rounds:
        busy0, steal0, ours0, wall0 = *cpu_counters(), time.perf_counter()
        times, cpu_ms = time_steps(step, a.warmup, a.steps)
        rd = {"pytorch_ms": statistics.median(times), "pytorch_ms_all": times, "pytorch_cpu_ms": cpu_ms}
        line = f"{method} round {len(kept) + 1}/{a.rounds}: pytorch {rd['pytorch_ms']:.1f} ms (CPU {cpu_ms:.0f} ms)"
        if cmd:
            go = run_duelctl(cmd, a.threads)
            rd["go_ms"], rd["go_ms_all"], rd["ratio"] = go["step_ms"], go["step_ms_all"], rd["pytorch_ms"] / go["step_ms"]
            line += f", duelctl {go['step_ms']:.1f} ms: {rd['ratio']:.2f}x"
        busy1, steal1, ours1 = cpu_counters()
        rd["wall_s"], rd["steal_s"] = time.perf_counter() - wall0, steal1 - steal0
        rd["others_cpu_s"] = max(0.0, (busy1 - busy0) - (ours1 - ours0))
        rd["disturbed"] = a.disturbed > 0 and rd["others_cpu_s"] > a.disturbed
        line += f"; other processes {rd['others_cpu_s']:.2f} CPU-s, steal {rd['steal_s']:.2f} s in {rd['wall_s']:.1f} s"
        print(line + (" (disturbed: repeated)" if rd["disturbed"] else ""), flush=True)
        rounds.append(rd)
        if not rd["disturbed"]:
            kept.append(rd)
    if not kept:
        raise SystemExit(f"{method}: every round was disturbed by other processes")
    res = {"method": method, "arch": a.arch, "batch": a.batch, "precision": a.precision, "load_at_start": load, "rounds": rounds, "rounds_kept": len(kept),
           "pytorch_ms_best": min(r["pytorch_ms"] for r in kept),
           "pytorch_ms_median": statistics.median(r["pytorch_ms"] for r in kept)}
    s = (f"{method} {a.arch} batch {a.batch}, {len(kept)} undisturbed rounds (load {load:.2f} at the start): pytorch {res['pytorch_ms_median']:.1f} ms median, "
         f"{res['pytorch_ms_best']:.1f} best")
    if cmd:
        res["go_ms_best"] = min(r["go_ms"] for r in kept)
        res["go_ms_median"] = statistics.median(r["go_ms"] for r in kept)
        res["ratio_median"] = res["pytorch_ms_median"] / res["go_ms_median"]
        res["ratio_best"] = res["pytorch_ms_best"] / res["go_ms_best"]
        s += (f"; duelctl {res['go_ms_median']:.1f} median, {res['go_ms_best']:.1f} best; ratio duelctl/pytorch "
              f"(img/s) {res['ratio_median']:.2f}x of the medians, {res['ratio_best']:.2f}x of the bests")
    print(s, flush=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", default="simclr", choices=METHODS + ["all"])
    ap.add_argument("--arch", default="resnet18-w16")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--memory-size", type=int, default=0, help="K of the memory (0: the preset's, 2048)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="alternations of PyTorch and duelctl per method")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                    help="bf16: PyTorch's step under torch.autocast(bfloat16), duelctl's with --precision bf16")
    ap.add_argument("--disturbed", type=float, default=0.2,
                    help="a round in which other processes took more than this many CPU-seconds is left out and repeated, up to 3x --rounds rounds in all (0: keep every round)")
    ap.add_argument("--quiet-load", type=float, default=0, help="before each method, wait until the 1-minute load average is below this (0: start at once)")
    ap.add_argument("--quiet-wait", type=float, default=1800, help="with --quiet-load: give up after this many seconds")
    ap.add_argument("--duelctl", help="duelctl binary to run with the same arguments for the ratio")
    ap.add_argument("--check", action="store_true", help="check FastMemory and the bench's overrides against the parity code, then exit")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        print(json.dumps(self_check()))
        return
    methods = METHODS if a.method == "all" else [a.method]
    res = {"threads": torch.get_num_threads(), "torch": torch.__version__, "numpy": np.__version__,
           "methods": [bench_method(a, m) for m in methods]}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
