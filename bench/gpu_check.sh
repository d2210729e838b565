#!/bin/bash
# GPU checks for a machine that has a GPU but no Go (the lent device machine).
#
#   bench/gpu_check.sh build DIR      # here: test binaries and duelctl into DIR
#   bench/gpu_check.sh run DIR OUT    # there, from the repository root
#
# run: the driver, kernel and backend tests (GPU tests included, the CPU
# emulator's skipped with -short), the GPU benchmarks (GEMM, Add, row sums,
# DUEL update), and PyTorch's figures at the same shapes (bench/gpu_peer.py)
# in the same script; every log goes to OUT.
set -u
case "${1:-}" in
build)
	d=$2
	mkdir -p "$d"
	go test -c -ldflags="-s -w" -o "$d/driver.test" ./cuda/driver &&
		go test -c -ldflags="-s -w" -o "$d/kcuda.test" ./kernels/cuda &&
		go test -c -ldflags="-s -w" -o "$d/cuda.test" ./cuda
	;;
run)
	d=$(readlink -f "$2") out=$3 root=$PWD
	mkdir -p "$out"
	{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; lscpu | grep 'Model name'; } 2>&1 | tee "$out/machine.txt"
	(cd cuda/driver && "$d/driver.test" -test.v -test.short) >"$out/driver.log" 2>&1
	echo "driver tests: rc $?"
	(cd kernels/cuda && "$d/kcuda.test" -test.v -test.short) >"$out/kcuda.log" 2>&1
	echo "kernel tests: rc $?"
	(cd cuda && "$d/cuda.test" -test.v -test.short -test.timeout 240s) >"$out/cuda.log" 2>&1
	echo "backend tests: rc $?"
	grep -E '^(--- |ok|FAIL|PASS)' "$out/cuda.log" | grep -v SKIP | head -60
	(cd cuda && "$d/cuda.test" -test.run '^$' -test.bench 'Gemm|Add|ReduceRows|DUELKernel' -test.benchtime 2s) 2>&1 | tee "$out/bench.log"
	python3 "$root/bench/gpu_peer.py" 2>&1 | tee "$out/peer.log"
	;;
*)
	echo "usage: $0 build DIR | run DIR OUT" >&2
	exit 2
	;;
esac
