#!/bin/bash
# GPU checks for a machine that has a GPU but no Go (the lent device machine).
#
#   bench/gpu_check.sh build DIR      # here: the test binaries into DIR
#   bench/gpu_check.sh run DIR OUT    # there, from the repository root
#
# run: the driver, backend and GPU DUEL tests (GPU tests included: the
# layers' kernels against the CPU; the CPU emulator's skipped with -short),
# every method's training steps on the GPU against the CPU (duel/train's
# TestTrainOnCUDA), the GPU benchmarks (GEMM: BenchmarkGemm, and
# BenchmarkGemmPrecision in fp32/tf32/bf16 at 1024 and 4096, the tensor-core
# kernels' tests being TestGemmPrecisionKernel, TestTimeGemm and
# TestPrecisionDefault in the cuda run; Add, row sums, convolution,
# batch norm, top-k, DUEL update), and PyTorch's figures at the same shapes
# (bench/gpu_peer.py) in the same script; every log goes to OUT. (nn/loss's
# and duel/ssl's *CUDA tests run the same way; they are left out to keep
# the binaries under the device tool's 64 MiB.)
set -u
case "${1:-}" in
build)
	d=$2
	mkdir -p "$d"
	for p in cuda/driver:driver cuda:cuda duel/memory/cudaduel:cudaduel duel/train:train; do
		go test -c -ldflags="-s -w" -o "$d/${p#*:}.test" "./${p%:*}" || exit 1
	done
	;;
run)
	d=$(readlink -f "$2") out=$3 root=$PWD
	mkdir -p "$out"
	{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; lscpu | grep 'Model name'; } 2>&1 | tee "$out/machine.txt"
	for p in cuda/driver:driver cuda:cuda duel/memory/cudaduel:cudaduel duel/train:train; do
		run=.
		case ${p#*:} in train) run=CUDA ;; esac
		(cd "${p%:*}" && "$d/${p#*:}.test" -test.v -test.short -test.run "$run" -test.timeout 240s) >"$out/${p#*:}.log" 2>&1
		echo "${p%:*} tests: rc $?"
		grep -E '^(--- FAIL|FAIL|panic)' "$out/${p#*:}.log" | head -20
		grep -cE '^--- PASS' "$out/${p#*:}.log"
	done
	(cd cuda && "$d/cuda.test" -test.run '^$' -test.bench 'Gemm|Add|ReduceRows|Conv|BatchNorm|TopK' -test.benchtime 1s) 2>&1 | tee "$out/bench.log"
	(cd duel/memory/cudaduel && "$d/cudaduel.test" -test.run '^$' -test.bench 'DUELKernel' -test.benchtime 0.5s) 2>&1 | tee -a "$out/bench.log"
	python3 "$root/bench/gpu_peer.py" 2>&1 | tee "$out/peer.log"
	;;
*)
	echo "usage: $0 build DIR | run DIR OUT" >&2
	exit 2
	;;
esac
