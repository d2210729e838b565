package gemm

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/wisdom"
)

// TestConfigure checks which configuration a wisdom entry gives: the tuned
// one only for a valid entry of the same ISA level, else the derived one.
func TestConfigure(t *testing.T) {
	best := available[0]
	isa := best.name
	if r, _ := rank(isa); r == 2 {
		isa = "avx512"
	}
	b := best.blocking
	for _, tc := range []struct {
		name   string
		entry  *tunedEntry
		source string
		mc     int
	}{
		{"no entry", nil, "derived", b.mc},
		{"tuned", &tunedEntry{Kernel: best.name, MC: 2 * best.mr, KC: b.kc, NC: b.nc, NS: b.ns, ISA: isa}, "tuned", 2 * best.mr},
		{"other level", &tunedEntry{Kernel: best.name, MC: 2 * best.mr, KC: b.kc, NC: b.nc, NS: b.ns, ISA: "other"}, "derived", b.mc},
		{"unknown kernel", &tunedEntry{Kernel: "sse9", MC: 2 * best.mr, KC: b.kc, NC: b.nc, NS: b.ns, ISA: isa}, "derived", b.mc},
		{"mc not a multiple of mr", &tunedEntry{Kernel: best.name, MC: 2*best.mr + 1, KC: b.kc, NC: b.nc, NS: b.ns, ISA: isa}, "derived", b.mc},
		{"nc not a multiple of ns", &tunedEntry{Kernel: best.name, MC: best.mr, KC: b.kc, NC: b.ns + best.nr, NS: b.ns, ISA: isa}, "derived", b.mc},
		{"zero kc", &tunedEntry{Kernel: best.name, MC: best.mr, KC: 0, NC: b.nc, NS: b.ns, ISA: isa}, "derived", b.mc},
		{"huge kc", &tunedEntry{Kernel: best.name, MC: best.mr, KC: 1 << 30, NC: b.nc, NS: b.ns, ISA: isa}, "derived", b.mc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			load := func() (tunedEntry, bool) {
				if tc.entry == nil {
					return tunedEntry{}, false
				}
				return *tc.entry, true
			}
			kn, tu := configure(available, isa, load)
			if tu.Source != tc.source || tu.MC != tc.mc || kn.mc != tc.mc {
				t.Errorf("configure = %s with mc %d (%+v), want %s with mc %d", kn.name, kn.mc, tu, tc.source, tc.mc)
			}
			if kn.name != tu.Kernel || kn.kc != tu.KC || kn.nc != tu.NC || kn.ns != tu.NS {
				t.Errorf("Tuning %+v does not describe the kernel %s %+v", tu, kn.name, kn.blocking)
			}
		})
	}
	if CurrentTuning().Kernel != ISA() {
		t.Errorf("CurrentTuning().Kernel = %q, ISA() = %q", CurrentTuning().Kernel, ISA())
	}
}

// TestTuneSaveLoad runs the tuner on tiny shapes, checks that its winner
// is a valid configuration, stores it in a wisdom file and reads it back
// as the next process would; a corrupt file falls back to the derived
// configuration. Nothing is timed against a threshold.
func TestTuneSaveLoad(t *testing.T) {
	t.Setenv(wisdom.Env, filepath.Join(t.TempDir(), "wisdom.json"))
	r := tune(TuneOptions{Threads: 2}, [][3]int{{30, 70, 50}, {17, 33, 65}}, 1)
	if r.CPU != cpu.Detect().Key() || r.Threads != 2 || len(r.Shapes) != 2 || r.Best.Source != "tuned" {
		t.Fatalf("result %+v", r)
	}
	if r.ISA != "generic" && len(r.Candidates) == 0 {
		t.Fatal("no candidate measured")
	}
	for _, c := range r.Candidates {
		if len(c.PerShape) != 2 || !(c.GFLOPS > 0) || math.IsInf(c.GFLOPS, 0) {
			t.Errorf("candidate %+v", c)
		}
	}
	path, replaced, err := SaveTuning(r)
	if err != nil || replaced != nil || path == "" {
		t.Fatalf("SaveTuning = %q, %v, %v", path, replaced, err)
	}
	kn, tu := configure(available, r.ISA, loadTuned)
	want := r.Best.Tuning
	if tu != want {
		t.Errorf("configuration read back %+v, want %+v", tu, want)
	}
	// The tuned kernel computes the same product as the reference.
	p := newProblem(rand.New(rand.NewPCG(15, 16)), false, true, 90, 70, 500, 1, 1, 0.5)
	checkProblem(t, kn, p)

	if err := os.WriteFile(path, []byte(`{"format": "duel-wisdom", "version": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, tu := configure(available, r.ISA, loadTuned); tu.Source != "derived" {
		t.Errorf("a foreign file gave %+v", tu)
	}
	if _, replaced, err := SaveTuning(r); err != nil || replaced == nil || !strings.Contains(replaced.Error(), "version 99") {
		t.Errorf("SaveTuning over a foreign file: replaced %v, err %v", replaced, err)
	}
}
