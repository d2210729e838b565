#!/usr/bin/env bash
# Installs the benchmark peers from Debian's packages: PyTorch 1.13 (CPU),
# numpy linked to OpenBLAS (without libopenblas0-pthread Debian's numpy uses
# the reference BLAS, ~4 GFLOP/s, a meaningless peer) and threadpoolctl, which
# the scripts use to print the BLAS kernel in use, and scikit-learn (the t-SNE
# peer, bench/tsne_sklearn.py). Needed only for bench/*.py
# and for regenerating the PyTorch fixtures; never by the tests.
set -euo pipefail
apt-get update -qq
apt-get install -y -qq -o Dir::Cache::archives="$(mktemp -d)" \
	python3-torch python3-numpy libopenblas0-pthread python3-threadpoolctl python3-sklearn
/usr/bin/python3 -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__)'
