#!/usr/bin/python3
"""Peer check of a duelctl run against PyTorch (manual; never a test dependency).

Loads RUN/model.safetensors (parsed with numpy, no safetensors package) into
torchvision's own torchvision.models.resnetNN() when torchvision is
installed and the run's width is torchvision's (64), else into the same
definition in nn/gen_fixtures.py, with load_state_dict(strict=False); the
CIFAR stem is loaded as solo-learn and every CIFAR ResNet do (conv1 replaced
by a 3x3 stride-1 convolution, padding 1, and the max-pool by Identity
before loading); fc is replaced by Identity (the backbone's features). It
checks that the only keys left over are the other modules' prefixed ones
and that nothing of the network is missing, then compares the eval-mode
features of random images with `duelctl embed`.

    go build -o /tmp/duelctl ./cmd/duelctl
    /tmp/duelctl train --preset tiny --arch resnet18-w8 --steps 3 --out /tmp/tc
    /usr/bin/python3 duel/train/testdata/torch_check.py /tmp/tc /tmp/duelctl
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "nn"))
import gen_fixtures  # noqa: E402

DT = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        lo, hi = v["data_offsets"]
        out[k] = torch.from_numpy(np.frombuffer(data[lo:hi], dtype=DT[v["dtype"]]).reshape(v["shape"]).copy())
    return out


def main():
    run, duelctl = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(run, "config.json")))
    base, _, w = cfg["arch"].partition("-w")
    cifar = cfg.get("stem", "cifar") == "cifar"
    try:
        import torchvision
    except ImportError:
        torchvision = None
    if torchvision is not None and not w:
        model = getattr(torchvision.models, base)()
        if cifar:
            model.conv1 = torch.nn.Conv2d(3, model.conv1.out_channels, 3, 1, 1, bias=False)
            model.maxpool = torch.nn.Identity()
        model.fc = torch.nn.Identity()
        source = "torchvision " + torchvision.__version__
    else:
        model = gen_fixtures.resnet(int(base.removeprefix("resnet")), width=int(w) if w else 64, cifar=cifar, num_classes=0)
        source = "nn/gen_fixtures.py"
    sd = read_safetensors(os.path.join(run, "model.safetensors"))
    res = model.load_state_dict(sd, strict=False)
    assert not res.missing_keys, res.missing_keys
    bad = [k for k in res.unexpected_keys if "." not in k or k.split(".")[0] in dict(model.named_children())]
    assert not bad, bad
    assert sd["bn1.num_batches_tracked"].dtype == torch.int64
    model.eval()
    size = 32 if cifar else 64
    x = np.random.default_rng(0).standard_normal((7, 3, size, size)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "x.npy"), x)
        subprocess.run([duelctl, "embed", "--run", run, "--input", os.path.join(d, "x.npy"),
                        "--out", os.path.join(d, "y.npy"), "--batch", "3"], check=True, stdout=subprocess.DEVNULL)
        y = np.load(os.path.join(d, "y.npy"))
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    err = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-12)
    print(json.dumps({"model": source, "stem": "cifar" if cifar else "imagenet", "keys": len(sd), "unexpected_prefixed": len(res.unexpected_keys), "features": list(y.shape),
                      "max_rel_err": float(err)}))
    assert err < 1e-4, err


if __name__ == "__main__":
    main()
