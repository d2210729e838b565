#!/usr/bin/python3
"""analyze's t-SNE against scikit-learn's on the same rows, in one script.

    go build -o /tmp/duelctl ./cmd/duelctl
    /usr/bin/python3 bench/tsne_sklearn.py --duelctl /tmp/duelctl [--n 1000 2000 5000] [--dim 512] [--threads 2]

For each N it draws N rows of dimension --dim around 10 random centres
(centres N(0, 0.25) a coordinate, noise N(0, 1)), writes them to an .npy,
and times, with the same number of threads:
  - scikit-learn: PCA to 50 components (its default solver), then
    TSNE(perplexity 30, learning_rate "auto", init "pca", 1000 iterations)
    with method "barnes_hut" (its default, angle 0.5) and "exact";
  - `duelctl bench tsne --features X.npy --tsne-method barnes-hut|exact --json`,
    which times the same steps (PCA to 50 included) in the Go process.
It prints seconds, the final KL divergence (each reports its own: for
Barnes-Hut both use the tree's normalisation) and scikit-learn's time over
duelctl's (above 1: duelctl faster). The exact method is skipped above
--exact-max rows (scikit-learn's exact t-SNE needs n² memory and minutes).
Needs numpy and scikit-learn (Debian: python3-sklearn); never a test
dependency.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duelctl", required=True, help="duelctl binary")
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 2000, 5000], help="rows")
    ap.add_argument("--dim", type=int, default=512, help="dimension of the rows")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads of both (OMP_NUM_THREADS, GOMAXPROCS)")
    ap.add_argument("--exact-max", type=int, default=2000, help="largest N timed with the exact method")
    args = ap.parse_args()
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[v] = str(args.threads)
    import numpy as np  # after the thread settings
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, {args.threads} threads")
    print(f"{'N':>6} {'method':>11} {'sklearn s':>10} {'KL':>7} {'duelctl s':>10} {'KL':>7} {'ratio':>6}")
    env = dict(os.environ, GOMAXPROCS=str(args.threads))
    # A first small fit of each method, untimed: scikit-learn's first call
    # pays one-time set-up (thread pools, imports) that is not t-SNE.
    warm = np.random.default_rng(0).standard_normal((200, 60)).astype(np.float32)
    for m in ("barnes_hut", "exact"):
        TSNE(2, perplexity=30, learning_rate="auto", init="pca", n_iter=250, method=m, random_state=0).fit(
            PCA(50, random_state=0).fit_transform(warm))
    for n in args.n:
        r = np.random.default_rng(1)
        centres = 0.5 * r.standard_normal((10, args.dim))
        x = (centres[np.arange(n) % 10] + r.standard_normal((n, args.dim))).astype(np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.npy")
            np.save(path, x)
            for ours, theirs in (("barnes-hut", "barnes_hut"), ("exact", "exact")):
                if ours == "exact" and n > args.exact_max:
                    continue
                t0 = time.perf_counter()
                z = PCA(50, random_state=0).fit_transform(x)
                emb = TSNE(2, perplexity=30, learning_rate="auto", init="pca", n_iter=1000, method=theirs,
                           random_state=0).fit(z)
                st = time.perf_counter() - t0
                out = subprocess.run([args.duelctl, "bench", "tsne", "--features", path, "--tsne-method", ours, "--json"],
                                     check=True, capture_output=True, text=True, env=env).stdout
                res = json.loads(out.strip().splitlines()[-1])
                print(f"{n:>6} {ours:>11} {st:>10.2f} {emb.kl_divergence_:>7.3f} {res['seconds']:>10.2f} {res['kl']:>7.3f} "
                      f"{st / res['seconds']:>5.2f}x", flush=True)


if __name__ == "__main__":
    main()
