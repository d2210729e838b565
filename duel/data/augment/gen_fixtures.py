#!/usr/bin/python3
"""Generate the torchvision parity fixtures of package augment.

Run from the repository root with Debian's python3-torchvision (0.14) and
python3-torch (1.13), CPU only:

    /usr/bin/python3 duel/data/augment/gen_fixtures.py

It writes two files under duel/data/augment/testdata/:

  parity.npy   one flat little-endian float32 array: every input image and
               every torchvision output, concatenated;
  parity.json  the index (name -> offset into parity.npy and shape), the
               cases (op, parameters, input, output) and the reference
               histograms of torchvision's RandomResizedCrop.get_params.

Everything is deterministic: the images come from numpy's seeded generator,
the op parameters are fixed, the pipeline cases replay the Go pipeline's
SplitMix64 draws (see GoRNG and go_draws below) and get_params runs under
torch.manual_seed. The Go tests read these files with internal/npy and
encoding/json and never need Python.

The source images are uint8 HWC, as the Go pipeline receives them, stored as
float32 integers 0..255 (exact). Every op runs on the float CHW tensor
F.to_tensor gives, as the Go package does: on tensors resize's antialias
defaults to False in torchvision 0.14 and the Go package documents bilinear
without antialiasing, so antialias=False is passed explicitly.
"""
import json
import math
import os

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
BILINEAR = InterpolationMode.BILINEAR

# CIFAR-10's channel statistics, as the project's data package uses them.
MEAN = [0.4914, 0.4822, 0.4465]
STD = [0.2470, 0.2435, 0.2616]


class Store:
    """Concatenates named float32 arrays into one flat array."""

    def __init__(self):
        self.chunks, self.index, self.off = [], {}, 0

    def add(self, name, a):
        assert name not in self.index, name
        if isinstance(a, torch.Tensor):
            a = a.detach().cpu().numpy()
        a = np.ascontiguousarray(a, dtype="<f4")
        self.index[name] = {"offset": self.off, "shape": list(a.shape)}
        self.chunks.append(a.reshape(-1))
        self.off += a.size
        return name


def make_images():
    """Small uint8 HWC images: odd sizes, one 1-channel, and pixels that hit
    the edge cases of the colour ops (gray pixels, ties between channels,
    0 and 255)."""
    rng = np.random.RandomState(20240611)
    imgs = {}
    for name, (h, w, c) in {
        "rgb7x11": (7, 11, 3),
        "rgb13x5": (13, 5, 3),
        "rgb32": (32, 32, 3),
        "gray9x13": (9, 13, 1),
    }.items():
        imgs[name] = rng.randint(0, 256, size=(h, w, c)).astype(np.uint8)
    # A palette of awkward pixels for the colour ops (16x16 RGB).
    pal = rng.randint(0, 256, size=(16, 16, 3)).astype(np.uint8)
    flat = pal.reshape(-1, 3)
    v = rng.randint(0, 256, size=len(flat))
    flat[0:32] = v[0:32, None]  # gray: r = g = b
    flat[32:48, 1] = flat[32:48, 0]  # r = g
    flat[48:64, 2] = flat[48:64, 1]  # g = b
    flat[64:80, 2] = flat[64:80, 0]  # r = b
    flat[80:96] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0],
                   [0, 255, 255], [255, 0, 255], [0, 0, 0], [255, 255, 255],
                   [255, 128, 0], [1, 0, 0], [0, 1, 0], [254, 255, 255],
                   [128, 128, 129], [10, 200, 10], [200, 10, 200], [3, 2, 1]]
    flat[96:112] = np.clip(flat[96:112], 0, 40)  # dark
    flat[112:128] = np.clip(flat[112:128], 215, 255)  # bright
    imgs["palette16"] = pal
    # A saturated image (half the channels at 0 or 255) for the clamps.
    sat = rng.randint(0, 256, size=(6, 10, 3)).astype(np.uint8)
    mask = rng.randint(0, 3, size=sat.shape)
    sat[mask == 0] = 0
    sat[mask == 1] = 255
    imgs["sat6x10"] = sat
    return imgs


def tensor(img):
    """F.to_tensor of a uint8 HWC numpy image: float CHW in [0, 1]."""
    return F.to_tensor(img)


# ---- the Go pipeline's random draws, replayed ----

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


class GoRNG:
    """internal/splitmix.RNG, bit for bit."""

    def __init__(self, seed):
        self.state = seed & M64

    def uint64(self):
        self.state = (self.state + GOLDEN) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def float64(self):
        return float(self.uint64() >> 11) * (1.0 / (1 << 53))

    def uniform(self, a, b):
        return a + (b - a) * self.float64()

    def intn(self, n):
        m = self.uint64() * n
        hi, lo = m >> 64, m & M64
        if lo < n:
            thresh = ((1 << 64) - n) % n
            while lo < thresh:
                m = self.uint64() * n
                hi, lo = m >> 64, m & M64
        return hi

    def perm4(self):
        p = [0, 1, 2, 3]
        for i in range(3, 0, -1):
            j = self.intn(i + 1)
            p[i], p[j] = p[j], p[i]
        return p

    def exp_uniform(self, a, b):
        return math.exp(self.uniform(math.log(a), math.log(b)))


def go_crop_params(r, h, w, scale, ratio):
    """augment.CropParams (torchvision's get_params with Go's RNG)."""
    area = float(h * w)
    for _ in range(10):
        target = area * r.uniform(scale[0], scale[1])
        aspect = r.exp_uniform(ratio[0], ratio[1])
        cw = round(math.sqrt(target * aspect))  # Python rounds half to even
        ch = round(math.sqrt(target / aspect))
        if 0 < cw <= w and 0 < ch <= h:
            return r.intn(h - ch + 1), r.intn(w - cw + 1), ch, cw
    in_ratio = w / h
    if in_ratio < ratio[0]:
        cw = w
        ch = round(cw / ratio[0])
    elif in_ratio > ratio[1]:
        ch = h
        cw = round(ch * ratio[1])
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def f32(x):
    return float(np.float32(x))


def blur_kernel(size):
    """presets.go's blurKernel."""
    k = size // 10
    if k % 2 == 0:
        k += 1
    return max(k, 3)


def preset(name, size):
    """The Go presets (presets.go) as dictionaries."""
    crop = lambda s: {"scale": [s, 1.0], "ratio": [3.0 / 4, 4.0 / 3]}
    if name == "paper":
        return {"crop": crop(0.08), "flip": 0.75, "jitter": [0.4, 0.4, 0.4, 0.1, 0.5], "gray": 0.2, "blur": None}
    if name == "mocov2":
        return {"crop": crop(0.2), "flip": 0.5, "jitter": [0.4, 0.4, 0.4, 0.1, 0.8], "gray": 0.2,
                "blur": [blur_kernel(size), 0.1, 2.0, 0.5]}
    if name == "simclr":
        s, blur = 0.5, None
        if size > 32:
            s, blur = 1.0, [blur_kernel(size), 0.1, 2.0, 0.5]
        return {"crop": crop(0.08), "flip": 0.5, "jitter": [0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s, 0.8], "gray": 0.2,
                "blur": blur}
    if name == "none":
        return {"crop": None, "flip": 0.0, "jitter": None, "gray": 0.0, "blur": None}
    raise ValueError(name)


def go_draws(p, seed, h, w, size):
    """The draws of Pipeline.Apply, in its documented order."""
    r = GoRNG(seed)
    oh, ow = (size, size) if size > 0 else (h, w)
    d = {"top": 0, "left": 0, "ch": h, "cw": w}
    if p["crop"]:
        d["top"], d["left"], d["ch"], d["cw"] = go_crop_params(r, h, w, p["crop"]["scale"], p["crop"]["ratio"])
    d["flip"] = r.float64() < p["flip"]
    d["jitter"] = False
    if p["jitter"] and r.float64() < p["jitter"][4]:
        d["jitter"] = True
        d["order"] = r.perm4()
        b, c, s, hue = p["jitter"][:4]
        d["factors"] = [
            f32(r.uniform(max(0, 1 - b), 1 + b)) if b > 0 else None,
            f32(r.uniform(max(0, 1 - c), 1 + c)) if c > 0 else None,
            f32(r.uniform(max(0, 1 - s), 1 + s)) if s > 0 else None,
            f32(r.uniform(-hue, hue)) if hue > 0 else None,
        ]
    d["gray"] = r.float64() < p["gray"]
    d["blur"] = False
    if p["blur"] and r.float64() < p["blur"][3]:
        d["blur"] = True
        d["sigma"] = r.uniform(p["blur"][1], p["blur"][2])
        k = min(p["blur"][0], 2 * min(oh, ow) - 1)
        if k % 2 == 0:
            k -= 1
        d["kernel"] = k
    return d


def torch_pipeline(img, d, size, flip_last=False):
    """torchvision's functional ops with the drawn parameters, in the Go
    pipeline's order (or with the flip last, as MoCo v2 does)."""
    t = tensor(img)
    c, h, w = t.shape
    oh, ow = (size, size) if size > 0 else (h, w)
    t = F.resized_crop(t, d["top"], d["left"], d["ch"], d["cw"], [oh, ow], BILINEAR, antialias=False)
    if d["flip"] and not flip_last:
        t = F.hflip(t)
    if d["jitter"]:
        fb, fc, fs, fh = d["factors"]
        for op in d["order"]:
            if op == 0 and fb is not None:
                t = F.adjust_brightness(t, fb)
            elif op == 1 and fc is not None:
                t = F.adjust_contrast(t, fc)
            elif op == 2 and fs is not None:
                t = F.adjust_saturation(t, fs)
            elif op == 3 and fh is not None:
                t = F.adjust_hue(t, fh)
    if d["gray"]:
        t = F.rgb_to_grayscale(t, num_output_channels=c)
    if d["blur"]:
        t = F.gaussian_blur(t, [d["kernel"], d["kernel"]], [d["sigma"], d["sigma"]])
    if d["flip"] and flip_last:
        t = F.hflip(t)
    return F.normalize(t, MEAN, STD)


def main():
    torch.set_num_threads(1)
    st = Store()
    imgs = make_images()
    images = []
    for name, img in imgs.items():
        h, w, c = img.shape
        images.append({"name": name, "h": h, "w": w, "c": c, "src": st.add("src/" + name, img.astype(np.float32))})

    ops = []

    def op(kind, image, out, **params):
        name = f"{kind}/{image}"
        for k in sorted(params):
            name += f"/{k}={params[k]}"
        ops.append({"name": name, "op": kind, "image": image, "out": st.add(name, out), **params})

    pointwise = ["rgb7x11", "rgb13x5", "gray9x13", "palette16", "sat6x10"]
    for name in pointwise:
        x = tensor(imgs[name])
        c, h, w = x.shape
        op("to_tensor", name, x)
        op("hflip", name, F.hflip(x))
        for f in [0.0, 0.6, 1.0, 1.37, 2.5]:
            op("brightness", name, F.adjust_brightness(x, f), factor=f)
            op("contrast", name, F.adjust_contrast(x, f), factor=f)
            op("saturation", name, F.adjust_saturation(x, f), factor=f)
        for f in [-0.5, -0.23, -0.1, 0.0, 0.05, 1.0 / 3, 0.5]:
            op("hue", name, F.adjust_hue(x, f), factor=f)
        op("grayscale", name, F.rgb_to_grayscale(x, num_output_channels=c))
        for k, s in [(3, 0.5), (5, 1.3), (2 * min(h, w) - 1, 2.0)]:
            op("blur", name, F.gaussian_blur(x, [k, k], [s, s]), kernel=k, sigma=s)
        mean, std = (MEAN, STD) if c == 3 else ([0.5], [0.25])
        op("normalize", name, F.normalize(x, mean, std), mean=mean, std=std)

    # resized_crop (+ hflip) with fixed boxes: upscales, downscales, identity,
    # non-square outputs, crops touching every border.
    crops = [
        ("rgb7x11", (1, 2, 5, 7), (9, 9)),
        ("rgb7x11", (0, 0, 7, 11), (7, 11)),
        ("rgb7x11", (0, 1, 7, 9), (4, 5)),
        ("rgb7x11", (2, 0, 5, 11), (3, 17)),
        ("rgb13x5", (3, 1, 9, 4), (13, 6)),
        ("gray9x13", (2, 3, 6, 8), (11, 13)),
        ("gray9x13", (0, 0, 9, 13), (5, 6)),
        ("rgb32", (3, 5, 20, 17), (32, 32)),
        ("rgb32", (10, 4, 7, 25), (8, 24)),
        ("rgb32", (0, 0, 32, 32), (16, 16)),
        ("rgb32", (31, 31, 1, 1), (2, 3)),
        ("rgb32", (12, 0, 20, 13), (24, 24)),
    ]
    for name, (top, left, ch, cw), (oh, ow) in crops:
        x = tensor(imgs[name])
        rc = F.resized_crop(x, top, left, ch, cw, [oh, ow], BILINEAR, antialias=False)
        aa = F.resized_crop(x, top, left, ch, cw, [oh, ow], BILINEAR, antialias=True)
        upscale = oh >= ch and ow >= cw
        params = dict(top=top, left=left, height=ch, width=cw, out_h=oh, out_w=ow)
        op("resized_crop", name, rc, **params)
        op("resized_crop_hflip", name, F.hflip(rc), **params)
        if upscale:
            # The documented claim: on upscales antialiasing changes nothing.
            op("resized_crop_antialias", name, aa, **params)

    # Whole pipelines: the Go presets with the parameters Pipeline.Apply
    # draws for a seed, chosen so that every branch is taken somewhere.
    pipelines = []

    def want(d):
        return (d["jitter"], d["gray"], d["blur"], d["flip"])

    for pname, size, image, wanted in [
        ("paper", 32, "rgb32", [(True, False, False, True), (True, True, False, False), (False, False, False, False)]),
        ("mocov2", 32, "rgb32", [(True, False, True, True), (True, True, True, False), (False, False, True, False)]),
        ("simclr", 32, "rgb32", [(True, False, False, False), (True, True, False, True)]),
        ("simclr", 40, "rgb32", [(True, False, True, True), (True, True, False, False)]),
        ("mocov2", 9, "rgb7x11", [(True, False, True, True), (True, False, True, False)]),
        ("paper", 12, "sat6x10", [(True, False, False, True)]),
        ("none", 16, "rgb32", [(False, False, False, False)]),
        ("none", 0, "rgb13x5", [(False, False, False, False)]),
    ]:
        p = preset(pname, size)
        img = imgs[image]
        h, w, c = img.shape
        for wtd in wanted:
            seed = 0
            while True:
                d = go_draws(p, seed, h, w, size)
                if want(d) == wtd:
                    break
                seed += 1
            name = f"{pname}{size}/{image}/seed={seed}"
            case = {"name": name, "preset": pname, "size": size, "image": image, "seed": seed,
                    "mean": MEAN, "std": STD, "draws": d,
                    "out": st.add(name, torch_pipeline(img, d, size))}
            if d["flip"] and pname == "mocov2":
                # MoCo v2 flips last; the Go pipeline flips second.
                case["out_flip_last"] = st.add(name + "/flip_last", torch_pipeline(img, d, size, flip_last=True))
            pipelines.append(case)

    # Reference distributions of torchvision's RandomResizedCrop.get_params.
    torch.manual_seed(0)
    crop_hists = []
    for h, w, scale, ratio, n in [
        (32, 32, (0.08, 1.0), (3.0 / 4, 4.0 / 3), 60000),
        (32, 32, (0.2, 1.0), (3.0 / 4, 4.0 / 3), 60000),
        (12, 40, (0.3, 1.0), (3.0 / 4, 4.0 / 3), 60000),
        (40, 12, (0.3, 1.0), (3.0 / 4, 4.0 / 3), 60000),
    ]:
        img = torch.empty(1, h, w)
        size_counts, top_counts, left_counts = {}, [0] * h, [0] * w
        for _ in range(n):
            i, j, ch, cw = T.RandomResizedCrop.get_params(img, list(scale), list(ratio))
            key = f"{ch}x{cw}"
            size_counts[key] = size_counts.get(key, 0) + 1
            top_counts[i] += 1
            left_counts[j] += 1
        crop_hists.append({"h": h, "w": w, "scale": list(scale), "ratio": list(ratio), "n": n,
                           "sizes": size_counts, "top": top_counts, "left": left_counts})

    # torchvision's ColorJitter ranges for the recipes' strengths.
    jitter_ranges = []
    for b, c, s, hue in [(0.4, 0.4, 0.4, 0.1), (0.8, 0.8, 0.8, 0.2)]:
        cj = T.ColorJitter(b, c, s, hue)
        jitter_ranges.append({"strengths": [b, c, s, hue],
                              "brightness": list(cj.brightness), "contrast": list(cj.contrast),
                              "saturation": list(cj.saturation), "hue": list(cj.hue)})

    os.makedirs(OUT, exist_ok=True)
    np.save(os.path.join(OUT, "parity.npy"), np.concatenate(st.chunks).astype("<f4"))
    meta = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "arrays": st.index,
        "images": images,
        "ops": ops,
        "pipelines": pipelines,
        "crop_hists": crop_hists,
        "jitter_ranges": jitter_ranges,
    }
    with open(os.path.join(OUT, "parity.json"), "w") as f:
        json.dump(meta, f, indent=0, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
