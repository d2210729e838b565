#!/usr/bin/env bash
# ab_step.sh: one training step of two duelctl binaries (two commits, say)
# in alternating rounds, in the same script: the figures and the ratio of
# the means that bench/RESULTS.md reports for changes of the engine
# itself, whose peer is the engine before them.
#
#   bash bench/ab_step.sh [--rounds N] [--together] OLD_BIN NEW_BIN [bench step flags...]
#
# Each round runs `OLD_BIN bench step FLAGS`, then `NEW_BIN bench step
# FLAGS`, and reads the median step time each prints. --together runs two
# processes of the same binary at once instead of one (both of its steps
# are printed; the machine is then oversubscribed when each process uses
# every core). The flags default to the D-MoCo cpu-small step:
# --method dmoco --arch resnet18-w16 --batch 64 --steps 30 --warmup 3.
#
# Build the old binary from a worktree, e.g.
#   git worktree add /tmp/old 5f069fa && (cd /tmp/old && go build -o /tmp/duelctl-old ./cmd/duelctl)
set -euo pipefail

rounds=4
together=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--together) together=1; shift ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
if [[ $# -lt 2 ]]; then
	echo "ab_step.sh: expected OLD_BIN NEW_BIN [bench step flags...] (see --help)" >&2
	exit 2
fi
old="$1" new="$2"
shift 2
for bin in "$old" "$new"; do
	if [[ ! -x "$bin" ]]; then
		echo "ab_step.sh: $bin is not an executable duelctl" >&2
		exit 2
	fi
done
flags=("$@")
if [[ ${#flags[@]} -eq 0 ]]; then
	flags=(--method dmoco --arch resnet18-w16 --batch 64 --steps 30 --warmup 3)
fi

# step BIN prints the median step time (ms) that `BIN bench step` reports.
step() {
	local out ms
	out=$("$1" bench step "${flags[@]}" 2>&1) || { echo "ab_step.sh: $1 bench step failed: $out" >&2; exit 1; }
	ms=$(grep -o 'step [0-9.]* ms' <<<"$out" | head -1 | awk '{print $2}')
	if [[ -z "$ms" ]]; then
		echo "ab_step.sh: no step time in the output of $1: $out" >&2
		exit 1
	fi
	echo "$ms"
}

# run BIN prints one step time, or two (space-separated) with --together.
run() {
	if [[ $together -eq 0 ]]; then
		step "$1"
		return
	fi
	local a b
	a=$(mktemp) b=$(mktemp)
	step "$1" >"$a" &
	local pa=$!
	step "$1" >"$b" &
	local pb=$!
	wait "$pa" "$pb"
	echo "$(cat "$a") $(cat "$b")"
	rm -f "$a" "$b"
}

all_old=() all_new=()
for ((r = 1; r <= rounds; r++)); do
	o=$(run "$old")
	n=$(run "$new")
	echo "round $r: old $o ms, new $n ms"
	all_old+=($o)
	all_new+=($n)
done
mean() { printf '%s\n' "$@" | awk '{s += $1} END {printf "%.1f", s / NR}'; }
mo=$(mean "${all_old[@]}")
mn=$(mean "${all_new[@]}")
echo "old $old: mean $mo ms; new $new: mean $mn ms; old/new $(awk -v a="$mo" -v b="$mn" 'BEGIN {printf "%.2f", a / b}')x"
