package cuda

// flopsPerSMCycle is the dense arithmetic rate of one multiprocessor in
// FLOP a cycle (a multiply-add is 2), by compute capability: FP32 on the
// CUDA cores, TF32 and BF16 on the tensor cores. From NVIDIA's datasheets:
// A100 (sm_80) 19.5 / 156 / 312 TFLOP/s at 108 SMs and 1410 MHz; GA102
// (sm_86) and AD102 (sm_89) a quarter of A100's tensor rate per SM and
// twice its FP32 rate; H100 SXM (sm_90) 67 / 494.7 / 989.4 at 132 SMs and
// 1830 MHz. Hopper's tensor rates are those of wgmma; mma.sync, which
// duel's kernels use, does not reach them.
var flopsPerSMCycle = map[int][3]float64{ // FP32, TF32, BF16
	60: {128, 0, 0},
	61: {256, 0, 0},
	70: {128, 0, 0},
	75: {128, 0, 0},
	80: {128, 1024, 2048},
	86: {256, 256, 512},
	89: {256, 256, 512},
	90: {256, 2048, 4096},
}

// peakGFLOPS returns the dense peak of sms multiprocessors of compute
// capability cc at a clock of clockKHz in precision p (TF32 and BF16: the
// tensor cores), GFLOP/s; ok is false where the table does not know the
// capability or the precision runs on no tensor core there.
func peakGFLOPS(cc, sms, clockKHz int, p Precision) (gflops float64, ok bool) {
	rates, known := flopsPerSMCycle[cc]
	i := map[Precision]int{FP32: 0, TF32: 1, BF16: 2}[p]
	if !known || rates[i] == 0 || sms <= 0 || clockKHz <= 0 {
		return 0, false
	}
	return float64(sms) * float64(clockKHz) * 1e3 * rates[i] / 1e9, true
}

// PeakGFLOPS returns the device's dense peak in precision p at its
// multiprocessors' peak clock (TF32 and BF16 on the tensor cores), GFLOP/s,
// and whether it is known (see flopsPerSMCycle): what `duelctl bench gemm
// --device cuda` and BenchmarkGemmPrecision give their rates against.
func (d *Device) PeakGFLOPS(p Precision) (float64, bool) {
	return peakGFLOPS(d.cc, d.sms, d.clock, p)
}

// ClockKHz returns the multiprocessors' peak clock in kHz as the driver
// reports it (CU_DEVICE_ATTRIBUTE_CLOCK_RATE): what turns a kernel's
// clock64 cycles into time, at most that fast.
func (d *Device) ClockKHz() int { return d.clock }
