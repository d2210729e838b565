#!/usr/bin/env python3
"""PyTorch on the GPU, at the shapes of cuda's GPU benchmarks.

Prints one JSON line per measurement, the peer of `cuda.test -test.bench`
(BenchmarkGemm 1024^3 FP32, BenchmarkAdd 16M floats, BenchmarkReduceRows
4096x4096, BenchmarkConv and BenchmarkBatchNorm on a ResNet-18 CIFAR layer,
BenchmarkDUELKernel K 4096 B 256 Z 128) run in the same script,
bench/gpu_check.sh. Each figure is the median of --repeats timings, with
torch.cuda.synchronize() around each, as the Go benchmarks synchronise
after every launch. The DUEL update is the paper's Appendix D pseudocode
(bench/duel_pytorch.py's update_DUEL) with its tensors on the GPU.

With --gemm it prints torch.mm's figures at BenchmarkGemmPrecision's
sizes alone (gemm_sizes); with --conv, cuDNN's at BenchmarkConv's layers
in TF32 alone (conv_layers).

Needs torch with CUDA (the GPU machine's image has it); not a dependency of
duel.
"""
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])


def timed(f, repeats=50, warm=5):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def queued(f, repeats=50, warm=10):
    """Seconds a call of f takes back to back: events around repeats calls
    after warm ones (BenchmarkGemmPrecision's deviceLoop)."""
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        f()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / repeats


def gemm_sizes(dev):
    """--gemm: torch.mm at BenchmarkGemmPrecision's sizes in TF32 and BF16
    (bf16 storage, as torch.mm needs it; "bf16+cast" also converts FP32
    factors first, as our kernels do), timed back to back between events,
    the median of 5 runs of 50."""
    for n in (1024, 2048, 4096):
        a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
        ab, bb = a.bfloat16(), b.bfloat16()
        for prec, f in (("tf32", lambda: a @ b), ("bf16", lambda: ab @ bb), ("bf16+cast", lambda: a.bfloat16() @ b.bfloat16())):
            torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
            s = statistics.median(queued(f) for _ in range(5))
            print(json.dumps({"bench": "GemmSizes", "n": n, "precision": prec, "us": s * 1e6, "tflops": 2 * n**3 / s / 1e12}))
    torch.backends.cuda.matmul.allow_tf32 = False


def update_duel(memory, p_target, K):
    """Appendix D's update_DUEL (MAX_SCORE 0), on the tensors' device."""
    B = p_target.shape[0]
    comb = torch.cat((memory, p_target), dim=0)
    score_matrix = (1 + comb @ comb.T) / 2
    selection = torch.arange(K + B, device=comb.device) < K
    score = torch.cat((score_matrix[:K, :K].sum(-1), torch.zeros(B, device=comb.device)), 0)
    for i in range(K, K + B):
        J = torch.argmax(score)
        score -= score_matrix[J] * selection
        selection[J] = False
        score[J] = 0.0
        t = score_matrix[i] * selection
        score += t
        selection[i] = True
        score[i] = t.sum()
    return comb[selection]


def conv_layers(dev, tf32s):
    """Times cuDNN on BenchmarkConv's layers, with TF32 off and/or on (tf32s)."""
    # BenchmarkConv's layers: 256 x 64 -> 64 channels, 32 x 32, 3 x 3, pad 1,
    # and BenchmarkConv/Wide's: 256 x 128 -> 128 channels, 16 x 16, in FP32
    # (cuDNN without TF32) and in TF32; and, in TF32, BenchmarkConv/tf32/1x1's,
    # ResNet-50's 1 x 1 64 -> 256 on 32 x 32, and BenchmarkConv/tf32/Stride2's,
    # ResNet-50's 3 x 3 128 -> 128 at stride 2 from 32 x 32 (its input
    # gradient also alone), and BenchmarkConv/tf32/Down1x1's, the 1 x 1
    # 256 -> 512 shortcut at stride 2.
    torch.backends.cudnn.benchmark = True
    for tf32 in tf32s:
        torch.backends.cudnn.allow_tf32 = tf32
        layers = [("", 64, 64, 32, 3, 1), ("Wide ", 128, 128, 16, 3, 1)]
        if tf32:
            layers += [("1x1 ", 64, 256, 32, 1, 1), ("Stride2 ", 128, 128, 32, 3, 2), ("Down1x1 ", 256, 512, 32, 1, 2)]
        for prefix, c, o, side, k, stride in layers:
            x = torch.randn(256, c, side, side, device=dev, requires_grad=True)
            w = torch.randn(o, c, k, k, device=dev, requires_grad=True)
            out_side = (side + 2 * (k // 2) - k) // stride + 1
            flops = 2 * 256 * c * o * k * k * out_side * out_side
            shape = f"256x{c}x{side}x{side} {k}x{k}" + (f" to {o}" if o != c else "") + (f" stride {stride}" if stride > 1 else "")
            pad = k // 2
            tag = ("tf32 " if tf32 else "") + prefix
            s = timed(lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad), repeats=50)
            print(json.dumps({"bench": f"{tag}Conv forward {shape}", "ms": s * 1e3, "gflops": flops / s / 1e9}))
            y = torch.nn.functional.conv2d(x, w, stride=stride, padding=pad)
            dy = torch.randn_like(y)
            s = timed(lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True), repeats=50)
            print(json.dumps({"bench": f"{tag}Conv input+weight grad {shape}", "ms": s * 1e3, "gflops": 2 * flops / s / 1e9}))
            if stride > 1:
                s = timed(lambda: torch.autograd.grad(y, (x,), dy, retain_graph=True), repeats=50)
                print(json.dumps({"bench": f"{tag}Conv input grad {shape}", "ms": s * 1e3, "gflops": flops / s / 1e9}))


def main():
    dev = torch.device("cuda")
    print(json.dumps({"peer": "torch", "version": torch.__version__, "gpu": torch.cuda.get_device_name(0)}))
    if "--gemm" in sys.argv[1:]:
        gemm_sizes(dev)
        return
    if "--conv" in sys.argv[1:]:  # the convolutions in TF32 alone
        conv_layers(dev, (True,))
        return
    n = 1024
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        s = timed(lambda: a @ b, repeats=200)
        print(json.dumps({"bench": "Gemm1024", "precision": "tf32" if tf32 else "fp32", "ms": s * 1e3, "gflops": 2 * n**3 / s / 1e9}))
    # BenchmarkGemmPrecision's 4096^3: FP32, TF32 and BF16 (inputs stored in
    # bfloat16, as torch.mm needs them; our kernel rounds FP32 operands as it
    # loads them, so its figure includes that conversion).
    n = 4096
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    for prec in ("fp32", "tf32", "bf16"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        x, y = (a.bfloat16(), b.bfloat16()) if prec == "bf16" else (a, b)
        s = timed(lambda: x @ y, repeats=30)
        print(json.dumps({"bench": "Gemm4096", "precision": prec, "ms": s * 1e3, "tflops": 2 * n**3 / s / 1e12}))
    torch.backends.cuda.matmul.allow_tf32 = False
    m = 1 << 24
    x, y = torch.randn(m, device=dev), torch.randn(m, device=dev)
    z = torch.empty_like(x)
    s = timed(lambda: torch.add(x, y, out=z), repeats=200)
    print(json.dumps({"bench": "Add16M", "ms": s * 1e3, "gbps": 12 * m / s / 1e9}))
    r = torch.randn(4096, 4096, device=dev)
    out = torch.empty(4096, device=dev)
    s = timed(lambda: torch.sum(r, dim=1, out=out), repeats=200)
    print(json.dumps({"bench": "ReduceRows4096", "ms": s * 1e3, "gbps": 4 * 4096 * 4096 / s / 1e9}))
    conv_layers(dev, (False, True))
    torch.backends.cudnn.allow_tf32 = False
    bn = torch.nn.BatchNorm2d(64).to(dev)
    xb = torch.randn(256, 64, 32, 32, device=dev, requires_grad=True)
    s = timed(lambda: bn(xb), repeats=50)
    print(json.dumps({"bench": "BatchNorm train forward 256x64x32x32", "ms": s * 1e3}))
    yb = bn(xb)
    s = timed(lambda: torch.autograd.grad(yb, (xb,), torch.ones_like(yb), retain_graph=True), repeats=50)
    print(json.dumps({"bench": "BatchNorm backward 256x64x32x32", "ms": s * 1e3}))
    g = torch.Generator(device="cpu").manual_seed(1)
    mem = torch.nn.functional.normalize(torch.randn(4096, 128, generator=g), dim=1).to(dev)
    batch = torch.nn.functional.normalize(torch.randn(256, 128, generator=g), dim=1).to(dev)
    s = timed(lambda: update_duel(mem, batch, 4096), repeats=10, warm=2)
    print(json.dumps({"bench": "DUELUpdate K4096 B256 Z128", "ms": s * 1e3}))


if __name__ == "__main__":
    main()
