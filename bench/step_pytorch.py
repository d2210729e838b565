#!/usr/bin/python3
"""Peer benchmark of `duelctl bench step`: the same training step in PyTorch.

Runs forward + backward + SGD (lr 0.1, momentum 0.9, weight decay 5e-4) of a
CIFAR-stem ResNet (torchvision's definition, from nn/gen_fixtures.py) on a
fixed random batch of 32x32 images with 10 classes, then forward-only passes,
and prints images per second. With --duelctl BIN it then runs
`BIN bench step` with the same arguments and prints the ratio Go / PyTorch.

--precision bf16 runs PyTorch's step under torch.autocast(bfloat16) (oneDNN's
bfloat16 convolutions and products on the CPU) and duelctl's with
--precision bf16.

Run PyTorch at its best, as bench/RESULTS.md does:

    env -u OPENBLAS_CORETYPE \\
        GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184 \\
        /usr/bin/python3 bench/step_pytorch.py --arch resnet18 --batch 32 --duelctl ./duelctl

Prints one JSON object as its last line.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nn"))
import gen_fixtures  # noqa: E402  (torchvision's ResNet in plain torch)


def build(arch):
    base, _, w = arch.partition("-w")
    depth = int(base.removeprefix("resnet"))
    width = int(w) if w else 64
    return gen_fixtures.resnet(depth, width=width, cifar=True, num_classes=10)


def time_steps(step, warmup, steps):
    """Runs step warmup times, then steps times timed: the wall times in ms
    and the CPU time (all threads) per step in ms."""
    for _ in range(warmup):
        step()
    times = []
    cpu0 = time.process_time()
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return times, (time.process_time() - cpu0) * 1e3 / steps


def run_duelctl(cmd, threads):
    """Runs a duelctl command (ending in --json) with GOMAXPROCS threads,
    prints its human-readable lines and returns its JSON object."""
    env = dict(os.environ, GOMAXPROCS=str(threads))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    lines = p.stdout.strip().splitlines()
    print("\n".join(lines[:-1]))
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="resnet18")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (cuDNN autotuned; --precision fp32 turns TF32 off in matmul and cuDNN, tf32 on)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"],
                    help="fp32; tf32 with --device cuda; bf16: torch.autocast to bfloat16 on either device, "
                         "beside duelctl's --precision bf16 (factors rounded to bfloat16, float32 sums)")
    ap.add_argument("--duelctl", help="duelctl binary to run with the same arguments for the ratio")
    a = ap.parse_args()
    if a.precision == "tf32" and a.device != "cuda":
        ap.error("--precision tf32 needs --device cuda (the CPU has no TF32)")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = a.precision == "tf32"

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    model = build(a.arch).to(dev)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(a.batch, 3, 32, 32).to(dev)
    y = torch.randint(0, 10, (a.batch,)).to(dev)
    lossf = nn.CrossEntropyLoss()

    def autocast():
        return torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16")

    def step():
        with autocast():
            out = model(x)
            loss = lossf(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sync()

    times, cpu_ms = time_steps(step, a.warmup, a.steps)
    ftimes = []
    with torch.no_grad(), autocast():
        for _ in range(a.steps):
            t0 = time.perf_counter()
            model(x)
            sync()
            ftimes.append((time.perf_counter() - t0) * 1e3)
    step_ms = statistics.median(times)
    res = {
        "arch": a.arch, "batch": a.batch, "device": a.device, "precision": a.precision, "threads": torch.get_num_threads(), "torch": torch.__version__,
        "img_per_s": a.batch / step_ms * 1e3, "step_ms": step_ms,
        "forward_img_per_s": a.batch / statistics.median(ftimes) * 1e3,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "step_ms_all": times, "cpu_ms_per_step": cpu_ms,
    }
    print(f"pytorch {a.arch} batch {a.batch} on {a.device} {a.precision} ({res['threads']} threads): train step {step_ms:.1f} ms = "
          f"{res['img_per_s']:.1f} img/s; forward {res['forward_img_per_s']:.1f} img/s; peak RSS {res['peak_rss_mb']:.0f} MB; "
          f"CPU {cpu_ms:.0f} ms per step")
    if a.duelctl:
        cmd = [a.duelctl, "bench", "step", "--arch", a.arch, "--batch", str(a.batch),
               "--steps", str(a.steps), "--warmup", str(a.warmup), "--device", a.device, "--json"]
        if a.device == "cuda" or a.precision != "fp32":
            cmd += ["--precision", a.precision]
        go = run_duelctl(cmd, a.threads)
        res["go"] = go
        res["ratio"] = go["img_per_s"] / res["img_per_s"]
        res["forward_ratio"] = go["forward_img_per_s"] / res["forward_img_per_s"]
        # CPU time per step (user + system, both threads) depends much less
        # on other jobs than wall time: the steadier figure on a shared host.
        res["cpu_ratio"] = res["cpu_ms_per_step"] / go["cpu_ms_per_step"]
        print(f"ratio go/pytorch: train {res['ratio']:.2f}x, forward {res['forward_ratio']:.2f}x, "
              f"CPU time per step {res['cpu_ratio']:.2f}x; "
              f"peak RSS go {go['peak_rss_mb']:.0f} MB vs pytorch {res['peak_rss_mb']:.0f} MB")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
