#!/usr/bin/env python3
"""Time one DUEL memory update: the paper's PyTorch pseudocode vs duelctl.

The paper's Appendix D gives the DUEL policy as PyTorch-style pseudocode
(update_DUEL, below, transcribed as printed with MAX_SCORE = 0). This script
generates, for each (K, B, Z), a stream of K + R*B random unit rows, times
update_DUEL on each of the R batches (PyTorch 1.13 CPU, 2 threads), then
replays the same .npy stream with `duelctl memory replay` (the fast Go
implementation; it reports the median time of an update), alternating the
two --rounds times so that both see the same machine load. Each round gives
a median time per update for each side; the script prints, per shape, the
best (lowest) and the median of these round medians, side by side, with
their ratios. The best round is the least disturbed by other processes on
a shared machine.

Run from the repository root:

    /usr/bin/python3 bench/duel_pytorch.py            # all three shapes
    /usr/bin/python3 bench/duel_pytorch.py --shapes 2048,256,256 --rounds 5

Needs numpy and torch (Debian: python3-numpy python3-torch) and Go.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch


def score_function(x):
    return (1 + x) / 2


def update_DUEL(memory, p_target, K, MAX_SCORE=0.0):
    """Algorithm of Appendix D (PyTorch-style pseudocode), as printed."""
    B = p_target.shape[0]
    comb = torch.cat((memory, p_target), dim=0)
    # If memory is not full
    if len(memory) < K:
        return comb
    # Build score matrix
    score_matrix = score_function(torch.mm(comb, comb.transpose(0, 1)))
    # Initialize score and selection array
    score_memory = score_matrix[:K, :K]
    selection = torch.tensor([i < K for i in range(K + B)])
    score = torch.cat((score_memory.sum(-1), torch.zeros(B,)), 0)
    # DUEL policy
    for i in range(K, K + B):
        # (a) Select target
        J = torch.argmax(score)
        # (b) Logical deletion
        score -= score_matrix[J] * selection.double()
        selection[J] = False
        score[J] = 0.0
        # (c) Logical insertion
        t = score_matrix[i] * selection.double()
        score += t
        selection[i] = True
        score[i] = t.sum() + MAX_SCORE
    return comb[selection]


def time_torch(stream, K, B):
    """Median ms of update_DUEL over the full batches of the stream."""
    x = torch.nn.functional.normalize(torch.from_numpy(stream), dim=1)
    memory = x[:K]
    times = []
    for lo in range(K, len(x) - B + 1, B):
        t0 = time.perf_counter()
        memory = update_DUEL(memory, x[lo:lo + B], K)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def time_go(duelctl, path, K, B):
    """Median ms of one update reported by duelctl memory replay."""
    out = subprocess.run(
        [duelctl, "memory", "replay", "--features", path, "--size", str(K), "--batch", str(B), "--json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["update_ms_median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="*", default=["2048,256,256", "4096,256,128", "8192,512,128"],
                    help="K,B,Z triples")
    ap.add_argument("--batches", type=int, default=0, help="batches per stream (default: 9, 5 for K >= 8192)")
    ap.add_argument("--rounds", type=int, default=5, help="alternations of PyTorch and Go per shape")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    tmp = tempfile.mkdtemp(prefix="duel_bench_")
    duelctl = os.path.join(tmp, "duelctl")
    subprocess.run(["go", "build", "-o", duelctl, "./cmd/duelctl"], check=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; Go: duelctl memory replay (GOMAXPROCS default)")
    print(f"{'K':>6} {'B':>5} {'Z':>5} | {'best: pytorch ms':>16} {'go ms':>7} {'speed-up':>8} | "
          f"{'median: pytorch ms':>18} {'go ms':>7} {'speed-up':>8}")
    for shape in args.shapes:
        K, B, Z = (int(v) for v in shape.split(","))
        R = args.batches or (5 if K >= 8192 else 9)
        rng = np.random.default_rng(K + B + Z)
        stream = rng.standard_normal((K + R * B, Z)).astype(np.float32)
        path = os.path.join(tmp, f"stream_{K}_{B}_{Z}.npy")
        np.save(path, stream)
        torch_ms, go_ms = [], []
        for _ in range(args.rounds):
            torch_ms.append(time_torch(stream, K, B))
            go_ms.append(time_go(duelctl, path, K, B))
        tb, gb = min(torch_ms), min(go_ms)
        tm, gm = statistics.median(torch_ms), statistics.median(go_ms)
        print(f"{K:>6} {B:>5} {Z:>5} | {tb:>16.1f} {gb:>7.2f} {tb / gb:>7.1f}x | "
              f"{tm:>18.1f} {gm:>7.2f} {tm / gm:>7.1f}x", flush=True)


if __name__ == "__main__":
    sys.exit(main())
