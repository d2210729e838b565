#!/usr/bin/python3
"""Peer of `go test -run '^$' -bench PassesBF16 ./kernels/conv`: the three
passes (forward, input gradient, weight gradient) of ResNet-18's 3x3
layers in bfloat16 under torch.autocast (oneDNN's bf16 convolutions), in
nominal GFLOP/s (3 * 2*N*OH*OW*Cout*Cin*9, padding included, as duel's
benchmark counts them), best of --reps each. With --go it then runs duel's
benchmark (Im2colBF16) in the same script, --rounds times alternating with
PyTorch, and prints the best of each and their ratio (duel / PyTorch).

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/conv_bf16_pytorch.py --go go

Run from the repository root. Prints one JSON object as its last line.
"""
import argparse
import json
import re
import subprocess
import time

import torch

# BenchmarkPassesBF16's shapes: (batch, in, out, height = width, stride).
SHAPES = [(32, 64, 64, 32, 1), (32, 64, 128, 32, 2), (32, 128, 128, 16, 1),
          (32, 256, 256, 8, 1), (32, 512, 512, 4, 1), (128, 16, 16, 32, 1)]


def name(n, ci, co, hw, s):
    return f"{ci}-{co}-{hw}x{hw}-s{s}-n{n}"


def torch_round(reps):
    out = {}
    for n, ci, co, hw, s in SHAPES:
        conv = torch.nn.Conv2d(ci, co, 3, s, 1, bias=False)
        x = torch.randn(n, ci, hw, hw).bfloat16().requires_grad_()

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = conv(x)
            y.backward(torch.ones_like(y))

        for _ in range(2):
            step()
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            best = min(best, time.perf_counter() - t0)
        oh = (hw + 2 - 3) // s + 1
        out[name(n, ci, co, hw, s)] = 3 * 2 * n * oh * oh * co * ci * 9 / best / 1e9
    return out


def go_round(gobin):
    res = subprocess.run([gobin, "test", "-run", "^$", "-bench", "PassesBF16", "-benchtime", "1x", "./kernels/conv"],
                         capture_output=True, text=True, check=True)
    out = {}
    for line in res.stdout.splitlines():
        m = re.match(r"BenchmarkPassesBF16/(\S+?)-\d+\s.*?([\d.]+) bf16-GFLOP/s", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--go", default="", help="the go command: also run duel's benchmark and print the ratios")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    best_t, best_d = {}, {}
    for _ in range(a.rounds):
        for k, v in torch_round(a.reps).items():
            best_t[k] = max(best_t.get(k, 0), v)
        if a.go:
            for k, v in go_round(a.go).items():
                best_d[k] = max(best_d.get(k, 0), v)
    rows = []
    for n, ci, co, hw, s in SHAPES:
        k = name(n, ci, co, hw, s)
        row = {"layer": k, "pytorch": best_t[k]}
        line = f"{k:>22}  pytorch {best_t[k]:6.1f} GFLOP/s"
        if k in best_d:
            row["duel"], row["ratio"] = best_d[k], best_d[k] / best_t[k]
            line += f"  duel {best_d[k]:6.1f}  duel/pytorch {row['ratio']:.2f}x"
        print(line)
        rows.append(row)
    print(json.dumps({"threads": a.threads, "torch": torch.__version__, "rows": rows}))


if __name__ == "__main__":
    main()
