//go:build amd64 && !noasm

package conv

import (
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// gatherRows16 is gatherRows in AVX assembly (gather_amd64.s): per row,
// two 32-byte loads at src + 4*(c*cs + tabs[t].off), ANDed with the tap's
// mask, stored to dst.
//
//go:noescape
func gatherRows16(dst, src *float32, cs int, tabs *patchTap, ntap, t0, rows int)

// gatherFast reports whether gatherRows16 runs on this CPU.
func gatherFast() bool { return cpu.AllowAVX2() }

// gatherRowsAsm runs gatherRows16 and reports true, or reports false when
// the CPU lacks AVX2 or there is nothing to gather.
func gatherRowsAsm(dst, x []float32, start, cs int, tabs []patchTap, t0, rows int) bool {
	if !gatherFast() || rows <= 0 || len(tabs) == 0 {
		return rows <= 0
	}
	_ = dst[rows*patchPanel-1]
	_ = x[start]
	gatherRows16(&dst[0], &x[start], cs, &tabs[0], len(tabs), t0, rows)
	return true
}

// The assembly reads patchTap's fields at fixed offsets.
var _ = [1]struct{}{}[unsafe.Offsetof(patchTap{}.mask)-8]
var _ = [1]struct{}{}[unsafe.Sizeof(patchTap{})-72]

// transposeGather16 is transposeGather in AVX assembly (gather_amd64.s):
// per 8 positions, the 16 rows' 8 values loaded and masked, two 8x8
// transposes, 8 panel rows stored.
//
//go:noescape
func transposeGather16(dst *float32, rows *[patchPanel]*float32, masks *[patchPanel]*uint32, n8 int)

// transposeGatherAsm runs transposeGather16 and reports true, or reports
// false when the CPU lacks AVX2.
func transposeGatherAsm(dst []float32, rows *[patchPanel]*float32, masks *[patchPanel]*uint32, n int) bool {
	if !gatherFast() {
		return false
	}
	transposeGather16(&dst[0], rows, masks, n/patchBlock)
	return true
}
