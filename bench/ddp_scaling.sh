#!/usr/bin/env bash
# Data-parallel scaling of duel (MPI) beside PyTorch DDP (gloo), weak scaling:
# a fixed per-rank batch B, 2 ranks x 1 core against 1 process x 1 core on
# the same machine, SimCLR training step of --arch on random 32x32 inputs.
#
#   scaling_efficiency = img_per_s(2 ranks) / (2 * img_per_s(1 process))
#
# with img_per_s the job's global samples per second (rank 0's figure for the
# MPI run). What runs:
#
#   duel, 1 process:  [taskset -c C0] $DUELCTL bench step --arch A --method simclr --batch B --threads 1 --steps S --warmup W --json
#   duel, 2 ranks:    mpirun -np 2 --oversubscribe --bind-to core [--allow-run-as-root] \
#                         $DUELCTL bench step --dist mpi --arch A --method simclr --batch B --threads 1 --steps S --warmup W --json
#   PyTorch:          $PYTHON bench/ddp_pytorch.py --procs 1,2 --arch A --method simclr --batch B --steps S --warmup W
#
# Usage: bench/ddp_scaling.sh [--arch resnet18-w16] [--batch 32] [--steps 10] [--warmup 2]
# duel's SimCLR computes NT-Xent over the global batch (each rank's
# projections are all-gathered), so the PyTorch peer runs with --gather
# (solo-learn's GatherLayer) unless PEER_FLAGS says otherwise (PEER_FLAGS=
# for plain DDP, each rank's loss on its local batch).
# Environment: DUELCTL (default duelctl), PYTHON (default /usr/bin/python3),
# MPIRUN (default mpirun), MPIRUN_FLAGS (extra mpirun flags), PIN=0 to run
# the single duel process without taskset (the PyTorch baseline is pinned to
# the first allowed core by ddp_pytorch.py's default --pin, so by default the
# duel baseline is pinned to that core too).
# The last line is one JSON object with both efficiencies.
set -euo pipefail

arch=resnet18-w16 batch=32 steps=10 warmup=2
while [ $# -gt 0 ]; do
	case "$1" in
	--arch) arch=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "ddp_scaling.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

here=$(cd "$(dirname "$0")" && pwd)
DUELCTL=${DUELCTL:-duelctl}
PYTHON=${PYTHON:-/usr/bin/python3}
MPIRUN=${MPIRUN:-mpirun}

if ! command -v "$MPIRUN" >/dev/null 2>&1; then
	echo "ddp_scaling.sh: $MPIRUN not found: install Open MPI (apt-get install openmpi-bin) or set MPIRUN" >&2
	exit 2
fi
if ! "$PYTHON" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' >/dev/null 2>&1; then
	echo "ddp_scaling.sh: $PYTHON cannot import torch with the gloo backend: install it (apt-get install python3-torch) or set PYTHON" >&2
	exit 2
fi
if ! command -v "$DUELCTL" >/dev/null 2>&1; then
	echo "ddp_scaling.sh: $DUELCTL not found: build it (go build -o duelctl ./cmd/duelctl) and set DUELCTL=./duelctl" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# img_per_s FILE: the img_per_s of the JSON line in FILE that reports it
# (the one with "rank": 0 when several do; otherwise the first).
img_per_s() {
	"$PYTHON" - "$1" <<'EOF'
import json, sys
found = []
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    i = line.find("{")
    if i < 0:
        continue
    try:
        o = json.loads(line[i:])
    except ValueError:
        continue
    if isinstance(o, dict) and "img_per_s" in o:
        found.append(o)
if not found:
    sys.exit("no JSON line with img_per_s in " + sys.argv[1])
rank0 = [o for o in found if o.get("rank") == 0]
print((rank0 or found)[0]["img_per_s"])
EOF
}

common=(--arch "$arch" --method simclr --batch "$batch" --threads 1 --steps "$steps" --warmup "$warmup" --json)

pin=()
if [ "${PIN:-1}" != 0 ] && command -v taskset >/dev/null 2>&1; then
	first=$("$PYTHON" -c 'import os; print(min(os.sched_getaffinity(0)))')
	pin=(taskset -c "$first")
fi
echo "== duel, 1 process x 1 thread: ${pin[*]} $DUELCTL bench step ${common[*]}" >&2
"${pin[@]}" "$DUELCTL" bench step "${common[@]}" | tee "$tmp/go1" >&2

mpi=(-np 2 --oversubscribe --bind-to core)
if [ "$(id -u)" = 0 ]; then
	mpi+=(--allow-run-as-root)
fi
# shellcheck disable=SC2206 # MPIRUN_FLAGS is split on purpose
mpi+=(${MPIRUN_FLAGS:-})
echo "== duel, 2 ranks x 1 thread: $MPIRUN ${mpi[*]} $DUELCTL bench step --dist mpi ${common[*]}" >&2
"$MPIRUN" "${mpi[@]}" "$DUELCTL" bench step --dist mpi "${common[@]}" | tee "$tmp/go2" >&2

# shellcheck disable=SC2206 # PEER_FLAGS is split on purpose
peer=(${PEER_FLAGS---gather})
echo "== PyTorch DDP (gloo): $PYTHON $here/ddp_pytorch.py --procs 1,2 --arch $arch --method simclr --batch $batch --steps $steps --warmup $warmup ${peer[*]}" >&2
"$PYTHON" "$here/ddp_pytorch.py" --procs 1,2 --arch "$arch" --method simclr --batch "$batch" \
	--steps "$steps" --warmup "$warmup" "${peer[@]}" | tee "$tmp/pt" >&2

go1=$(img_per_s "$tmp/go1")
go2=$(img_per_s "$tmp/go2")
"$PYTHON" - "$go1" "$go2" "$tmp/pt" "$arch" "$batch" <<'EOF'
import json, sys
go1, go2 = float(sys.argv[1]), float(sys.argv[2])
pt = {}
for line in open(sys.argv[3]):
    o = json.loads(line)
    if "procs" in o:
        pt[o["procs"]] = o["img_per_s"]
pt1, pt2 = pt[1], pt[2]
eff_go, eff_pt = go2 / (2 * go1), pt2 / (2 * pt1)
print(f"duel:        1 process {go1:8.1f} img/s, 2 ranks {go2:8.1f} img/s, efficiency {eff_go:.3f}")
print(f"PyTorch DDP: 1 process {pt1:8.1f} img/s, 2 ranks {pt2:8.1f} img/s, efficiency {eff_pt:.3f}")
print(f"duel / PyTorch: 1 process {go1 / pt1:.2f}x, 2 ranks {go2 / pt2:.2f}x")
print(json.dumps({"arch": sys.argv[4], "method": "simclr", "batch_per_rank": int(sys.argv[5]), "scaling": "weak",
                  "duel": {"img_per_s_1": go1, "img_per_s_2": go2, "scaling_efficiency": eff_go},
                  "pytorch_ddp_gloo": {"img_per_s_1": pt1, "img_per_s_2": pt2, "scaling_efficiency": eff_pt}}))
EOF
