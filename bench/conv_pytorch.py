#!/usr/bin/python3
"""Peer of `go test -run '^$' -bench Conv2d ./nn`: forward + backward of one
3x3 stride-1 convolution (no bias) in PyTorch, in GFLOP/s (forward
2*N*H*W*C*C*9 flops, backward twice that), best of --reps.

    env -u OPENBLAS_CORETYPE GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184 \\
        /usr/bin/python3 bench/conv_pytorch.py
"""
import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for n, c, hw in [(128, 16, 32), (128, 64, 8), (32, 64, 32), (32, 256, 8), (32, 512, 4)]:
        conv = torch.nn.Conv2d(c, c, 3, 1, 1, bias=False)
        x = torch.randn(n, c, hw, hw, requires_grad=True)
        for _ in range(2):
            conv(x).backward(torch.ones(n, c, hw, hw))
        best = float("inf")
        for _ in range(a.reps):
            t0 = time.perf_counter()
            y = conv(x)
            y.backward(torch.ones_like(y))
            best = min(best, time.perf_counter() - t0)
        flops = 3 * 2 * n * hw * hw * c * c * 9
        print(f"pytorch conv n{n}-c{c}-{hw}x{hw}: {flops / best / 1e9:.1f} GFLOP/s (best of {a.reps})")


if __name__ == "__main__":
    main()
