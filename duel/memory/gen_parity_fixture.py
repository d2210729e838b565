#!/usr/bin/env python3
"""Writes testdata/pseudocode_parity.json: the paper's update_DUEL (Appendix D,
PyTorch-style pseudocode) executed in PyTorch at the paper's shape
(K, B, Z) = (2048, 256, 256), for TestPseudocodeParity (pseudocode_parity_test.go).

The rows are generated with integer arithmetic only (splitmix64, integer
square roots), so the Go test rebuilds the same stream bit for bit: each row
is a vector g of integers with |g_d| <= 2048 and |g| close to 2048 (a class
centre plus noise, 3/4 of the rows from class 0, about 1 in 16 an exact copy
of an earlier row so that scores tie), divided by 2048. The pseudocode runs
in float64: every dot product, q = (1 + x)/2 and score of such rows is exact
in float64 whatever the order of the sums, so PyTorch's and Go's scores are
the same numbers and every decision, ties included (torch.argmax returns the
first maximal index), must agree.

Readings of MAX_SCORE (see memory.Admission):
  protected  MAX_SCORE = -2^24: a new row never holds the highest score
  compete    MAX_SCORE = 0, plus the new row's q with itself (Go's Compete)
  max-score  MAX_SCORE = +2^24, as printed

Run: /usr/bin/python3 duel/memory/gen_parity_fixture.py   (PyTorch 1.13, CPU)
"""
import json
import os
import sys

import torch

MASK = (1 << 64) - 1
K, B, Z, UPDATES, CLASSES, SEED = 2048, 256, 256, 3, 10, 20240522


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def isqrt(n):
    import math
    return math.isqrt(n)


def stream(rng, centres, n, earlier):
    """n integer rows; earlier holds the rows generated so far (for copies)."""
    rows = []
    for _ in range(n):
        if earlier and rng.next() % 16 == 0:
            rows.append(list(earlier[rng.next() % len(earlier)]))
            earlier.append(rows[-1])
            continue
        c = 0 if rng.next() % 4 != 0 else 1 + rng.next() % (CLASSES - 1)
        v = [centres[c][d] + rng.next() % 49 - 24 for d in range(Z)]
        s = isqrt(sum(x * x for x in v))
        if s == 0:
            v, s = [1] + [0] * (Z - 1), 1
        g = [(x * 2048) // s for x in v]  # floor division, as floorDiv in Go
        rows.append(g)
        earlier.append(g)
    return rows


def update_duel(memory, p_target, max_score, self_term):
    """Appendix D's update_DUEL, as printed (score_function(x) = (1 + x)/2)."""
    k = memory.shape[0]
    b = p_target.shape[0]
    comb = torch.cat((memory, p_target), dim=0)
    score_matrix = (1 + torch.mm(comb, comb.transpose(0, 1))) / 2
    score_memory = score_matrix[:k, :k]
    selection = torch.tensor([i < k for i in range(k + b)])
    score = torch.cat((score_memory.sum(-1), torch.zeros(b, dtype=torch.float64)), 0)
    evicted = []
    for i in range(k, k + b):
        # (a) Select target
        J = int(torch.argmax(score))
        evicted.append(J)
        # (b) Logical deletion
        score -= score_matrix[J] * selection.double()
        selection[J] = False
        score[J] = 0.
        # (c) Logical insertion
        t = score_matrix[i] * selection.double()
        score += t
        selection[i] = True
        score[i] = t.sum() + max_score + (score_matrix[i, i] if self_term else 0.)
    return comb[selection], evicted


def main():
    torch.set_num_threads(2)
    rng = SplitMix64(SEED)
    centres = [[rng.next() % 129 - 64 for _ in range(Z)] for _ in range(CLASSES)]
    earlier = []
    init = stream(rng, centres, K, earlier)
    batches = [stream(rng, centres, B, earlier) for _ in range(UPDATES)]
    to_t = lambda rows: torch.tensor(rows, dtype=torch.float64) / 2048
    readings = {"protected": (-2.0 ** 24, False), "compete": (0.0, True), "max-score": (2.0 ** 24, False)}
    out = {"k": K, "b": B, "z": Z, "updates": UPDATES, "classes": CLASSES, "seed": SEED,
           "torch": torch.__version__, "evicted": {}}
    for name, (max_score, self_term) in readings.items():
        memory = to_t(init)
        log = []
        for batch in batches:
            memory, ev = update_duel(memory, to_t(batch), max_score, self_term)
            log.append(ev)
        out["evicted"][name] = log
        print(name, "first evictions", log[0][:8], file=sys.stderr)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "pseudocode_parity.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    os.replace(path + ".tmp", path)
    print("wrote", path, file=sys.stderr)


if __name__ == "__main__":
    main()
