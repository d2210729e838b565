#!/bin/bash
# GPU checks for a machine that has a GPU but no Go (the lent device machine).
#
#   bench/gpu_check.sh build DIR      # here: the test binaries into DIR
#   bench/gpu_check.sh run DIR OUT    # there, from the repository root
#
# run: the driver, backend and GPU DUEL tests (GPU tests included: the
# layers' kernels against the CPU; the CPU emulator's skipped with -short),
# the losses, every method's step and training on the GPU against the CPU,
# kNN's device top-k; the GPU benchmarks (GEMM
# in fp32/tf32/bf16 at 1024 and 4096, add, row sums, convolution, batch
# norm, top-k, DUEL update) and PyTorch's figures at the same shapes
# (bench/gpu_peer.py), then a ResNet-50 batch-256 training step beside
# PyTorch's (bench/step_pytorch.py --device cuda) and that step profiled
# per kernel (duelctl bench step --profile: profile.log), all in one
# script; every log goes into OUT/logs.tar.gz. The binaries travel gzipped
# and without the embedded data (the device tool carries 64 MiB).
set -u
# package:binary:tests to run (-test.run); "." is every test of the package.
pkgs="cuda/driver:driver:. cuda:cuda:. duel/memory/cudaduel:cudaduel:.
nn/loss:loss:^TestLossesOnCUDA$ duel/ssl:ssl:^TestStepsOnCUDA$ duel/eval:eval:^TestKNNOnCUDA$
duel/train:train:^TestTrainOnCUDA$"
# (Built with the tag duel_noembed: without the embedded CIFAR-10 subset,
# 13 MB each, which the GPU tests do not use. cmd/duelctl's GPU tests stay
# here all the same: its test binary would not fit beside the others;
# duelctl's device path runs in the step.)
case "${1:-}" in
build)
	d=$2
	mkdir -p "$d"
	for p in $pkgs; do
		IFS=: read -r pkg bin _ <<<"$p"
		go test -c -tags duel_noembed -ldflags="-s -w" -o "$d/$bin.test" "./$pkg" || exit 1
	done
	go build -tags duel_noembed -ldflags="-s -w" -o "$d/duelctl" ./cmd/duelctl || exit 1
	gzip -9f "$d"/*.test "$d/duelctl" # the device tool carries 64 MiB at most
	du -sh "$d"
	;;
run)
	d=$(readlink -f "$2") root=$PWD
	mkdir -p "$3"
	# The logs are written to a scratch folder and packed into one
	# OUT/logs.tar.gz at the end, also when a time limit stops the script
	# (the device tool brings back a limited number of files).
	final=$(readlink -f "$3") out=$(mktemp -d)
	trap 'tar -czf "$final/logs.tar.gz" -C "$out" .; trap - EXIT' EXIT
	trap 'exit 143' TERM INT
	for f in "$d"/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
	chmod +x "$d"/*
	{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; lscpu | grep 'Model name'; } 2>&1 | tee "$out/machine.txt"
	tests() { # the packages of pkgs named in $@, in that order
		for want in "$@"; do
			for p in $pkgs; do
				IFS=: read -r pkg bin run <<<"$p"
				[ "$bin" = "$want" ] || continue
				[ -x "$d/$bin.test" ] || { echo "$pkg: no test binary in $d, skipped"; continue; }
				t0=$(date +%s)
				(cd "$pkg" && timeout 150 "$d/$bin.test" -test.v -test.short -test.run "$run" -test.timeout 140s) >"$out/$bin.log" 2>&1
				echo "$pkg tests: rc $? in $(($(date +%s) - t0)) s, $(grep -cE '^--- PASS' "$out/$bin.log") passed"
				grep -E '^(--- FAIL|FAIL|panic)' "$out/$bin.log" | head -20
			done
		done
	}
	tests driver cuda
	(cd cuda && "$d/cuda.test" -test.run '^$' -test.bench 'Gemm|Add|ReduceRows|Conv|BatchNorm|TopK' -test.benchtime 1s) 2>&1 | tee "$out/bench.log"
	(cd duel/memory/cudaduel && "$d/cudaduel.test" -test.run '^$' -test.bench 'DUELKernel' -test.benchtime 0.5s) 2>&1 | tee -a "$out/bench.log"
	python3 "$root/bench/gpu_peer.py" 2>&1 | tee "$out/peer.log"
	# A training step of ResNet-50 (CIFAR stem) at batch 256 beside PyTorch's
	# in FP32, then in TF32 (ours: conv_tc.cu and gemm_tc2; PyTorch's: cuBLAS
	# and cuDNN with TF32).
	{
		python3 "$root/bench/step_pytorch.py" --device cuda --precision fp32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl"
		python3 "$root/bench/step_pytorch.py" --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl"
	} 2>&1 | tee "$out/step.log"
	# Where the step's time goes: device time per kernel, copy and memset of
	# 3 timed steps, wall vs device time, host counts (the JSON line has
	# every row).
	"$d/duelctl" bench step --device cuda --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile --json 2>&1 | tee "$out/profile.log"
	"$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile --json 2>&1 | tee -a "$out/profile.log"
	tests cudaduel loss ssl eval train
	;;
*)
	echo "usage: $0 build DIR | run DIR OUT" >&2
	exit 2
	;;
esac
