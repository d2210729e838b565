package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// bnCases are the geometries of the BatchNorm tests: NCHW and CNHW, ghost
// groups, 1-d BatchNorm (S = 1), odd sizes, groups reduced in several
// parts (small C, large groups), and an empty batch (evaluation
// only: the statistics of no samples are undefined).
var bnCases = []struct {
	g     tensor.BatchNormGeom
	train bool
}{
	{tensor.BatchNormGeom{N: 4, C: 3, S: 25, Splits: 1}, true},
	{tensor.BatchNormGeom{N: 6, C: 5, S: 7, Splits: 2}, true},
	{tensor.BatchNormGeom{N: 6, C: 5, S: 7, Splits: 3, ChannelMajor: true}, true},
	{tensor.BatchNormGeom{N: 8, C: 2, S: 81, Splits: 4, ChannelMajor: true}, true},
	{tensor.BatchNormGeom{N: 9, C: 17, S: 1, Splits: 1}, true},
	{tensor.BatchNormGeom{N: 10, C: 3, S: 1, Splits: 2}, true},
	{tensor.BatchNormGeom{N: 3, C: 64, S: 33, Splits: 1, ChannelMajor: true}, true},
	{tensor.BatchNormGeom{N: 16, C: 2, S: 101, Splits: 2}, true},                    // reductions in several parts
	{tensor.BatchNormGeom{N: 40, C: 1, S: 97, Splits: 1, ChannelMajor: true}, true}, // several parts, ragged
	{tensor.BatchNormGeom{N: 0, C: 4, S: 9, Splits: 1}, false},
	// Planes of a multiple of 4 floats: the float4 paths where the operands start on 16 bytes.
	{tensor.BatchNormGeom{N: 6, C: 3, S: 16, Splits: 1}, true},
	{tensor.BatchNormGeom{N: 8, C: 2, S: 64, Splits: 2, ChannelMajor: true}, true},
	{tensor.BatchNormGeom{N: 4, C: 5, S: 4, Splits: 2, ChannelMajor: true}, true},
	{tensor.BatchNormGeom{N: 50, C: 1, S: 12, Splits: 1}, true}, // several parts, the last shorter
	{tensor.BatchNormGeom{N: 30, C: 2, S: 20, Splits: 3}, true},
	{tensor.BatchNormGeom{N: 16, C: 8, S: 64, Splits: 1}, true}, // every float4 of an unrolled step in use
}

// testBatchNorm checks the BatchNorm passes of be against the CPU
// backend's on bnCases with and without the fused residual and ReLU,
// training and evaluation, gradients stored and accumulated: within
// float32 tolerance (the statistics are reduced in another order).
func testBatchNorm(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.BatchNormBackend)
	r := rand.New(rand.NewPCG(12, 2))
	for _, tc := range bnCases {
		for _, v := range []struct{ relu, res, acc, eval, aligned bool }{
			{false, false, false, false, false}, {true, false, true, false, false}, {true, true, false, false, false}, {false, true, true, false, false},
			{false, false, false, true, false}, {true, true, true, true, false},
			// Every operand on 16 bytes (offsets of 4k floats).
			{false, false, false, false, true}, {true, true, true, false, true}, {true, false, true, false, true}, {false, true, false, true, true},
		} {
			if !tc.train && !v.eval || v.aligned && tc.g.S%4 != 0 {
				continue
			}
			g := tc.g
			if v.eval {
				g.Splits = 1
			}
			// off is the offset of an operand in floats: k, or 4k with
			// v.aligned (the float4 paths need every operand on 16 bytes;
			// the others test the scalar fallback).
			off := func(k int) int {
				if v.aligned {
					return 4 * k
				}
				return k
			}
			name := fmt.Sprintf("N%dC%dS%dsplit%dcm%v/relu%v_res%v_acc%v_eval%v_aligned%v", g.N, g.C, g.S, g.Splits, g.ChannelMajor, v.relu, v.res, v.acc, v.eval, v.aligned)
			t.Run(name, func(t *testing.T) {
				n, c, k := g.N*g.C*g.S, g.C, g.Splits*g.C
				x := layerRandn(r, n, 2, 0.5)
				var res []float32
				if v.res {
					res = layerRandn(r, n, 1, 0)
				}
				gamma, beta := layerRandn(r, c, 0.5, 1), layerRandn(r, c, 0.5, 0)
				rm0, rv0 := layerRandn(r, c, 0.1, 0), layerRandn(r, c, 0.1, 1)
				// CPU forward.
				wy, wmean, winv := make([]float32, n), make([]float32, k), make([]float32, k)
				wrm, wrv := append([]float32(nil), rm0...), append([]float32(nil), rv0...)
				ha := tensor.BatchNormArgs{
					Y: layerHostOp(wy, n), X: layerHostOp(x, n), Gamma: layerHostOp(gamma, c), Beta: layerHostOp(beta, c),
					RunningMean: layerHostOp(wrm, c), RunningVar: layerHostOp(wrv, c), Mean: layerHostOp(wmean, k), InvStd: layerHostOp(winv, k),
					Eps: 1e-5, Momentum: 0.1, ReLU: v.relu,
				}
				if v.res {
					ha.Res = layerHostOp(res, n)
				}
				// Device forward.
				dy, dmean, dinv := layerDevOp(be, make([]float32, n), off(1), n), layerDevOp(be, make([]float32, k), off(2), k), layerDevOp(be, make([]float32, k), off(0), k)
				drm, drv := layerDevOp(be, rm0, off(3), c), layerDevOp(be, rv0, off(0), c)
				dx := layerDevOp(be, x, off(2), n)
				da := tensor.BatchNormArgs{
					Y: dy, X: dx, Gamma: layerDevOp(be, gamma, off(1), c), Beta: layerDevOp(be, beta, off(0), c),
					RunningMean: drm, RunningVar: drv, Mean: dmean, InvStd: dinv, Eps: 1e-5, Momentum: 0.1, ReLU: v.relu,
				}
				// The batch counter, with a ReLU only (both ways of each
				// pass): 41 batches before this one.
				wnb := []float32{41}
				var dnb tensor.Operand
				if v.relu {
					ha.NumBatches, dnb = layerHostOp(wnb, 1), layerDevOp(be, wnb, off(1), 1)
					da.NumBatches = dnb
				}
				if v.res {
					da.Res = layerDevOp(be, res, off(4), n)
				}
				if v.eval {
					cpu.BatchNormEval(g, ha)
					be.BatchNormEval(g, da)
				} else {
					cpu.BatchNormTrain(g, ha)
					be.BatchNormTrain(g, da)
				}
				layerClose(t, "Mean", layerOut(be, dmean), wmean, 1e-5, 1e-5)
				layerClose(t, "InvStd", layerOut(be, dinv), winv, 1e-5, 1e-5)
				layerClose(t, "RunningMean", layerOut(be, drm), wrm, 1e-6, 1e-5)
				layerClose(t, "RunningVar", layerOut(be, drv), wrv, 1e-6, 1e-5)
				layerClose(t, "Y", layerOut(be, dy), wy, 1e-4, 1e-4)
				if want := float32(map[bool]float32{true: 41, false: 42}[v.eval]); v.relu && (wnb[0] != want || layerOut(be, dnb)[0] != want) {
					t.Errorf("batch counter: CPU %v, device %v, want %v", wnb[0], layerOut(be, dnb)[0], want)
				}

				// Backward, from the CPU's forward results on both sides
				// (a ReLU mask flipping on a rounding near 0 is no error).
				gy := layerRandn(r, n, 1, 0)
				oldDX, oldDRes, oldDG, oldDB := layerRandn(r, n, 1, 0), layerRandn(r, n, 1, 0), layerRandn(r, c, 1, 0), layerRandn(r, c, 1, 0)
				wdx, wdres := append([]float32(nil), oldDX...), append([]float32(nil), oldDRes...)
				wdg, wdb := append([]float32(nil), oldDG...), append([]float32(nil), oldDB...)
				hg := tensor.BatchNormGrad{
					X: layerHostOp(x, n), DY: layerHostOp(gy, n), Mean: layerHostOp(wmean, k), InvStd: layerHostOp(winv, k),
					Gamma: layerHostOp(gamma, c), Training: !v.eval,
					DX: layerHostOp(wdx, n), DGamma: layerHostOp(wdg, c), DBeta: layerHostOp(wdb, c),
					AccDX: v.acc, AccDRes: v.acc, AccDGamma: v.acc, AccDBeta: v.acc,
				}
				ddx, ddres := layerDevOp(be, oldDX, off(1), n), layerDevOp(be, oldDRes, off(0), n)
				ddg, ddb := layerDevOp(be, oldDG, off(2), c), layerDevOp(be, oldDB, off(0), c)
				dg := tensor.BatchNormGrad{
					X: dx, DY: layerDevOp(be, gy, off(3), n), Mean: layerDevOp(be, wmean, off(0), k), InvStd: layerDevOp(be, winv, off(1), k),
					Gamma: da.Gamma, Training: !v.eval,
					DX: ddx, DGamma: ddg, DBeta: ddb,
					AccDX: v.acc, AccDRes: v.acc, AccDGamma: v.acc, AccDBeta: v.acc,
				}
				if v.relu {
					hg.Y, dg.Y = layerHostOp(wy, n), layerDevOp(be, wy, off(2), n)
				}
				if v.res {
					hg.DRes, dg.DRes = layerHostOp(wdres, n), ddres
				}
				cpu.BatchNormBackward(g, hg)
				be.BatchNormBackward(g, dg)
				layerClose(t, "DX", layerOut(be, ddx), wdx, 1e-4, 1e-4)
				layerClose(t, "DGamma", layerOut(be, ddg), wdg, 1e-4, 1e-4)
				layerClose(t, "DBeta", layerOut(be, ddb), wdb, 1e-4, 1e-4)
				if v.res {
					layerClose(t, "DRes", layerOut(be, ddres), wdres, 0, 0)
				}
			})
		}
	}
}

// TestBatchNormEmulated runs the BatchNorm kernels (batchnorm.cu) on the
// CPU emulator through the backend, against the CPU backend.
func TestBatchNormEmulated(t *testing.T) {
	onEmulator(t, testBatchNorm)
}

// TestBatchNormKernel runs the BatchNorm kernels on the GPU against the
// CPU backend, at three block sizes.
func TestBatchNormKernel(t *testing.T) {
	onGPU(t, testBatchNorm)
}
