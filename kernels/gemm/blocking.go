package gemm

import "github.com/duel-ssl/duel/internal/cpu"

// hardware is what the blocking and the choice of tile depend on: the
// cache sizes of one core (bytes) and the number of 512-bit FMAs a core
// starts per cycle.
type hardware struct {
	l1d, l2, l3 int
	fma512      int
}

// Assumed when the CPU does not say (zero in cpu.Info): small caches, so
// that the blocks fit everywhere, and one 512-bit FMA per cycle.
const (
	defaultL1D = 32 << 10
	defaultL2  = 512 << 10
	defaultL3  = 8 << 20
)

// hardwareOf reads what the blocking needs from internal/cpu, with the
// defaults above for what is unknown.
func hardwareOf(d *cpu.Info) hardware {
	hw := hardware{l1d: d.L1D, l2: d.L2, l3: d.L3, fma512: d.FMA512Units}
	if hw.l1d <= 0 {
		hw.l1d = defaultL1D
	}
	if hw.l2 <= 0 {
		hw.l2 = defaultL2
	}
	if hw.l3 <= 0 {
		hw.l3 = defaultL3
	}
	if hw.fma512 <= 0 {
		hw.fma512 = 1
	}
	return hw
}

// machine is this CPU as the blocking sees it, read once.
var machine = hardwareOf(cpu.Detect())

// blocking is the cache blocking of one kernel (see the package
// documentation, "Kernels and blocking").
type blocking struct {
	mc int // rows of op(A) per unit of work, packed together (an mc x kc block)
	kc int // depth of the packed panels: the mr x kc micro-panel of A stays in L1
	nc int // columns of op(B) packed together and shared by the threads (L3)
	ns int // columns of the kc x ns sub-block of op(B) that stays in L2 while a unit's A micro-panels sweep it
}

// Bounds of the derived blocking: kc below 64 makes the C tile's loads and
// stores count, above 512 gains nothing (measured flat from 240 to 512 on
// Zen 4 and Zen 5); nc above 4096 only grows the packed buffers.
const (
	minKC = 64
	maxKC = 512
	maxNC = 4096
)

// derive returns the blocking for an mr x nr register tile on hw, by the
// analytical model of BLIS (Low et al., 2016) applied to our kernels, which
// broadcast A and load vectors of B (BLIS's roles of A and B swapped):
//
//	kc: the mr x kc micro-panel of A fills half of L1d (the B micro-panels stream through the other half)
//	ns: the kc x ns sub-block of op(B) fills half of L2 (it is reused by every A micro-panel of a unit)
//	mc: the mc x kc packed block of A fills a quarter of L2 (it is re-read once per sub-block of B)
//	nc: the kc x nc packed block of op(B) fits in half of L3, at most maxNC columns
//
// each rounded down to a multiple of 16 (kc), nr (ns), mr (mc) or ns (nc).
func derive(mr, nr int, hw hardware) blocking {
	return deriveWithKC(mr, nr, min(maxKC, max(minKC, hw.l1d/2/(4*mr)/16*16)), hw)
}

// deriveWithKC is derive with kc given: the other blocks follow from it.
func deriveWithKC(mr, nr, kc int, hw hardware) blocking {
	ns := max(4*nr, hw.l2/2/(4*kc)/nr*nr)
	mc := max(4*mr, hw.l2/4/(4*kc)/mr*mr)
	nc := max(ns, min(maxNC, hw.l3/2/(4*kc))/ns*ns)
	return blocking{mc: mc, kc: kc, nc: nc, ns: ns}
}

// valid reports whether b can run kernel kn: positive blocks, mc a
// multiple of mr, ns a multiple of nr, nc a multiple of ns, kc at most
// maxKC*4 and nc at most 4*maxNC (bounds on the buffers a tuning file may
// ask for).
func (b blocking) valid(mr, nr int) bool {
	return b.mc > 0 && b.kc > 0 && b.nc > 0 && b.ns > 0 &&
		b.mc%mr == 0 && b.ns%nr == 0 && b.nc%b.ns == 0 &&
		b.kc <= 4*maxKC && b.nc <= 4*maxNC && b.mc <= 64*maxKC
}

// tileCycles is the modelled cost, in cycles, of one k step of an mr x nr
// tile of lanes-wide vectors on hw: its FMAs spread over the FMA pipes
// (fma512 per cycle for 512-bit vectors, two 256-bit ones per 512-bit
// unit otherwise), or its loads (nr/lanes vectors of B and mr broadcasts of
// A) over two load ports, whichever takes longer.
func tileCycles(mr, nr, lanes int, hw hardware) float64 {
	vecs := nr / lanes
	pipes := float64(hw.fma512)
	if lanes < 16 {
		pipes *= 2
	}
	return max(float64(mr*vecs)/pipes, float64(vecs+mr)/2)
}

// rowCost is the modelled cost of m rows of C with kernel kn, per column of
// C and k step: the number of mr-row tiles times their cycles, over nr.
func rowCost(kn *kernel, m int, hw hardware) float64 {
	return float64(ceilDiv(m, kn.mr)) * tileCycles(kn.mr, kn.nr, kn.lanes, hw) / float64(kn.nr)
}
