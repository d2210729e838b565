#!/usr/bin/python3
"""bfloat16 GEMM peer benchmark: PyTorch's CPU bfloat16 matmul against
`duelctl bench gemm --precision bf16`.

duelctl multiplies float32 matrices with every factor rounded to bfloat16
and float32 sums (gemm.SgemmBF16: AVX512_BF16's VDPBF16PS where the CPU has
it). PyTorch runs the same product two ways, in a child process on the
same number of threads: under torch.autocast("cpu", bfloat16) from float32
factors (the factors cast on every call, as a training step's products
are), and torch.mm on factors already stored in bfloat16 (the product
alone). The two sides alternate for --rounds rounds, each shape back to
back, as bench/gemm_numpy.py does; the table gives the median GFLOP/s (mean
over a timed loop) and the ratios duel / PyTorch.

    /usr/bin/python3 bench/gemm_bf16_pytorch.py --duelctl ./duelctl
    /usr/bin/python3 bench/gemm_bf16_pytorch.py --shapes 1024x1024x1024 --rounds 5

Prints one JSON object as its last line.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_numpy import SHAPES, parse_shape  # noqa: E402

CHILD = r"""
import json, sys, time
import torch
shapes, seconds, threads = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(1)
def timed(f):
    f()
    reps, start = 0, time.perf_counter()
    while True:
        f()
        reps += 1
        el = time.perf_counter() - start
        if el >= seconds and reps >= 3:
            return el / reps
res = []
for m, n, k in shapes:
    a, b = torch.rand(m, k) * 2 - 1, torch.rand(k, n) * 2 - 1
    def autocast():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return a @ b
    ab, bb = a.bfloat16(), b.bfloat16()
    flop = 2.0 * m * n * k
    res.append([flop / timed(autocast) / 1e9, flop / timed(lambda: torch.mm(ab, bb)) / 1e9])
print(json.dumps({"gflops": res, "torch": torch.__version__}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", type=parse_shape, nargs="+", default=SHAPES, help="MxNxK shapes")
    ap.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median reported)")
    ap.add_argument("--seconds", type=float, default=1.0, help="minimum time per measurement")
    ap.add_argument("--duelctl", required=True, help="duelctl binary")
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), GOMAXPROCS=str(args.threads))
    shapes = [list(s) for s in args.shapes]
    torch_runs, duel_runs, isa = [[] for _ in shapes], [[] for _ in shapes], None
    for r in range(args.rounds):
        for i, s in enumerate(shapes):
            for side in (("torch", "duel") if (r + i) % 2 == 0 else ("duel", "torch")):
                if side == "torch":
                    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([s]), str(args.seconds), str(args.threads)],
                                         env=env, check=True, capture_output=True, text=True).stdout
                    child = json.loads(out.strip().splitlines()[-1])
                    torch_runs[i].append(child["gflops"][0])
                else:
                    m, n, k = s
                    out = subprocess.run([args.duelctl, "bench", "gemm", "--precision", "bf16", "--m", str(m), "--n", str(n), "--k", str(k),
                                          "--seconds", str(args.seconds), "--json"], env=env, check=True, capture_output=True, text=True).stdout
                    d = json.loads(out.strip().splitlines()[-1])
                    duel_runs[i].append(d["gflops"])
                    isa = d["isa"]
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"threads {args.threads}; torch {child['torch']}; duelctl's bf16 product runs on {isa}")
    print(f"{'shape':>18} {'duel':>8} {'autocast':>9} {'bf16 mm':>8}  duel/autocast  duel/mm")
    rows = []
    for i, s in enumerate(shapes):
        d = statistics.median(duel_runs[i])
        ac = statistics.median(t[0] for t in torch_runs[i])
        mm = statistics.median(t[1] for t in torch_runs[i])
        rows.append({"shape": s, "duel": d, "autocast": ac, "bf16_mm": mm, "ratio_autocast": d / ac, "ratio_mm": d / mm})
        print(f"{'x'.join(map(str, s)):>18} {d:8.1f} {ac:9.1f} {mm:8.1f}  {d / ac:12.2f}x {d / mm:7.2f}x")
    print(json.dumps({"threads": args.threads, "isa": isa, "torch": child["torch"], "rows": rows}))


if __name__ == "__main__":
    main()
