package gemm

import (
	"fmt"
	"os"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// Tuning is the configuration Sgemm runs with: the micro-kernel, its cache
// blocking (see the package documentation), and where they come from:
// "derived" from the caches of the CPU, or "tuned" (measured by Tune on
// this CPU and read from the wisdom file).
type Tuning struct {
	Kernel string `json:"kernel"` // "avx512", "avx2", "neon" or "generic"
	MC     int    `json:"mc"`
	KC     int    `json:"kc"`
	NC     int    `json:"nc"`
	NS     int    `json:"ns"`
	Source string `json:"source"` // "derived" or "tuned"
}

// WisdomEntry is the name of SGEMM's entry in the wisdom file
// (internal/wisdom).
const WisdomEntry = "gemm.sgemm"

// tunedEntry is SGEMM's entry in the wisdom file: the winner of Tune and
// what it was measured against.
type tunedEntry struct {
	Kernel        string   `json:"kernel"`
	MC            int      `json:"mc"`
	KC            int      `json:"kc"`
	NC            int      `json:"nc"`
	NS            int      `json:"ns"`
	ISA           string   `json:"isa"`     // the level (cpu.ISA) it was tuned at; applied only at the same level
	Threads       int      `json:"threads"` // threads it was measured on
	GFLOPS        float64  `json:"gflops"`  // geometric mean over Shapes, fastest calls
	DerivedGFLOPS float64  `json:"derived_gflops"`
	Shapes        [][3]int `json:"shapes"`
	Date          string   `json:"date"`
}

// active is the kernel Sgemm uses and tuning what it is made of: the best
// kernel available at the level internal/cpu decides (cpu.ISA, which reads
// DUEL_ISA) with the blocking derived from the caches, or the tuned one
// from the wisdom file when it has an entry for this CPU and level. Both
// are set once, at package initialisation.
var active, tuning = configure(available, cpu.ISA().String(), loadTuned)

// CurrentTuning returns the configuration Sgemm runs with.
func CurrentTuning() Tuning { return tuning }

// loadTuned reads SGEMM's entry for this CPU from the wisdom file. A file
// that cannot be used is reported in one line on stderr.
func loadTuned() (tunedEntry, bool) {
	var e tunedEntry
	found, _, err := wisdom.Load(cpu.Detect().Key(), WisdomEntry, &e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: %v; SGEMM uses the blocking derived from the caches\n", err)
		return e, false
	}
	return e, found
}

// configure picks the kernel for the level isa among ks and its blocking:
// the tuned entry load returns when there is one for this level that ks
// can run, else the derived blocking. An entry that names an unknown
// kernel or an unusable blocking is reported on stderr and ignored.
func configure(ks []*kernel, isa string, load func() (tunedEntry, bool)) (*kernel, Tuning) {
	kn := choose(ks, isa)
	derived := tuningOf(kn, "derived")
	e, ok := load()
	if !ok || e.ISA != isa {
		return kn, derived
	}
	tk, err := e.kernel(ks)
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: wisdom entry %s for this CPU: %v; SGEMM uses the blocking derived from the caches\n", WisdomEntry, err)
		return kn, derived
	}
	return tk, tuningOf(tk, "tuned")
}

// kernel returns the kernel of ks that e names, with e's blocking.
func (e tunedEntry) kernel(ks []*kernel) (*kernel, error) {
	for _, k := range ks {
		if k.name != e.Kernel {
			continue
		}
		b := blocking{mc: e.MC, kc: e.KC, nc: e.NC, ns: e.NS}
		if !b.valid(k.mr, k.nr) {
			return nil, fmt.Errorf("blocking mc=%d kc=%d nc=%d ns=%d does not fit the %dx%d tile of %s", e.MC, e.KC, e.NC, e.NS, k.mr, k.nr, k.name)
		}
		return k.withBlocking(b), nil
	}
	return nil, fmt.Errorf("kernel %q is not available here", e.Kernel)
}

// tuningOf describes kernel kn.
func tuningOf(kn *kernel, source string) Tuning {
	return Tuning{Kernel: kn.name, MC: kn.mc, KC: kn.kc, NC: kn.nc, NS: kn.ns, Source: source}
}
