#!/bin/bash
# GPU checks for a machine that has a GPU but no Go (the lent device machine).
#
#   bench/gpu_check.sh build DIR      # here: the test binaries into DIR
#   bench/gpu_check.sh run DIR OUT    # there, from the repository root
#   bench/gpu_check.sh build-sanitize DIR    # here: cuda's and cudaduel's test
#                                            # binaries and compute-sanitizer
#   bench/gpu_check.sh run-sanitize DIR OUT  # there: the kernel tests under
#                                            # memcheck, racecheck, synccheck
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
# start_run DIR OUT sets d (the binaries), root, out and final and
# unpacks the binaries. The logs are written to a scratch folder (out) and
# packed into one OUT/logs.tar.gz at the end, also when a time limit stops
# the script (the device tool brings back a limited number of files).
start_run() {
	d=$(readlink -f "$1") root=$PWD
	mkdir -p "$2"
	final=$(readlink -f "$2") out=$(mktemp -d)
	trap 'tar -czf "$final/logs.tar.gz" -C "$out" .; trap - EXIT' EXIT
	trap 'exit 143' TERM INT
	for f in "$d"/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
}
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
	start_run "$2" "$3"
	chmod +x "$d"/*
	{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; lscpu | grep 'Model name'; } 2>&1 | tee "$out/machine.txt"
	tests() { # the packages of pkgs named in $@, in that order
		for want in "$@"; do
			for p in $pkgs; do
				IFS=: read -r pkg bin run <<<"$p"
				[ "$bin" = "$want" ] || continue
				[ -x "$d/$bin.test" ] || { echo "$pkg: no test binary in $d, skipped"; continue; }
				t0=$(date +%s)
				(cd "$pkg" && timeout 240 "$d/$bin.test" -test.v -test.short -test.run "$run" -test.timeout 230s) >"$out/$bin.log" 2>&1
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
build-sanitize)
	# compute-sanitizer from Debian's nvidia-cuda-toolkit (CUDA 11.8: it
	# knows sm_90), its libraries beside it, as NVIDIA lays it out.
	d=$2
	cs=/usr/lib/nvidia-cuda-toolkit/compute-sanitizer
	[ -x /usr/bin/compute-sanitizer ] && [ -d "$cs" ] || { echo "no compute-sanitizer here (apt-get install nvidia-cuda-toolkit)" >&2; exit 1; }
	mkdir -p "$d"
	go test -c -tags duel_noembed -ldflags="-s -w" -o "$d/cuda.test" ./cuda || exit 1
	go test -c -tags duel_noembed -ldflags="-s -w" -o "$d/cudaduel.test" ./duel/memory/cudaduel || exit 1
	st=$(mktemp -d)
	cp -r "$cs" "$st/" && cp /usr/bin/compute-sanitizer "$st/compute-sanitizer/" && tar -czf "$d/sanitizer.tgz" -C "$st" compute-sanitizer || exit 1
	rm -rf "$st"
	gzip -9f "$d"/*.test
	du -sh "$d"
	;;
run-sanitize)
	# Each tool over the GPU kernel tests at small shapes (DUEL_GPU_SMALL=1:
	# the tests leave out their large layers and memories), 150 s each; a
	# tool's findings make it exit 9. sanitize.log sums it up.
	start_run "$2" "$3"
	tar -xzf "$d/sanitizer.tgz" -C "$d" && chmod +x "$d"/*.test
	cs="$d/compute-sanitizer/compute-sanitizer"
	"$cs" --version 2>&1 | tail -1 | tee "$out/sanitize.log"
	export DUEL_GPU_SMALL=1
	for tool in memcheck racecheck synccheck; do
		for t in "cuda:cuda:^(TestConvGPU|TestConvTCGPU|TestGemmPrecisionKernel|TestConformance)$" "duel/memory/cudaduel:cudaduel:^(TestDUELKernel|TestDUELPolicyKernel)$"; do
			IFS=: read -r pkg bin run <<<"$t"
			t0=$(date +%s)
			(cd "$pkg" && timeout 150 "$cs" --tool "$tool" --target-processes all --error-exitcode 9 --print-limit 30 "$d/$bin.test" -test.v -test.short -test.run "$run" -test.timeout 145s) >"$out/$tool-$bin.log" 2>&1
			rc=$?
			echo "$tool $bin: rc $rc in $(($(date +%s) - t0)) s, $(grep -cE '^--- PASS' "$out/$tool-$bin.log") passed, $(grep -cE '^========= (Invalid|Race|Barrier|Uninitialized|Program hit|Error)' "$out/$tool-$bin.log") findings" | tee -a "$out/sanitize.log"
			grep -E '^(--- FAIL|FAIL|panic)|^========= [A-Z]' "$out/$tool-$bin.log" | head -12 | tee -a "$out/sanitize.log"
		done
	done
	;;
*)
	echo "usage: $0 build DIR | run DIR OUT | build-sanitize DIR | run-sanitize DIR OUT" >&2
	exit 2
	;;
esac
