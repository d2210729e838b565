#!/usr/bin/python3
"""Writes testdata/torch.safetensors from PyTorch tensors.

The `safetensors` Python package is not installable here, so this is a
minimal independent writer of the specification, laid out as the reference
library does: tensors sorted by (dtype descending in the spec's enumeration,
name), compact JSON header with __metadata__ first, padded with spaces to a
multiple of 8 bytes. Run from this directory:  /usr/bin/python3 gen_fixture.py
"""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64"}
RANK = {"I64": 0, "F64": 1, "F32": 2, "I32": 3}


def save(tensors, metadata, path):
    items = sorted(tensors.items(), key=lambda kv: (RANK[DTYPES[kv[1].dtype]], kv[0]))
    header = {"__metadata__": metadata}
    blobs, pos = [], 0
    for name, t in items:
        b = t.contiguous().numpy().tobytes()  # little-endian on x86
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [pos, pos + len(b)]}
        blobs.append(b)
        pos += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    torch.manual_seed(0)
    tensors = {
        "projector.0.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1,
        "bn1.num_batches_tracked": torch.tensor(7, dtype=torch.int64),
        "double": torch.tensor([1.0 / 3, -2.5, 1e300], dtype=torch.float64),
        "labels": torch.tensor([3, -1, 2147483647, 0], dtype=torch.int32),
        "empty": torch.zeros(0, 3),
        "layer1.0.conv1.weight": torch.randn(2, 1, 3, 3),
    }
    save(tensors, {"format": "pt", "note": "duel fixture"}, "testdata/torch.safetensors")
    # The random tensor's values, for the Go test to compare with.
    with open("testdata/torch_values.json", "w") as f:
        json.dump({"layer1.0.conv1.weight": tensors["layer1.0.conv1.weight"].flatten().tolist()}, f)
