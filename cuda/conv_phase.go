package cuda

import (
	"fmt"
	"strings"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// The input gradient at stride S > 1 by phases. An input position (y, x)
// meets only the taps (i, j) with i = (y + P) mod S and j = (x + P) mod
// S (mod S), so the input positions split into S*S phases (ry, rx), each
// an input gradient of stride 1 with the kernel's taps of that phase
// (about K/S x K/S of them) over dy: S*S implicit GEMMs whose work adds
// up to the forward pass's, where the direct product (conv_dgrad_*'s
// columns are every input position) multiplies zeros at 1 - 1/S² of its
// terms and the dense product and gather (convInputGradStrided's dcol)
// writes and reads C*K*K x N*OH*OW floats. This is how cuDNN's strided
// input gradients are known to work (sub-pixel convolution).

// StridedGradEnv names the environment variable that sets how the
// backends NewBackend returns run the input gradient of a strided
// convolution on the tensor cores: "dcol" (unset: the default), the dense
// product w^T * dy and conv_col2im_f32's gather (convInputGradStrided),
// or "phases", the S*S products of stride 1 (convInputGradPhases). The
// phases are slower than dcol on ResNet-50's strided layers and in its
// step (bench/RESULTS.md, "NVIDIA H200"), so they stay opt-in.
const StridedGradEnv = "DUEL_CUDA_STRIDED_GRAD"

// stridedPhasesFromEnv reports whether $DUEL_CUDA_STRIDED_GRAD asks for
// the phases; a value other than dcol or phases is an error.
func stridedPhasesFromEnv() (bool, error) {
	return envSetting(StridedGradEnv, false, parseStridedGrad, "dcol or phases")
}

// parseStridedGrad parses "dcol" (false) or "phases" (true), any case,
// space around.
func parseStridedGrad(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "dcol":
		return false, nil
	case "phases":
		return true, nil
	}
	return false, fmt.Errorf("strided gradient %q: expected dcol or phases", v)
}

// convPhase is phase (ry, rx)'s geometry (conv_pass.cuh's conv_phase):
// its taps ku x kv, and its input positions y = S*(t0y + ty) + ry - P, ty
// < hp (x likewise).
type convPhase struct {
	ku, kv, t0y, t0x, hp, wp int
}

// convPhaseLen returns the taps of residue r of an axis of a k-tap kernel
// at stride s with padding p, the least t >= 0 with s*t + r - p >= 0,
// and how many positions of an axis of n the residue has from there
// (conv_pass.cuh's conv_phase_len).
func convPhaseLen(r, k, s, p, n int) (taps, t0, length int) {
	if r < k {
		taps = (k - r + s - 1) / s
	}
	if p > r {
		t0 = (p - r + s - 1) / s
	}
	end := 0
	if n+p-r > 0 {
		end = (n + p - r + s - 1) / s
	}
	return taps, t0, max(end-t0, 0)
}

// convPhaseOf returns phase (ry, rx) of s's input gradient.
func convPhaseOf(ry, rx int, s tensor.ConvShape) convPhase {
	var f convPhase
	f.ku, f.t0y, f.hp = convPhaseLen(ry, s.K, s.S, s.P, s.H)
	f.kv, f.t0x, f.wp = convPhaseLen(rx, s.K, s.S, s.P, s.W)
	return f
}

// convDgradP are the phase kernels' launchers by name (conv_tc.cu's
// conv_dgradp_tc*, conv_wg.cu's conv_dgradp_wg*).
var convDgradP = map[string]func(kc.Launcher, kc.Config, driver.DevicePtr, driver.DevicePtr, driver.DevicePtr, int32,
	int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32) error{
	"conv_dgradp_tc_tf32": kc.ConvDgradpTcTf32, "conv_dgradp_tc64_tf32": kc.ConvDgradpTc64Tf32,
	"conv_dgradp_tc_bf16": kc.ConvDgradpTcBf16, "conv_dgradp_tc64_bf16": kc.ConvDgradpTc64Bf16,
	"conv_dgradp_tc_tf32rr": kc.ConvDgradpTcTf32rr, "conv_dgradp_tc64_tf32rr": kc.ConvDgradpTc64Tf32rr,
	"conv_dgradp_tc_tf32rl": kc.ConvDgradpTcTf32rl, "conv_dgradp_tc64_tf32rl": kc.ConvDgradpTc64Tf32rl,
	"conv_dgradp_wg_tf32": kc.ConvDgradpWgTf32, "conv_dgradp_wg64_tf32": kc.ConvDgradpWg64Tf32,
}

// convInputGradPhases runs the input gradient at stride S > 1 by phases
// (above) on the tensor cores, and reports whether it did: where the
// convolutions' precision has tensor-core kernels (tf32, bf16) and a
// phase's taps fit the masked gathers (at most 31). Each phase first
// gathers its taps of w^T (conv_wt_phase_f32, C x O*ku*kv, into scratch
// memory), then conv_dgradp_* writes its C x N*hp*wp matrix whole into
// scratch memory (the phases in row-major (ry, rx) order), and
// conv_phase_gather_f32 writes (adds to, when acc) dx from them, zeros
// where a phase has no taps (K < S). Written straight into dx instead
// (phasesDirect: tests, benchmarks), each phase writes every S-th float,
// half of each 32-byte sector at stride 2, a phase at a time, which runs
// far slower than the products' FLOPs allow (bench/RESULTS.md,
// "NVIDIA H200").
func (be *Backend) convInputGradPhases(op string, dxp, dyp, wp driver.DevicePtr, acc bool, s tensor.ConvShape, a [11]int32) bool {
	most := (s.K + s.S - 1) / s.S // the taps of phase 0 along an axis: the most
	if most*most > 31 {
		return false
	}
	k, ok := be.convTCForProduct("dgradp", s.In, s.N*s.H*s.W/(s.S*s.S))
	if !ok {
		return false
	}
	launch := convDgradP[k.name]
	if launch == nil {
		return false
	}
	sc := &scratch{mem: be.mem}
	defer sc.release() // the stream orders later users of the memory after these kernels
	wtp, err := sc.alloc(4 * max(s.In*s.Out*most*most, 1))
	must(op, err)
	dense := !be.phasesDirect
	var ph driver.DevicePtr
	if dense {
		ph, err = sc.alloc(4 * s.In * s.N * s.H * s.W)
		must(op, err)
	}
	off := 0 // the phase's first element in ph
	for ry := 0; ry < s.S; ry++ {
		for rx := 0; rx < s.S; rx++ {
			f := convPhaseOf(ry, rx, s)
			cols, kk := s.N*f.hp*f.wp, f.ku*f.kv
			out := dxp
			if dense {
				out, off = ph.Add(4*off), off+s.In*cols
			}
			if cols == 0 || kk == 0 && (acc || dense) {
				continue // no position, or nothing to add (dense: the gather writes the zeros)
			}
			if kk > 0 {
				n := int64(s.In) * int64(s.Out) * int64(kk)
				be.queued(op, kc.ConvWtPhaseF32(be.g, be.grid(n), wtp, wp, int32(s.Out), int32(s.In), int32(s.K), int32(s.S),
					int32(ry), int32(rx), int32(f.ku), int32(f.kv)))
			}
			be.queued(op, launch(be.g, convTCLaunch(op, k, s.In, cols, 1), out, dyp, wtp, convFlag(acc),
				a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], int32(ry), int32(rx), convFlag(dense)))
		}
	}
	if dense {
		cfg := planeGrid(int64(s.H)*int64(s.W), int64(s.N)*int64(s.In), be.g.Multiprocessors())
		be.queued(op, kc.ConvPhaseGatherF32(be.g, cfg, dxp, ph, convFlag(acc),
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
	}
	return true
}
