#!/usr/bin/env python3
"""Counts the DUEL selections' step loops in sm_90 SASS, and times ptxas on
their modules (the driver's JIT, by proxy), without a GPU.

    python3 bench/duel_sass.py --ptxas /path/to/cuda12/ptxas [--nvcc nvcc] [--cuobjdump cuobjdump]

It compiles kernels/cuda/duel.cu and duel_lean.cu to sm_80 PTX with nvcc
(the PTX the modules embed), compiles that for sm_90 with the given ptxas
(as an H100/H200's driver does; CUDA 11.8's ptxas also takes sm_90) and
disassembles it with cuobjdump. A step loop is a backward branch whose body
holds at least four REDUX (the block maximum's); of those, the innermost.
For duel_select_shared it prints the loop's size (its body is branchy: the
path a warp takes depends on its slots). For the lean kernels, whose loop
of C slots a thread is identified by its C LDGSTS, it also prints the
instructions every warp runs: the loop less the regions a forward branch
skips that hold the owners' switch (BRX), the prefetch (CCTL) or the
timing points (a clock read), which run only in one thread's warp or with
a flag. The shape is K 4096 + B 256: C 5 at 1024 threads, 9 at 512.
Needs the CUDA toolkit; nothing else in the project does.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KDIR = os.path.join(ROOT, "kernels", "cuda")
INS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRA = re.compile(r"BRA (0x[0-9a-f]+)")
FWD = re.compile(r"^@!?P\d BRA (0x[0-9a-f]+)")
OPTIONAL = ("BRX",)  # the owners' switch: one thread's warp a step


def sass(cubin, fn, cuobjdump):
    out = subprocess.run([cuobjdump, "-sass", "-fun", fn, cubin], check=True, capture_output=True, text=True).stdout
    return [(int(m.group(1), 16), m.group(2).strip()) for m in map(INS.match, out.splitlines()) if m]


def step_loops(ins):
    """The innermost backward-branch bodies with at least four REDUX (the
    out-of-line paths of a divergent REDUX branch back into a loop too:
    callers take the smallest)."""
    at = {a: i for i, (a, _) in enumerate(ins)}
    loops = []
    for i, (a, t) in enumerate(ins):
        m = BRA.search(t)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
            body = ins[at[int(m.group(1), 16)]:i + 1]
            if sum("REDUX" in x for _, x in body) >= 4:
                loops.append(body)
    inner = [b for b in loops if not any(o is not b and b[0][0] <= o[0][0] and o[-1][0] <= b[-1][0] for o in loops)]
    return inner


def lean_loop(cubin, fn, c, cuobjdump):
    """fn's step loop for c slots a thread (its c LDGSTS)."""
    loops = [b for b in step_loops(sass(cubin, fn, cuobjdump)) if sum("LDGSTS" in x for _, x in b) == c]
    if not loops:
        sys.exit(f"{fn}: no step loop with {c} LDGSTS")
    return min(loops, key=len)


def skips(body, a, t, marks):
    """Whether the forward branch t at a skips a region holding one of marks."""
    tgt = int(FWD.match(t).group(1), 16)
    return any(k in x for b, x in body if a < b < tgt for k in marks)


def every_warp(body):
    """The body less the forward-skipped regions holding optional work."""
    n, j = 0, 0
    while j < len(body):
        a, t = body[j]
        m = FWD.match(t)
        if m:
            tgt = int(m.group(1), 16)
            seg = [x for x in body[j + 1:] if x[0] < tgt]
            if any(k in x for _, x in seg for k in OPTIONAL):
                n += 1
                j += 1 + len(seg)
                continue
        n += 1
        j += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--ptxas", required=True, help="a ptxas that targets sm_90")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    cubins, secs = {}, {}
    # duel_lean_off: duel_lean.cu with SELECT_PREFETCH's and SELECT_STATS'
    # tests folded to false, the code a step runs with the flags off (the
    # real kernel adds a branch around each of those regions).
    src = open(os.path.join(KDIR, "duel_lean.cu")).read()
    off = src.replace("(a.flags & SELECT_PREFETCH)", "(0)").replace("(a.flags & SELECT_STATS)", "(0)")
    if off.count("(0)") < 2:
        sys.exit("duel_lean.cu: the flag tests to fold are not found")
    with open(os.path.join(tmp, "duel_lean_off.cu"), "w") as f:
        f.write(off)
    for mod in ("duel", "duel_lean", "duel_lean_off"):
        ptx, cubin = os.path.join(tmp, mod + ".ptx"), os.path.join(tmp, mod + ".cubin")
        cu = os.path.join(tmp if mod == "duel_lean_off" else KDIR, mod + ".cu")
        subprocess.run([args.nvcc, "-arch=sm_80", "-ptx", "-I", KDIR, cu, "-o", ptx], check=True)
        u0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        subprocess.run([args.ptxas, "-arch=sm_90", ptx, "-o", cubin], check=True)
        secs[mod] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - u0
        cubins[mod] = (cubin, os.path.getsize(ptx))
    print("module       PTX bytes  ptxas sm_90 (user CPU time)")
    for mod in ("duel", "duel_lean"):
        print(f"{mod:12s} {cubins[mod][1]:9d}  {secs[mod]:.2f} s ({secs[mod] / secs['duel']:.1f}x duel.cu)")
    print()
    print("kernel                 threads  C  loop instructions  every warp runs (flags off)")
    shared = step_loops(sass(cubins["duel"][0], "duel_select_shared", args.cuobjdump))
    if not shared:
        sys.exit("duel_select_shared: no step loop found")
    print(f"{'duel_select_shared':22s} {1024:7d}  -  {min(map(len, shared)):17d}  (branchy)")
    for fn, nt in (("duel_select_lean1024", 1024), ("duel_select_lean512", 512)):
        c = (4096 + 256 + nt - 1) // nt
        loop, folded = (lean_loop(cubins[m][0], fn, c, args.cuobjdump) for m in ("duel_lean", "duel_lean_off"))
        branches = sum(1 for a, t in loop if FWD.match(t) and skips(loop, a, t, ("CCTL", "SR_CLOCK")))
        print(f"{fn:22s} {nt:7d} {c:2d}  {len(loop):17d}  {every_warp(folded):12d} + {branches} branches")


if __name__ == "__main__":
    main()
