#!/usr/bin/python3
"""PyTorch DDP (gloo) peer of duel's data-parallel scaling benchmark.

What it measures
    The training step of `duelctl bench step` (bench/step_pytorch.py's model:
    torchvision's CIFAR-stem ResNet in plain torch, from nn/gen_fixtures.py) on
    synthetic random 32x32 inputs, with one thread per process:

    --procs 1  one process, torch.set_num_threads(1), the plain model (no
               process group, no DDP): the single-core baseline.
    --procs 2  torch.multiprocessing.spawn of 2 processes, each with
               torch.set_num_threads(1), init_process_group("gloo",
               init_method="tcp://127.0.0.1:<free port>"), and
               DistributedDataParallel around the trainable modules (default
               bucket size 25 MB, default broadcast_buffers=True, so the
               BatchNorm buffers of rank 0 are broadcast at every forward).

    Method --method simclr (default): both views of the batch go through the
    encoder (ResNet without fc) and the projector (one Linear(feat, 256), duel's
    default SimCLR head: --proj-dim 256, --proj-hidden 0) as two separate
    forward passes (separate BatchNorm statistics per view, as duel's SimCLR
    does), L2 normalisation, NT-Xent (tau 0.5, the 2B-2 other projections as
    negatives), backward, SGD step (lr 0.1, momentum 0.9, weight decay 5e-4,
    the optimiser of `duelctl bench step`). Under DDP the NT-Xent uses only the
    rank's local batch (its 2B projections), as plain DDP SimCLR does: the
    ranks exchange only gradients. --gather instead all-gathers the projections
    of every rank with gradient (solo-learn's GatherLayer: the backward sums
    the gradients of the gathered rows over the ranks and keeps its own slice)
    and uses the local 2B anchors against all 2B*procs projections; this adds
    one all-gather per step and changes the loss (more negatives).
    Method --method supervised: bench/step_pytorch.py's step (cross-entropy on
    10 classes with the ResNet's fc).

    Each process draws its own fixed random batch (seeded by its rank) once;
    --warmup untimed steps, then --steps timed ones. A step's time is the
    slowest rank's (the per-step times are all-reduced with max; DDP's
    all-reduce makes the ranks wait for each other anyway); the median over
    the timed steps is reported.

Throughput and efficiency
    "Images" are samples of the batch (each SimCLR sample is processed as two
    views), counted over all ranks: img_per_s = procs * batch_per_rank /
    median step time. The primary comparison is weak scaling: a fixed per-rank
    batch (--batch, default 32), so 2 procs x 32 = global 64 against 1 proc x
    32, and

        scaling_efficiency = img_per_s(procs=2) / (2 * img_per_s(procs=1))

    (1.0 = perfect scaling; 0.5 = the second core brings nothing). With
    --global-batch G (strong scaling) each configuration splits the same global
    batch G over its processes (G per rank for 1 proc, G/2 for 2 procs); the
    same formula is then T1 / (2 * T2) of the step times, the speed-up over 2.
    The last line says which ("scaling": "weak" | "strong").

    On a shared, loaded machine the wall-clock figures of 2 processes mostly
    measure the other jobs. The last line therefore also gives
    cpu_scaling_efficiency = (CPU ms per sample, 1 process) / (CPU ms per
    sample of rank 0, 2 processes), from process CPU time (all threads, gloo's
    included): what the efficiency would be if each rank had its core to
    itself and never waited for the other; an upper bound, a check of the
    per-rank overhead of DDP, not the must-show figure.

Pinning
    --pin (default; --no-pin to disable): when os.sched_setaffinity exists and
    the process may run on >= 2 cores, rank r is pinned to the r-th core of
    the affinity set the script started with (the 1-process baseline to the
    first, so it runs on the same core as rank 0). gloo still runs its
    communication on background threads of the same process, on its core.

Usage (quiet machine; the figures are wall-clock):

    /usr/bin/python3 bench/ddp_pytorch.py --arch resnet18-w16 --batch 32 --steps 10 --warmup 2
    /usr/bin/python3 bench/ddp_pytorch.py --procs 2 --gather            # SimCLR with gathered negatives
    /usr/bin/python3 bench/ddp_pytorch.py --global-batch 64             # strong scaling
    /usr/bin/python3 bench/ddp_pytorch.py --method supervised --arch resnet18

Output: one JSON line per configuration,
    {"peer": "pytorch-ddp-gloo", "torch", "arch", "method", "procs",
     "batch_per_rank", "img_per_s", "ms_per_step", "threads_per_proc": 1, "cpu", ...}
and, when both 1 and 2 processes ran (--procs 1,2, the default), a final line
    {"scaling_efficiency": img_per_s(2) / (2 * img_per_s(1)), "scaling": ...}.
Progress goes to stderr.

Relation to duel: the Go side is `duelctl bench step --method simclr --threads 1`
(one process) against `mpirun -np 2 --bind-to core duelctl bench step --dist
mpi ...` (two ranks, one core each); bench/ddp_scaling.sh runs both it and this
script with the same --arch/--batch/--steps/--warmup and prints both
efficiencies.

Standard library + torch only. The model comes from bench/step_pytorch.py
(imported as a module: its build(arch)), which takes it from nn/gen_fixtures.py.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_pytorch  # noqa: E402  (build(arch): CIFAR-stem ResNet, torchvision's definition)

PEER = "pytorch-ddp-gloo"
LR, MOMENTUM, WEIGHT_DECAY = 0.1, 0.9, 5e-4  # duelctl bench step's SGD


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SimCLRNet(nn.Module):
    """Encoder (ResNet without fc) + projector; forward(x1, x2) -> (z1, z2),
    each view through its own forward pass, L2-normalised. One module, one
    DDP forward per step."""

    def __init__(self, arch, proj_dim):
        super().__init__()
        self.encoder = step_pytorch.build(arch)
        feat = self.encoder.fc.in_features
        self.encoder.fc = nn.Identity()
        self.projector = nn.Linear(feat, proj_dim)

    def forward(self, x1, x2):
        z1 = F.normalize(self.projector(self.encoder(x1)), dim=1)
        z2 = F.normalize(self.projector(self.encoder(x2)), dim=1)
        return z1, z2


class GatherLayer(torch.autograd.Function):
    """all_gather with gradient (solo-learn's GatherLayer)."""

    @staticmethod
    def forward(ctx, x):
        out = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(out, x)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        g = torch.stack(grads)
        dist.all_reduce(g)
        return g[dist.get_rank()]


def nt_xent(z1, z2, tau, gather):
    """SimCLR's NT-Xent (eps 1): anchors are the local 2B rows of [z1; z2],
    the positive of row a is a +- B, the negatives every other candidate row.
    Candidates: the local rows, or with gather those of every rank."""
    z = torch.cat([z1, z2])
    n = z.shape[0]
    b = n // 2
    offset = 0
    cand = z
    if gather:
        cand = torch.cat(GatherLayer.apply(z))
        offset = dist.get_rank() * n
    sim = z @ cand.t() / tau
    rows = torch.arange(n)
    sim[rows, rows + offset] = float("-inf")  # self-similarity
    target = (rows + b) % n + offset
    return F.cross_entropy(sim, target)


def worker(rank, a, procs, batch, cores, port, queue):
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    if cores:
        os.sched_setaffinity(0, {cores[rank]})
    distributed = procs > 1
    if distributed:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=procs,
                                timeout=datetime.timedelta(seconds=a.timeout))
    torch.manual_seed(0)  # same initial weights on every rank (DDP broadcasts rank 0's anyway)
    if a.method == "simclr":
        model = SimCLRNet(a.arch, a.proj_dim)
    else:
        model = step_pytorch.build(a.arch)
    model.train()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    g = torch.Generator().manual_seed(1000 + rank)
    x1 = torch.randn(batch, 3, a.size, a.size, generator=g)
    x2 = torch.randn(batch, 3, a.size, a.size, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)

    if a.method == "simclr":
        def loss_fn():
            z1, z2 = model(x1, x2)
            return nt_xent(z1, z2, a.tau, a.gather and distributed)
    else:
        def loss_fn():
            return F.cross_entropy(model(x1), y)

    def step():
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    if distributed:
        dist.barrier()
    times = []
    cpu0 = time.process_time()
    w0 = time.perf_counter()
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    wall_ms = (time.perf_counter() - w0) * 1e3
    cpu_ms = (time.process_time() - cpu0) * 1e3 / a.steps
    t = torch.tensor(times + [wall_ms], dtype=torch.float64)
    if distributed:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    times, wall_ms = t[:-1].tolist(), t[-1].item()
    if rank == 0:
        ms = statistics.median(times)
        queue.put({
            "peer": PEER, "torch": torch.__version__, "arch": a.arch, "method": a.method,
            "procs": procs, "batch_per_rank": batch, "global_batch": batch * procs,
            "img_per_s": batch * procs / ms * 1e3, "ms_per_step": ms,
            "img_per_s_mean": batch * procs * a.steps / wall_ms * 1e3,
            "threads_per_proc": torch.get_num_threads(), "cpu": cpu_model(),
            "pinned_cores": cores[:procs] if cores else None,
            "gather": bool(a.gather and distributed and a.method == "simclr"),
            "steps": a.steps, "warmup": a.warmup, "cpu_ms_per_step_rank0": cpu_ms,
            "loss": loss.item(), "ms_per_step_all": times,
        })
    if distributed:
        dist.barrier()
    # Leave without running destructors: in torch 1.13, tearing down DDP's
    # Reducer destroys the gloo process group, whose destructor joins a gloo
    # worker thread that may be waiting for the GIL the main thread holds
    # (seen here: rank 1 hung at exit, spinning on the dead store's socket).
    # The result is already in the pipe (SimpleQueue.put writes synchronously).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run(a, procs, batch, cores):
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port() if procs > 1 else 0
    mp.spawn(worker, args=(a, procs, batch, cores, port, queue), nprocs=procs, join=True)
    return queue.get()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="resnet18-w16", help="resnet18, resnet18-w16, resnet50, ... (step_pytorch.py's names)")
    ap.add_argument("--method", default="simclr", choices=["simclr", "supervised"])
    ap.add_argument("--procs", default="1,2", help="comma-separated process counts to run, in order (default 1,2)")
    ap.add_argument("--batch", type=int, default=32, help="samples per rank (weak scaling, the default comparison)")
    ap.add_argument("--global-batch", type=int, default=0,
                    help="strong scaling instead: split this global batch over the processes (overrides --batch)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps (median reported)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--size", type=int, default=32, help="image height and width")
    ap.add_argument("--proj-dim", type=int, default=256, help="SimCLR projector output (duel's default 256)")
    ap.add_argument("--tau", type=float, default=0.5, help="NT-Xent temperature (duel's default 0.5)")
    ap.add_argument("--gather", action="store_true",
                    help="SimCLR under DDP: all-gather the projections (with gradient) for the negatives")
    ap.add_argument("--timeout", type=int, default=300,
                    help="seconds before a gloo collective (or the rendezvous) gives up instead of hanging")
    ap.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True,
                    help="pin rank r to the r-th allowed core (default on when >= 2 cores)")
    a = ap.parse_args()
    procs_list = [int(p) for p in a.procs.split(",") if p.strip()]
    if not procs_list or any(p < 1 for p in procs_list):
        ap.error("--procs: expected positive integers, e.g. 1,2")
    cores = None
    if a.pin and hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) >= 2:
            cores = allowed
            if max(procs_list) > len(allowed):
                print(f"warning: {max(procs_list)} processes on {len(allowed)} cores: not pinning", file=sys.stderr)
                cores = None
    results = {}
    for procs in procs_list:
        if a.global_batch:
            if a.global_batch % procs:
                ap.error(f"--global-batch {a.global_batch} does not split over {procs} processes")
            batch = a.global_batch // procs
        else:
            batch = a.batch
        if batch < 2:
            ap.error("the per-rank batch must be >= 2 (BatchNorm)")
        print(f"{PEER}: {a.arch} {a.method}, {procs} process(es) x 1 thread, batch {batch} per rank ...",
              file=sys.stderr, flush=True)
        r = run(a, procs, batch, cores)
        results[procs] = r
        print(f"{PEER}: {procs} process(es): {r['ms_per_step']:.1f} ms per step, {r['img_per_s']:.1f} img/s",
              file=sys.stderr, flush=True)
        print(json.dumps(r), flush=True)
    if 1 in results and 2 in results:
        eff = results[2]["img_per_s"] / (2 * results[1]["img_per_s"])
        print(json.dumps({
            "peer": PEER, "scaling_efficiency": eff,
            "scaling": "strong" if a.global_batch else "weak",
            "img_per_s_1": results[1]["img_per_s"], "img_per_s_2": results[2]["img_per_s"],
            "cpu_scaling_efficiency": (results[1]["cpu_ms_per_step_rank0"] / results[1]["batch_per_rank"])
            / (results[2]["cpu_ms_per_step_rank0"] / results[2]["batch_per_rank"]),
            "arch": a.arch, "method": a.method,
        }), flush=True)


if __name__ == "__main__":
    main()
