#!/usr/bin/python3
"""SGEMM peer benchmark: numpy/OpenBLAS against `duelctl bench gemm`.

Runs C = A*B (float32, row-major, no transposition) on the same shapes with
numpy (Debian's python3-numpy, linked to OpenBLAS) and with duelctl, both on
the same number of threads (2 by default), alternating the two for --rounds
rounds so that noise from other processes hits both alike, and prints a
side-by-side table of GFLOP/s (mean over a timed loop, and the fastest single
call, the least disturbed by other processes) with the ratios duel/numpy.
Within a round each shape runs on both sides back to back, in alternating
order.

    /usr/bin/python3 bench/gemm_numpy.py                 # all shapes
    /usr/bin/python3 bench/gemm_numpy.py --shapes 1024x1024x1024 --rounds 5

OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, when set in the environment, are
removed for the numpy child only (they would force an OpenBLAS kernel other
than the one it detects); the script prints which OpenBLAS kernel the child
actually runs (via threadpoolctl when installed). Each measurement repeats
the multiply for at least --seconds and reports the mean, exactly as
`duelctl bench gemm` does.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SHAPES = [
    (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
    (32768, 64, 576), (2048, 256, 2304), (512, 512, 4608), (64, 576, 32768),
]

# The numpy child: times each shape and prints one JSON object.
CHILD = r"""
import json, sys, time
import numpy as np
shapes, seconds = json.loads(sys.argv[1]), float(sys.argv[2])
info = {}
try:
    import threadpoolctl
    libs = threadpoolctl.threadpool_info()
    for lib in libs:
        if lib.get("internal_api") == "openblas":
            info = {k: lib.get(k) for k in ("internal_api", "version", "architecture", "threading_layer", "num_threads", "filepath")}
    if not info:
        info = {"note": "WARNING: numpy is not using OpenBLAS (reference BLAS? install libopenblas0-pthread); "
                        "threadpoolctl sees: " + (json.dumps(libs) if libs else "no BLAS library")}
except ImportError:
    info = {"note": "threadpoolctl not installed (apt-get install python3-threadpoolctl): OpenBLAS kernel unknown"}
rng = np.random.default_rng(1)
res = []
for m, n, k in shapes:
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    np.matmul(a, b, out=c)
    reps, fastest, start = 0, float("inf"), time.perf_counter()
    while True:
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        fastest = min(fastest, time.perf_counter() - t0)
        reps += 1
        el = time.perf_counter() - start
        if el >= seconds and reps >= 3:
            break
    res.append([2.0 * m * n * k * reps / el / 1e9, 2.0 * m * n * k / fastest / 1e9])
print(json.dumps({"gflops": res, "openblas": info, "numpy": np.__version__}))
"""


def numpy_env(threads):
    env = dict(os.environ)
    removed = {v: env.pop(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if v in env}
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = str(threads)
    return env, removed


def run_numpy(shapes, threads, seconds):
    env, _ = numpy_env(threads)
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shapes), str(seconds)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_duel(binary, shape, threads, seconds):
    env = dict(os.environ, GOMAXPROCS=str(threads))
    m, n, k = shape
    out = subprocess.run([binary, "bench", "gemm", "--m", str(m), "--n", str(n), "--k", str(k),
                          "--seconds", str(seconds), "--json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def parse_shape(s):
    try:
        m, n, k = (int(x) for x in s.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {s!r}: expected MxNxK, e.g. 1024x1024x1024")
    return (m, n, k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", type=parse_shape, nargs="+", default=SHAPES, help="MxNxK shapes")
    ap.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median reported)")
    ap.add_argument("--seconds", type=float, default=1.0, help="minimum time per numpy measurement")
    ap.add_argument("--duelctl", help="duelctl binary (default: go build ./cmd/duelctl into a temp dir)")
    args = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = args.duelctl
    tmp = None
    if binary is None:
        tmp = tempfile.TemporaryDirectory()
        binary = os.path.join(tmp.name, "duelctl")
        subprocess.run(["go", "build", "-o", binary, "./cmd/duelctl"], cwd=root, check=True)

    _, removed = numpy_env(args.threads)
    print(f"threads: {args.threads} (OPENBLAS_NUM_THREADS for numpy, GOMAXPROCS for duelctl)")
    print("removed for the numpy child: " + (", ".join(f"{k}={v}" for k, v in removed.items()) or "nothing (neither OPENBLAS_CORETYPE nor OPENBLAS_L2_SIZE is set)"))

    shapes = [list(s) for s in args.shapes]
    np_runs, duel_runs, meta, dmeta = [[] for _ in shapes], [[] for _ in shapes], None, None
    for r in range(args.rounds):
        # Each shape runs on both sides back to back, in alternating order,
        # so that both see the same load from other processes.
        for i, s in enumerate(shapes):
            for side in (("numpy", "duel") if (r + i) % 2 == 0 else ("duel", "numpy")):
                if side == "numpy":
                    res = run_numpy([s], args.threads, args.seconds)
                    np_runs[i].append(res["gflops"][0])  # [mean, fastest call]
                    meta = res
                else:
                    d = run_duel(binary, s, args.threads, args.seconds)
                    duel_runs[i].append([d["gflops"], d["gflops_best"]])
                    dmeta = d
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    ob = meta["openblas"]
    if "note" in ob:
        print(f"numpy {meta['numpy']}: {ob['note']}")
    else:
        print(f"numpy {meta['numpy']}, OpenBLAS {ob.get('version')} kernel {ob.get('architecture')} "
              f"({ob.get('threading_layer')}, {ob.get('num_threads')} threads, {ob.get('filepath')})")
    tu = dmeta.get("tuning") or {}
    print(f"duelctl: isa {dmeta['isa']}, {dmeta['threads']} threads, CPU {dmeta.get('cpu', '?')} ({dmeta.get('microarch') or '?'}), "
          f"SGEMM {tu.get('kernel', '?')} mc={tu.get('mc')} kc={tu.get('kc')} nc={tu.get('nc')} ns={tu.get('ns')} ({tu.get('source', '?')})")
    print()
    hdr = (f"{'M x N x K':>20} | {'numpy mean':>10} {'fastest':>7} | {'duel mean':>9} {'fastest':>7} | "
           f"{'ratio':>5} {'pairs':>5} {'fastest':>7}")
    print(hdr)
    print("-" * len(hdr))
    for i, (m, n, k) in enumerate(shapes):
        nv = [x[0] for x in np_runs[i]]
        nb = max(x[1] for x in np_runs[i])
        dv = [x[0] for x in duel_runs[i]]
        db = max(x[1] for x in duel_runs[i])
        nm, dm = statistics.median(nv), statistics.median(dv)
        pairs = statistics.median([d / v for d, v in zip(dv, nv)])
        print(f"{f'{m}x{n}x{k}':>20} | {nm:10.1f} {nb:7.1f} | {dm:9.1f} {db:7.1f} | "
              f"{dm / nm:5.2f} {pairs:5.2f} {db / nb:7.2f}")
    print(f"\nGFLOP/s over {args.rounds} rounds. mean: the mean over >= {args.seconds} s of calls, median over\n"
          "the rounds; fastest: the fastest single call of all rounds. ratio = duel/numpy of the medians;\n"
          "pairs = median over rounds of duel/numpy measured back to back; fastest = ratio of the fastest calls.")


if __name__ == "__main__":
    main()
