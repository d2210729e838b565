#!/usr/bin/env bash
# Runs every CPU peer script in bench/ once at its smallest size, beside the
# duelctl it compares with, and says which ran to the end. The figures mean
# nothing; the point is that a script edited since its last table still runs
# (data_pytorch.py had lost its gray weights' shape for a day before anyone
# ran it). Run it after editing a peer, before a benchmark session:
#
#   bash bench/setup-peers.sh        # once: PyTorch, numpy/OpenBLAS, scikit-learn
#   bash bench/check-peers.sh [DUELCTL]
#
# DUELCTL defaults to a fresh `go build ./cmd/duelctl`. Never a test: the tests
# need no Python. Not covered here: gpu_peer.py and duel_sass.py (a GPU, CUDA
# 12's ptxas) and ddp_scaling.sh (mpirun); gpu_check.sh runs the first.
set -uo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
duelctl=${1:-}
if [ -z "$duelctl" ]; then
	duelctl=$tmp/duelctl
	go build -o "$duelctl" ./cmd/duelctl || exit 1
fi
export OMP_WAIT_POLICY=PASSIVE

failed=()
check() {
	local name=$1
	shift
	local start=$SECONDS
	if "$@" >"$tmp/$name.log" 2>&1; then
		printf 'ok    %-22s %3d s  %s\n' "$name" $((SECONDS - start)) "$(tail -n 1 "$tmp/$name.log" | cut -c1-90)"
	else
		printf 'FAIL  %-22s %3d s (its last lines below)\n' "$name" $((SECONDS - start))
		tail -n 8 "$tmp/$name.log" | sed 's/^/      /'
		failed+=("$name")
	fi
}

check gemm_numpy $py bench/gemm_numpy.py --duelctl "$duelctl" --shapes 64x64x64 --rounds 1 --seconds 0.05
check gemm_bf16_pytorch $py bench/gemm_bf16_pytorch.py --duelctl "$duelctl" --shapes 64x64x64 --rounds 1 --seconds 0.05
check duel_pytorch $py bench/duel_pytorch.py --shapes 256,32,16 --batches 2 --rounds 1
check data_pytorch $py bench/data_pytorch.py --duelctl "$duelctl" --batch 16 --seconds 0.2 --repeats 1
check step_pytorch $py bench/step_pytorch.py --duelctl "$duelctl" --arch resnet18-w16 --batch 4 --steps 1 --warmup 0
check ssl_step_check $py bench/ssl_step_pytorch.py --check
check ssl_step_pytorch $py bench/ssl_step_pytorch.py --duelctl "$duelctl" --method all --batch 8 --memory-size 64 --steps 1 --warmup 0
check ddp_pytorch $py bench/ddp_pytorch.py --procs 1 --arch resnet18-w16 --batch 4 --steps 1 --warmup 0
check conv_pytorch $py bench/conv_pytorch.py --reps 1
check conv_bf16_pytorch $py bench/conv_bf16_pytorch.py --reps 1 --rounds 1
check tsne_sklearn $py bench/tsne_sklearn.py --duelctl "$duelctl" --n 200 --dim 64 --exact-max 200

if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}" >&2
	exit 1
fi
echo "every peer ran"
