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
