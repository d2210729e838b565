//go:build amd64 && !noasm

package gemm

import (
	"fmt"
	"os"

	"github.com/duel-ssl/duel/internal/cpu"
)

// tileBF16AMX is the tile kernel in AMX assembly (amx_amd64.s) on
// pointers.
//
//go:noescape
func tileBF16AMX(cfg *byte, steps int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, load int)

// tileAMX is the tile kernel on the AMX assembly, its arguments checked.
func tileAMX(cfg *[64]byte, steps int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, load int) {
	checkTileArgs(steps, a, lda, b, ldb, c, ldc)
	pa, pb := &c[0], &c[0] // never read when steps is 0
	if steps > 0 {
		pa, pb = &a[0], &b[0]
	}
	tileBF16AMX(&cfg[0], steps, pa, lda, pb, ldb, &c[0], ldc, load)
}

// amxKernel is the tile kernel the bfloat16 products run on: the AMX
// assembly when DUEL_ISA=amx asked for it (cpu.AllowAMX), the CPU has the
// conversions' instructions too and Linux granted the tile data state;
// else nil (the AVX-512 kernels run).
var amxKernel = chooseAMX(cpu.AllowAMX())

// chooseAMX returns the AMX tile kernel when allowed and the operating
// system grants the tile state, printing once on stderr why not when it
// was allowed and refused.
func chooseAMX(allowed bool) tileKernel {
	if !allowed || !bf16Vector {
		return nil
	}
	if err := requestAMX(); err != nil {
		fmt.Fprintf(os.Stderr, "duel: DUEL_ISA=amx: %v; the bfloat16 products run on avx512bf16\n", err)
		return nil
	}
	return tileAMX
}

// amxUsable reports whether this process can run the AMX tile kernel,
// whatever DUEL_ISA says (the tests run it wherever it can run): the CPU
// and the operating system have the tiles and Linux grants them.
func amxUsable() bool {
	d := cpu.Detect()
	return d.Max() == cpu.AMX && bf16Vector && requestAMX() == nil
}
