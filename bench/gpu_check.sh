#!/bin/bash
# GPU checks for a machine that has a GPU but no Go (the lent device machine).
#
#   bench/gpu_check.sh build DIR      # here: the test binaries into DIR
#   bench/gpu_check.sh slim AWAY      # here, before the device tool's run:
#                   # the largest tracked files (generated kernels, the
#                   # embedded CIFAR-10 strips) moved into AWAY, outside the
#                   # repository, so that the working tree and DIR fit the
#                   # 64 MiB the tool carries; unslim AWAY puts them back
#   bench/gpu_check.sh run DIR OUT    # there, from the repository root
#   bench/gpu_check.sh quick DIR OUT [race]  # there: the tensor-core
#                   # kernels' tests and benchmarks, the TF32 step (and
#                  # racecheck over the transposes, GEMMs and convolutions)
#   bench/gpu_check.sh defaults DIR OUT  # there: issue 12's figures under
#                   # the default kernels, and the host CPU's AMX kernel
#                   # where it has AMX, and gemm_wgp_* first tested and timed (5-6 minutes)
#   bench/gpu_check.sh goals DIR OUT  # there: issue 12's three goals and
#                   # the kernels no GPU has run yet, first (3-6 minutes)
#   bench/gpu_check.sh tune DIR OUT   # there: the figures behind the
#                   # defaults: GEMM sizes by kernel, the DUEL rounds on
#                   # fresh batches, the step's profile (2-5 minutes)
#   bench/gpu_check.sh gemm DIR OUT   # there: the wgmma products' tests and
#                   # timings beside torch.mm (about 2 minutes)
#   bench/gpu_check.sh conv DIR OUT [race]  # there: the wgmma and
#                   # lane-mapped convolutions' test, timings beside
#                   # cuDNN's, the step with them (3-5 minutes; race: then
#                   # racecheck and synccheck over the test)
#   bench/gpu_check.sh check DIR OUT  # there: every GPU test (3-5 minutes)
#   bench/gpu_check.sh figures DIR OUT  # there: the other kernels'
#                   # figures beside PyTorch's, the FP32 step (4-5 minutes)
#   bench/gpu_check.sh build-sanitize DIR    # here: cuda's and cudaduel's test
#                                            # binaries and compute-sanitizer
#   bench/gpu_check.sh run-sanitize DIR OUT [TOOLS] [SECONDS]
#                   # there: the kernel tests under memcheck, racecheck,
#                   # synccheck (DIR may be run's: it has both binaries)
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
# script; every log goes into OUT/logs.tar.gz. The binaries travel as one
# xz archive, without the embedded data (the device tool carries 64 MiB).
set -u
# package:binary:tests to run (-test.run); "." is every test of the package.
pkgs="cuda/driver:driver:. cuda:cuda:. duel/memory/cudaduel:cudaduel:.
nn/loss:loss:^TestLossesOnCUDA$ duel/ssl:ssl:^TestStepsOnCUDA$ duel/eval:eval:^TestKNNOnCUDA$
duel/train:train:^(TestTrainOnCUDA|TestTrainDUELOnCUDA)$ kernels/gemm:gemm:AMX"
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
	if [ -e "$d/bins.tar.xz" ]; then # python3's lzma where there is no xz
		tar -xJf "$d/bins.tar.xz" -C "$d" 2>/dev/null ||
			python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$d/bins.tar.xz" "$d" || exit 1
		rm -f "$d/bins.tar.xz"
	fi
}
# machine writes the GPU, its driver and the host's CPU to machine.txt.
machine() {
	chmod +x "$d"/*
	{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; lscpu | grep 'Model name'; grep -o -w 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; } 2>&1 | tee "$out/machine.txt"
}
# amx runs the AMX tile kernel of kernels/gemm on the host's CPU where it
# has AMX (a Sapphire Rapids host: the H200's "Intel(R) Xeon(R)
# Processor" may be one): TestAMXKernel against the Go model, then its
# product beside the AVX512_BF16 kernels (amx.log; seconds, skipped
# without the tiles).
amx() {
	limit=40 tests gemm
	(cd kernels/gemm && timeout 60 "$d/gemm.test" -test.run '^$' -test.bench 'SgemmBF16AMX' -test.benchtime 1x) 2>&1 | tee "$out/amx.log"
}
# tests BIN... runs the tests of the packages of pkgs named BIN, in that
# order (those of $only where it is set), 240 s each (or $limit).
tests() {
	for want in "$@"; do
		for p in $pkgs; do
			IFS=: read -r pkg bin run <<<"$p"
			[ "$bin" = "$want" ] || continue
			[ -x "$d/$bin.test" ] || { echo "$pkg: no test binary in $d, skipped"; continue; }
			t0=$(date +%s) l=${limit:-240}
			(cd "$pkg" && timeout "$l" "$d/$bin.test" -test.v -test.short -test.run "${only:-$run}" -test.timeout $((l - 10))s) >"$out/$bin.log" 2>&1
			echo "$pkg tests: rc $? in $(($(date +%s) - t0)) s, $(grep -cE '^--- PASS' "$out/$bin.log") passed"
			grep -E '^(--- FAIL|FAIL|panic)' "$out/$bin.log" | head -20
		done
	done
}
# wg_tests runs gemm_wg.cu's GPU test (wgmma, bulk copies, clusters:
# H100/H200 only) first: its layout probes, then the precision products,
# wg and wg3 in one process, then each kernel fed by bulk copies (never
# run on a GPU before: a wait that never ends stops only its own process)
# in its own, all into OUT's cuda-wg.log.
wg_tests() {
	for k in 'wg|wg3' wgm wgm3 wgms wgs wgp; do
		only="^TestGemmWGKernel\$/^(tf32|bf16)\$/^($k)\$" limit=45 tests cuda
		cat "$out/cuda.log" >>"$out/cuda-wg.log"
	done
	rm -f "$out/cuda.log"
}
# first_use times, on a machine whose driver has compiled none of our
# modules yet (run it first), one TF32 ResNet-50 step at batch 32 with
# its warm-up: the driver's JIT of every module a training step loads,
# from PTX (first-use.log, with duelctl's line for each module that took
# a second or more: Device.LogSlowLoads).
first_use() {
	t0=$(date +%s%N)
	timeout 150 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 32 --steps 1 --warmup 1 >"$out/first-use.log" 2>&1
	echo "first use (JIT and one step): rc $? in $((($(date +%s%N) - t0) / 1000000)) ms" | tee -a "$out/first-use.log"
}
# warm_jit has the driver compile every module's PTX at once, one
# process a module on all the host's cores (cuda.test's TestJITWarm), into
# its cache (~/.nv/ComputeCache), so that the tests and benchmarks after
# it do not wait for the JIT module by module (ptxas: 72 s of CPU for all
# of them on a Zen 5, bench/RESULTS.md); jit.log has each module's time,
# slowest first.
warm_jit() {
	t0=$(date +%s%N)
	DUEL_JIT_WARM=list "$d/cuda.test" -test.run '^TestJITWarm$' | sed -n 's/^module //p' |
		xargs -P "$(nproc)" -I{} env DUEL_JIT_WARM={} "$d/cuda.test" -test.run '^TestJITWarm$' 2>&1 |
		grep -E '^(jit |--- FAIL|FAIL|panic)' | sort -k3 -g -r >"$out/jit.log"
	echo "every module's JIT, $(nproc) processes at once: $((($(date +%s%N) - t0) / 1000000)) ms" | tee -a "$out/jit.log"
	head -4 "$out/jit.log"
}
# bench_cuda PATTERN SECONDS BENCHTIME runs package cuda's benchmarks
# matching PATTERN, appended to bench.log.
bench_cuda() {
	(cd cuda && timeout "$2" "$d/cuda.test" -test.run '^$' -test.bench "$1" -test.benchtime "$3") 2>&1 | tee -a "$out/bench.log"
}
# duel_bench times the DUEL update at K 4096 B 256 Z 128 and K 2048 B
# 256 Z 256 with the one-block selections, duel_lean.cu's first (lean512,
# lean1024: the keys in registers) then duel.cu's (block512, block1024),
# with their per-phase times, and SelectAuto's choice between them
# (auto), and each with duel_gather instead of duel_move (the *gather
# variants: the whole K x K block gathered into a second matrix, whose
# permute-ms to compare with duel_move's), and the default (automove:
# SelectAuto and MoveAuto, auto-scatter-ms and auto-gather-ms the moves it
# measured); duel_bench_rounds the others at K 4096 (block1024prefetch: the
# runners-up's rows prefetched; rounds1024, rounds512: certified rounds in
# one block, duel_rounds.cu; rounds8: on a cluster of 8, duel_rounds8.cu),
# with their rounds.
duel_bench() {
	(cd duel/memory/cudaduel && timeout 80 "$d/cudaduel.test" -test.run '^$' -test.bench 'DUELKernel/K(4096_B256_Z128|2048_B256_Z256)/(lean|block512$|block1024$|auto$|block1024gather$|autogather$|automove$)' -test.benchtime 0.5s) 2>&1 | tee -a "$out/bench.log"
	# Every kernel and copy of the updates timed alone (the profiler's
	# events around each: duel_dots' own time, which the phases' events
	# put at 0.1 ms against a napkin of 10 us), the default selection then
	# the lean one, then the defaults (MoveAuto: both moves, then the
	# faster) (duel-profile.log).
	for run in auto:scatter lean:scatter auto:auto; do
		sel=${run%:*} move=${run#*:}
		echo "== DUEL_CUDADUEL_SELECT=$sel DUEL_CUDADUEL_MOVE=$move" >>"$out/duel-profile.log"
		DUEL_CUDADUEL_SELECT=$sel DUEL_CUDADUEL_MOVE=$move DUEL_CUDA_PROFILE=1 timeout 30 "$d/duelctl" bench duel --device cuda --size 4096 --batch 256 --dim 128 --updates 50 --reference-updates 0 >>"$out/duel-profile.log" 2>&1
	done
	grep -E "^==|duel_|memcpy|memset|wall" "$out/duel-profile.log"
}
duel_bench_rounds() {
	(cd duel/memory/cudaduel && timeout 60 "$d/cudaduel.test" -test.run '^$' -test.bench 'DUELKernel/K4096_B256_Z128/(block1024prefetch|rounds)' -test.benchtime 0.5s) 2>&1 | tee -a "$out/bench.log"
}
# peers runs PyTorch's figures at the benchmarks' shapes (peer.log), then
# the TF32 ResNet-50 step at batch 256 beside PyTorch's (step.log).
peers() {
	timeout 90 python3 -u "$root/bench/gpu_peer.py" 2>&1 | tee "$out/peer.log"
	timeout 120 python3 -u "$root/bench/step_pytorch.py" --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl" 2>&1 | tee "$out/step.log"
}
# slimFiles are the tracked files slim moves aside (about 40 MB of the
# working tree's 60), none of which the device machine needs: the
# binaries are built here.
slimFiles="kernels/cuda/zz_generated_conv_tc.go kernels/cuda/zz_generated_conv_tc_tf32.go
kernels/cuda/zz_generated_conv_tc_bf16.go kernels/cuda/zz_generated_conv_tc_rl.go
kernels/cuda/zz_generated_conv_wg.go kernels/cuda/zz_generated_gemm_tc.go
duel/data/embedded/cifar10_train.png duel/data/embedded/cifar10_test.png"
case "${1:-}" in
slim)
	away=$(readlink -f "${2:?slim AWAY: a folder outside the repository}")
	case "$away/" in "$PWD/"*)
		echo "slim: $away is inside the repository: the device tool would carry it" >&2
		exit 2
		;;
	esac
	mkdir -p "$away"
	for f in $slimFiles; do
		mkdir -p "$away/$(dirname "$f")" && mv "$f" "$away/$f" || exit 1
	done
	echo "moved $(echo $slimFiles | wc -w) files into $away; put them back with: bash $0 unslim $away"
	;;
unslim)
	away=$(readlink -f "${2:?unslim AWAY: the folder slim used}")
	for f in $slimFiles; do
		if [ -f "$away/$f" ]; then
			mv "$away/$f" "$f" || exit 1
		fi
	done
	git status --short -- $slimFiles
	;;
build)
	d=$2
	mkdir -p "$d"
	for p in $pkgs; do
		IFS=: read -r pkg bin _ <<<"$p"
		go test -c -tags duel_noembed -ldflags="-s -w" -o "$d/$bin.test" "./$pkg" || exit 1
	done
	go build -tags duel_noembed -ldflags="-s -w" -o "$d/duelctl" ./cmd/duelctl || exit 1
	# The device tool carries 64 MiB with the working tree: the binaries
	# travel as one xz archive (they share most of their code: 11 MB
	# against 36 as separate gzip files).
	(cd "$d" && tar -cf - ./*.test duelctl | xz -9 -T0 >bins.tar.xz && rm -f ./*.test duelctl) || exit 1
	du -sh "$d"
	;;
run)
	start_run "$2" "$3"
	machine
	warm_jit
	tests driver cuda
	(cd cuda && "$d/cuda.test" -test.run '^$' -test.bench 'Gemm|Add|ReduceRows|Conv|BatchNorm|TopK|OptimizerSteps' -test.benchtime 1s) 2>&1 | tee "$out/bench.log"
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
quick)
	# The short run after a change to the tensor-core kernels: their GPU
	# tests (gemm_wg's first, then convolutions, GEMMs, batch norm, the
	# optimizers, pooling) and
	# cudaduel's kernel test, the
	# convolution, tensor-core GEMM and batch norm benchmarks and PyTorch's
	# peers, the TF32 ResNet-50 step beside PyTorch's (and in the default
	# precisions) and its profile (3-4 minutes).
	start_run "$2" "$3"
	machine
	warm_jit
	wg_tests
	only='^(TestConvTCGPU|TestConvGPU|TestGemmPrecisionKernel|TestConformance|TestBatchNormKernel|TestMultiOptimizerKernel|TestOptimizerKernel|TestPoolKernel|TestConvWtKernel)$' limit=120 tests cuda
	only='^TestDUELKernel$' limit=120 tests cudaduel
	# (GemmPrecision/*/wg and /wg3: gemm_wg.cu's packing and wgmma
	# products in 128 x 256 and 192 x 256 tiles, pack-us and mul-us apart;
	# then, in a process of their own, the clustered ones: GemmWGM/*/wgm
	# and /wgm3, bulk copies and mbarriers, clusters of two blocks sharing
	# B's tile.)
	bench_cuda 'Conv|GemmPrecision/(tf32|bf16)|BatchNorm|OptimizerSteps' 120 200x
	for k in wgm wgm3 wgms wgs; do bench_cuda "GemmWGM/(tf32|bf16)/n[0-9]+/^$k\$" 40 200x; done
	duel_bench
	duel_bench_rounds
	peers
	# The same step with the tensor-core kernels that round each panel in
	# shared memory (TCV2: gemm_tc2_tf32, conv_tc's *_tf32; the default,
	# auto, rounds in registers).
	DUEL_CUDA_TC_KERNEL=v2 timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 2>&1 | sed "s/^/v2: /" | tee -a "$out/step.log"
	timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile 2>&1 | tee "$out/profile.log"
	# quick DIR OUT race: then racecheck over the shared-memory transposes'
	# and the tensor-core GEMMs' tests (60 s), then the tensor-core
	# convolutions' (90 s) (OUT/san1, OUT/san2: logs.tar.gz each).
	if [ "${4:-}" = race ]; then
		CUDA_TESTS='^(TestConvWtKernel|TestGemmPrecisionKernel)$' DUEL_TESTS='^$' bash "$0" run-sanitize "$2" "$final/san1" racecheck 60
		CUDA_TESTS='^TestConvTCGPU$' DUEL_TESTS='^$' bash "$0" run-sanitize "$2" "$final/san2" racecheck 90
	fi
	# The defaults (FP32 products, TF32 convolutions, as PyTorch's).
	timeout 60 "$d/duelctl" bench step --device cuda --arch resnet50 --batch 256 --steps 5 --warmup 2 2>&1 | sed "s/^/default: /" | tee -a "$out/step.log"
	;;
goals)
	# The three figures issue 12 asks for, and the kernels no GPU has run
	# yet, in the order that matters if the time runs out: gemm_wg.cu's
	# layout probes and products on the GPU (TCWG, TCWG3, TCWGM, TCWGM3, TCWGMS:
	# wgmma, bulk copies, clusters), every DUEL selection's decisions
	# against the CPU's (TestDUELKernel: duel_select_rounds and
	# duel_select_rounds8 included), GEMM 4096^3 in TF32 and BF16 (v3,
	# wg, wg3, then wgm, wgm3 and wgms in a process of their own) with
	# torch.mm's figures, the DUEL update's selections at K 4096 B 256 Z
	# 128 with their phases and rounds, then the TF32 ResNet-50 step
	# beside PyTorch's.
	start_run "$2" "$3"
	machine
	warm_jit
	wg_tests
	only='^TestDUELKernel$' limit=120 tests cudaduel
	bench_cuda 'GemmPrecision/(tf32|bf16)/n4096/(v3|wg|wg3|wgp)$' 90 100x
	for k in wgm wgm3 wgms wgs; do bench_cuda "GemmWGM/(tf32|bf16)/n4096/^$k\$" 30 100x; done
	duel_bench
	duel_bench_rounds
	peers
	;;
tune)
	# The figures behind the defaults (2-5 minutes): the wgmma products'
	# GPU tests (the packing included), the precision tests under the
	# default kernels, GEMM at 1024, 2048 and 4096 with every TF32 and
	# BF16 kernel and the default's choice (auto: TCAuto's gemm_wg
	# threshold, wgAutoMin) beside torch.mm at the same sizes, the DUEL
	# rounds on batches that recur and on fresh ones (their rounds an
	# update), then the TF32 ResNet-50 step beside PyTorch's and its
	# profile.
	start_run "$2" "$3"
	machine
	warm_jit
	only='^TestGemmWGKernel$' limit=60 tests cuda
	mv "$out/cuda.log" "$out/cuda-wg.log"
	only='^TestGemmPrecisionKernel$' limit=90 tests cuda
	bench_cuda 'GemmPrecision/(tf32|bf16)/n(1024|2048|4096)/(auto|v2|v3|wg|wg3)$' 150 100x
	timeout 60 python3 -u "$root/bench/gpu_peer.py" --gemm 2>&1 | tee "$out/peer-gemm.log"
	(cd duel/memory/cudaduel && timeout 90 "$d/cudaduel.test" -test.run '^$' -test.bench 'DUELKernel/K4096_B256_Z128/(block1024|rounds1024|rounds8|rounds1024fresh|rounds8fresh)$' -test.benchtime 0.5s) 2>&1 | tee -a "$out/bench.log"
	timeout 120 python3 -u "$root/bench/step_pytorch.py" --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl" 2>&1 | tee "$out/step.log"
	timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile 2>&1 | tee "$out/profile.log"
	;;
gemm)
	# The wgmma products alone (about 2 minutes): their GPU tests, each
	# kernel fed by bulk copies in its own process, then GEMM at 1024, 2048
	# and 4096 with the default (auto), gemm_wg_* and the bulk-copy
	# kernels, random factors, beside torch.mm at the same sizes.
	start_run "$2" "$3"
	machine
	warm_jit
	wg_tests
	bench_cuda 'GemmPrecision/(tf32|bf16)/n(1024|2048|4096)/(auto|wg)$' 90 100x
	for k in wgms wgs; do bench_cuda "GemmWGM/(tf32|bf16)/n(1024|4096)/^$k\$" 40 100x; done
	timeout 60 python3 -u "$root/bench/gpu_peer.py" --gemm 2>&1 | tee "$out/peer-gemm.log"
	;;
conv)
	# The convolutions' versions side by side (3-5 minutes): the GPU test
	# of every version against the CPU first (TCAuto: conv_wg.cu's wgmma
	# kernels on compute capability 9.0, conv_tc.cu's *_tf32rr elsewhere;
	# TCV4's *_tf32rl; TCWG; and each one's strided input gradient by dcol,
	# by the checked gather and by phases), then every TF32 convolution
	# benchmark (the default's beside tf32v4's and, on 9.0, tf32v3's rr
	# kernels) with cuDNN's in the same run, and the TF32 ResNet-50 step
	# with each (v3, v4) and with the default kernels beside PyTorch's,
	# and the default step's profile.
	start_run "$2" "$3"
	machine
	warm_jit
	only='^TestConvTCGPU$' limit=120 tests cuda
	mv "$out/cuda.log" "$out/cuda-conv.log"
	bench_cuda 'Conv/tf32(v3|v4)?/' 150 200x
	timeout 60 python3 -u "$root/bench/gpu_peer.py" --conv 2>&1 | tee "$out/peer-conv.log"
	for k in v3 v4; do
		DUEL_CUDA_TC_KERNEL=$k timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 2>&1 | sed "s/^/$k: /" | tee -a "$out/step.log"
	done
	timeout 120 python3 -u "$root/bench/step_pytorch.py" --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl" 2>&1 | tee -a "$out/step.log"
	timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile 2>&1 | tee "$out/profile.log"
	# conv DIR OUT race (DIR with build-sanitize's files too): then
	# racecheck and synccheck over the convolutions' GPU test at small
	# shapes (OUT/san: logs.tar.gz).
	if [ "${4:-}" = race ]; then
		CUDA_TESTS='^TestConvTCGPU$' DUEL_TESTS='^$' bash "$0" run-sanitize "$2" "$final/san" "racecheck synccheck" 90
	fi
	;;
defaults)
	# Issue 12's three figures under the default kernels, in one run (5-6
	# minutes): the first use's JIT (first_use), the GPU training tests
	# (loss, ssl, eval, train) and the driver's, the TF32 and BF16 GEMM
	# 4096^3 beside torch.mm, the strided input gradients by dcol (the
	# default) and by phases, the DUEL update at K 4096 B 256 Z 128, the
	# TF32 ResNet-50 step beside PyTorch's, again with the phases
	# ($DUEL_CUDA_STRIDED_GRAD=phases), the default step's profile, and
	# D-MoCo's step with the DUEL memory on the GPU, profiled.
	start_run "$2" "$3"
	machine
	amx
	first_use
	warm_jit
	limit=60 tests loss ssl eval train
	limit=20 tests driver
	# gemm_wgp_* (TCWGP, the packing inside the product's launch, built
	# 2026-11-29 without a GPU): its test in a process of its own first
	# (a count that never completes stops only that process), then
	# TCAuto's measurement of gemm_wg_*, gemm_wgs_* and gemm_wgp_* on
	# their first products (TestGemmTuneKernel), then the default timed
	# (its log names the kernel it chose and each candidate's median)
	# beside gemm_wgp_* alone and torch.mm.
	only='^TestGemmWGKernel$/^(tf32|bf16)$/^wgp$' limit=45 tests cuda
	mv "$out/cuda.log" "$out/cuda-wgp.log"
	only='^TestGemmTuneKernel$' limit=30 tests cuda
	mv "$out/cuda.log" "$out/cuda-tune.log"
	bench_cuda 'GemmPrecision/(tf32|bf16)/n4096/(auto|wgp)$' 75 100x
	bench_cuda 'Conv/^tf32$/(Stride2|Down1x1)/' 60 200x
	timeout 60 python3 -u "$root/bench/gpu_peer.py" --gemm 2>&1 | tee "$out/peer-gemm.log"
	duel_bench
	timeout 120 python3 -u "$root/bench/step_pytorch.py" --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl" 2>&1 | tee "$out/step.log"
	DUEL_CUDA_STRIDED_GRAD=phases timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 2>&1 | sed "s/^/phases: /" | tee -a "$out/step.log"
	timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile 2>&1 | tee "$out/profile.log"
	# D-MoCo's step with its memory full and deciding on the GPU (K 4096,
	# B 256, Z 256: the preset's projection), profiled: the DUEL kernels'
	# share of a training step (dmoco-profile.log), after the 17 updates
	# in which SelectAuto measures its three selections (and TCAuto the
	# heads' products: 13 of each shape).
	timeout 50 "$d/duelctl" bench step --device cuda --precision tf32 --method dmoco --arch resnet50 --batch 256 --memory-size 4096 --steps 3 --warmup 17 --profile 2>&1 | tee "$out/dmoco-profile.log"
	;;
strided)
	# The strided input gradient's gather (2-3 minutes): the first use's
	# JIT (first_use), the gathers
	# conv_col2im_taps<T>_f32 and conv_col2im_f32 side by side
	# (BenchmarkCol2im), the convolutions' GPU tests under the defaults
	# (FP32's conv.cu and the tensor cores' TF32 and BF16, every strided
	# case through dcol and its gather), the TF32 ResNet-50 step beside
	# PyTorch's, the strided layers' passes, and the step's profile.
	start_run "$2" "$3"
	machine
	first_use
	warm_jit
	bench_cuda 'Col2im' 40 200x
	only='^TestConvGPU$' limit=60 tests cuda
	mv "$out/cuda.log" "$out/cuda-fp32.log"
	only='^TestConvTCGPU$/^(tf32|bf16)$/^auto$' limit=90 tests cuda
	timeout 120 python3 -u "$root/bench/step_pytorch.py" --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl" 2>&1 | tee "$out/step.log"
	bench_cuda 'Conv/^tf32$/(Stride2|Down1x1)/' 60 200x
	timeout 60 "$d/duelctl" bench step --device cuda --precision tf32 --arch resnet50 --batch 256 --steps 3 --warmup 1 --profile 2>&1 | tee "$out/profile.log"
	;;
check)
	# Every GPU test of the packages in pkgs, in the -short mode (the
	# emulator's left to go test), each package under its own limit (about
	# 3-5 minutes): after a change of the default kernels.
	start_run "$2" "$3"
	machine
	warm_jit
	limit=150 tests cuda # TestConvTCGPU runs four TF32 versions since 2026-11-28
	limit=120 tests cudaduel # TestDUELKernel: 67 s on an H200 before the lean kernels joined it
	limit=30 tests train ssl loss eval
	limit=20 tests driver
	;;
figures)
	# The rest of a card's figures after goals, tune and gemm (4-5
	# minutes): FP32 GEMM, add, row sums, convolutions in every precision,
	# batch norm, the optimizers, top-k; the DUEL update with every one-block
	# and cluster selection at both shapes; PyTorch's figures at the same
	# shapes; the FP32 ResNet-50 step beside PyTorch's.
	start_run "$2" "$3"
	machine
	warm_jit
	bench_cuda 'Gemm$|Add|ReduceRows|Conv|BatchNorm|OptimizerSteps|TopK' 120 200x
	(cd duel/memory/cudaduel && timeout 45 "$d/cudaduel.test" -test.run '^$' -test.bench 'DUELKernel/.*/(block|cluster)' -test.benchtime 0.5s) 2>&1 | tee -a "$out/bench.log"
	timeout 80 python3 -u "$root/bench/gpu_peer.py" 2>&1 | tee "$out/peer.log"
	timeout 90 python3 -u "$root/bench/step_pytorch.py" --device cuda --precision fp32 --arch resnet50 --batch 256 --steps 5 --warmup 2 --duelctl "$d/duelctl" 2>&1 | tee "$out/step.log"
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
	# Each tool (memcheck racecheck synccheck, or those named in TOOLS)
	# over the GPU kernel tests at small shapes (DUEL_GPU_SMALL=1: the
	# tests leave out their large layers and memories), SECONDS each (150);
	# a tool's findings make it exit 9. sanitize.log sums it up. The GPU
	# machine's own compute-sanitizer when it has one, else the carried one.
	# CUDA_TESTS and DUEL_TESTS replace the two packages' -test.run
	# patterns (racecheck is slow: in 25 s it got through part of
	# TestConformance; give it e.g. CUDA_TESTS='^TestConvTCGPU$').
	start_run "$2" "$3"
	tools=${4:-memcheck racecheck synccheck} limit=${5:-150}
	cs=$(command -v compute-sanitizer || true)
	if [ -z "$cs" ]; then
		tar -xzf "$d/sanitizer.tgz" -C "$d" || exit 1
		cs="$d/compute-sanitizer/compute-sanitizer"
	fi
	chmod +x "$d"/*.test
	"$cs" --version 2>&1 | tail -1 | tee "$out/sanitize.log"
	export DUEL_GPU_SMALL=1
	for tool in $tools; do
		for t in "cuda:cuda:${CUDA_TESTS:-^(TestConvGPU|TestConvTCGPU|TestGemmPrecisionKernel|TestConformance)\$}" "duel/memory/cudaduel:cudaduel:${DUEL_TESTS:-^(TestDUELKernel|TestDUELPolicyKernel)\$}"; do
			IFS=: read -r pkg bin run <<<"$t"
			[ "$run" = '^$' ] && continue # this package left out
			t0=$(date +%s)
			(cd "$pkg" && timeout "$limit" "$cs" --tool "$tool" --target-processes all --error-exitcode 9 --print-limit 30 "$d/$bin.test" -test.v -test.short -test.run "$run" -test.timeout $((limit - 5))s) >"$out/$tool-$bin.log" 2>&1
			rc=$?
			echo "$tool $bin: rc $rc in $(($(date +%s) - t0)) s, $(grep -cE '^--- PASS' "$out/$tool-$bin.log") passed, $(grep -cE '^========= (Invalid|Race|Barrier|Uninitialized|Program hit|Error)' "$out/$tool-$bin.log") findings" | tee -a "$out/sanitize.log"
			grep -E '^(--- FAIL|FAIL|panic)|^========= [A-Z]' "$out/$tool-$bin.log" | head -12 | tee -a "$out/sanitize.log"
		done
	done
	;;
*)
	echo "usage: $0 build DIR | run DIR OUT | quick DIR OUT [race] | goals DIR OUT | tune DIR OUT | gemm DIR OUT | conv DIR OUT [race] | defaults DIR OUT | strided DIR OUT | check DIR OUT | figures DIR OUT | build-sanitize DIR | run-sanitize DIR OUT [TOOLS] [SECONDS]" >&2
	exit 2
	;;
esac
