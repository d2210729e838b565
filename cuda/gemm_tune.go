package cuda

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/tensor"
)

// Under TCAuto on GPUs of compute capability 8.0 and later the backend
// measures, on its own products, which kernel multiplies a shape fastest
// on the GPU at hand, instead of trusting figures from another card (the
// timed candidates differ by a few percent on an H200: bench/RESULTS.md,
// "NVIDIA H200"; gemm_wgp_*, products below 1024 and any kernel on an
// A100 are not timed yet):
//
//   - The candidates are the kernel gemmFor gives the product (the
//     reference: on 9.0 gemm_wg_* from wgAutoMin on, else gemm_tc3_tf32
//     or gemm_tc2_bf16 where the device gives them their shared memory,
//     else gemm_tf32 or gemm_bf16), and on 9.0 gemm_wg_*, gemm_wgs_* and
//     gemm_wgp_*, elsewhere the other mma.sync kernels
//     (tuneCandidates), those the device gives their shared memory. They
//     accumulate in the same order, so their products are equal bit for
//     bit on the emulator (TestTCKernelsSameBits).
//   - The first product of a shape is the cross-check: every candidate
//     multiplies the factors into scratch memory (beta 0), the products
//     come back to the host, and a candidate whose bits differ from the
//     reference's (a GPU that compiles it wrongly, or whose mma.sync and
//     wgmma round differently) is not run again for the shape, the reason
//     kept (GemmTune.Refused). The reference then runs the product itself.
//   - The next products of the shape take the candidates in turn,
//     GemmTuneSamples each, timed by events around each launch (the wall
//     clock on GPUs that finish their work before returning). The
//     product after them reads the times (waiting for the last) and the
//     candidate with the lowest median multiplies the shape from then on.
//
// Products below gemmTuneMin in M, N or K are not measured, nor those
// whose results exceed gemmTuneMaxBytes (the cross-check copies them to
// the host): they run the reference. DUEL_CUDA_TC_KERNEL=wg (or any other
// kernel) turns the measurement off.

// GemmTuneSamples is the number of timed products of each candidate that
// decide between the kernels of a shape (TCAuto on compute capability 8.0
// and later).
const GemmTuneSamples = 3

// gemmTuneMin is the smallest M, N and K of a product whose kernel is
// measured: smaller ones are too short for a launch's time to tell the
// kernels apart, and their shapes too many.
const gemmTuneMin = 256

// gemmTuneMaxBytes bounds the result (batch x M x N floats) of a product
// whose kernel is measured.
const gemmTuneMaxBytes = 256 << 20

// gemmTuneKinds are the candidates' kernels after the reference on
// compute capability 9.0.
var gemmTuneKinds = []TCKernel{TCWG, TCWGS, TCWGP}

// gemmTuneMaxCands is the most candidates a measurement has (on 9.0: the
// reference and gemmTuneKinds; elsewhere at most 3).
var gemmTuneMaxCands = 1 + len(gemmTuneKinds)

// gemmShape identifies the products measured together.
type gemmShape struct {
	prec           Precision
	m, n, k, batch int
	transA, transB bool
}

// gemmTune is the measurement of one shape.
type gemmTune struct {
	cands   []gemmChoice    // the candidates still running, the reference first
	refused []string        // the cross-check's failures
	checked bool            // the cross-check ran
	samples [][]gemmSample  // per candidate, the products timed
	issued  int             // products timed so far
	pick    int             // the candidate chosen, -1 until decided
	medians []time.Duration // per candidate, once decided
}

// gemmTuning is a backend's measurements, by shape, and the tests' hooks.
type gemmTuning struct {
	mu     sync.Mutex
	shapes map[gemmShape]*gemmTune
	// minSize replaces gemmTuneMin as the smallest M, N and K measured
	// (tests: 0 keeps gemmTuneMin), and anyCC measures on any compute
	// capability (tests: the emulator's 0).
	minSize int
	anyCC   bool
	// sampleTime, when set, replaces each timed product's measured time
	// (tests), and corrupt alters a candidate's product in the
	// cross-check (tests).
	sampleTime func(kernel string) time.Duration
	corrupt    func(kernel string, out []byte)
}

// gemmSample is one timed product: events on a *Device, else the wall
// clock.
type gemmSample struct {
	start, end *driver.Event
	wall       time.Duration
}

// GemmTune is what the backend measured for one shape of product
// (Backend.GemmTunes).
type GemmTune struct {
	Precision      Precision
	M, N, K, Batch int
	TransA, TransB bool
	// Reference is the kernel the product runs with when not measured
	// (gemmFor's), which the others are checked against.
	Reference string
	// Kernel is the kernel that multiplies the shape: the fastest
	// candidate once decided, else "" (still measuring).
	Kernel string
	// Medians is each candidate's median time, once decided (nil where
	// only the reference could run).
	Medians map[string]time.Duration
	// Refused lists the candidates whose products differed from the
	// reference's in the cross-check, with the first difference.
	Refused []string
}

// tunesGemm reports whether product g's kernel is measured (see above).
func (be *Backend) tunesGemm(g tensor.GemmArgs) bool {
	least := gemmTuneMin
	if be.tune.minSize > 0 {
		least = be.tune.minSize
	}
	return be.tc.kernel == TCAuto && (be.cc >= 80 || be.tune.anyCC) && (be.prec == TF32 || be.prec == BF16) &&
		min(g.M, g.N, g.K) >= least && int64(g.Batch)*int64(g.M)*int64(g.N)*4 <= gemmTuneMaxBytes
}

// tunedGemm runs product g with the kernel its shape's measurement gives
// (or with the candidate whose turn it is). Products of one backend are
// measured one at a time.
func (be *Backend) tunedGemm(g tensor.GemmArgs) {
	be.tune.mu.Lock()
	defer be.tune.mu.Unlock()
	t := be.gemmTuneOf(g)
	switch {
	case !t.checked:
		be.crossCheckGemm(g, t)
		be.gemmWith(g, t.cands[0])
	case t.pick >= 0:
		be.gemmWith(g, t.cands[t.pick])
	case t.issued == len(t.cands)*GemmTuneSamples:
		be.decideGemm(t)
		be.gemmWith(g, t.cands[t.pick])
	default:
		i := t.issued % len(t.cands)
		s := be.startSample()
		be.gemmWith(g, t.cands[i])
		be.stopSample(&s)
		if be.tune.sampleTime != nil {
			s.wall = be.tune.sampleTime(t.cands[i].name)
		}
		t.samples[i] = append(t.samples[i], s)
		t.issued++
	}
}

// gemmTuneOf returns the measurement of g's shape, starting it on the
// shape's first product; the caller holds be.tune.mu.
func (be *Backend) gemmTuneOf(g tensor.GemmArgs) *gemmTune {
	key := gemmShape{be.prec, g.M, g.N, g.K, g.Batch, g.TransA, g.TransB}
	if t, ok := be.tune.shapes[key]; ok {
		return t
	}
	t := &gemmTune{pick: -1, cands: be.tuneCandidates(g)}
	t.samples = make([][]gemmSample, len(t.cands))
	if len(t.cands) == 1 {
		t.checked, t.pick = true, 0
	}
	if be.tune.shapes == nil {
		be.tune.shapes = make(map[gemmShape]*gemmTune)
	}
	be.tune.shapes[key] = t
	return t
}

// tuneCandidates returns the kernels product g's measurement runs, the
// reference (gemmFor's) first: on compute capability 9.0 gemm_wg.cu's
// gemm_wg_*, gemm_wgs_* and gemm_wgp_* (gemmTuneKinds); on others the
// mma.sync kernels gemm_tc3_tf32, gemm_tc2_* and gemm_tf32 or gemm_bf16;
// those the device gives their shared memory. (The emulator's 0, in
// tests, takes 9.0's.)
func (be *Backend) tuneCandidates(g tensor.GemmArgs) []gemmChoice {
	cands := []gemmChoice{be.gemmFor(g)}
	add := func(c gemmChoice, ok bool) {
		if ok && !slices.ContainsFunc(cands, func(x gemmChoice) bool { return x.name == c.name }) {
			cands = append(cands, c)
		}
	}
	if be.cc == 90 || be.cc == 0 {
		for _, k := range gemmTuneKinds {
			c, i, ok := wgChoice(be.prec, k)
			add(c, ok && be.wgAllowed(c, i))
		}
		return cands
	}
	i, v1, v2, v3 := mmaKernels(be.prec)
	if be.prec == TF32 {
		add(v3, be.tc2Allowed(2, v3))
	}
	add(v2, be.tc2Allowed(i, v2))
	add(v1, true)
	return cands
}

// crossCheckGemm multiplies g's factors with every candidate into
// scratch memory (beta 0) and drops the candidates whose results differ
// from the first's bit for bit.
func (be *Backend) crossCheckGemm(g tensor.GemmArgs, t *gemmTune) {
	if len(t.cands) < 2 {
		t.checked = true
		return
	}
	n := g.Batch * g.M * g.N
	c := be.Alloc(n)
	defer be.Release(c)
	s := g
	s.Beta, s.C, s.OffC, s.LDC, s.StrideC = 0, c, 0, g.N, g.M*g.N
	ref, out := make([]byte, 4*n), make([]byte, 4*n)
	kept := []gemmChoice{t.cands[0]}
	for i, cand := range t.cands {
		be.gemmWith(s, cand)
		if i == 0 {
			be.read("Gemm", ref, be.ptr("Gemm", c, 0))
			continue
		}
		be.read("Gemm", out, be.ptr("Gemm", c, 0))
		if be.tune.corrupt != nil {
			be.tune.corrupt(cand.name, out)
		}
		if j := firstByteDiff(out, ref); j >= 0 {
			e := j / 4
			t.refused = append(t.refused, fmt.Sprintf("%s differs from %s at element %d (batch %d, row %d, column %d) of a %dx%dx%d product",
				cand.name, t.cands[0].name, e, e/(g.M*g.N), e%(g.M*g.N)/g.N, e%g.N, g.M, g.N, g.K))
			continue
		}
		kept = append(kept, cand)
	}
	t.cands, t.checked = kept, true // not before: a device error above leaves the check to the next product
	t.samples = t.samples[:len(kept)]
	if len(kept) == 1 {
		t.pick = 0
	}
}

// firstByteDiff returns the first index at which a and b (of equal
// lengths) differ, -1 where they are equal.
func firstByteDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// decideGemm reads the timed products (waiting for the last) and picks
// the candidate with the lowest median; a time that cannot be read is
// replaced by the wall clock of its launch.
func (be *Backend) decideGemm(t *gemmTune) {
	t.medians = make([]time.Duration, len(t.cands))
	for i, ss := range t.samples {
		d := make([]time.Duration, len(ss))
		for j := range ss {
			d[j] = be.readSample(&ss[j])
		}
		slices.Sort(d)
		t.medians[i] = d[(len(d)-1)/2]
	}
	t.pick = 0
	for i, m := range t.medians {
		if m < t.medians[t.pick] {
			t.pick = i
		}
	}
	t.samples = nil
}

// startSample marks the start of a timed product.
func (be *Backend) startSample() gemmSample {
	s := gemmSample{wall: -time.Duration(time.Now().UnixNano())}
	if d, ok := be.g.(*Device); ok {
		if ev, err := d.Record(); err == nil {
			s.start = ev
		}
	}
	return s
}

// stopSample marks the end of a timed product: an event after its
// launches on a *Device, else the wall clock once the GPU is done.
func (be *Backend) stopSample(s *gemmSample) {
	if d, ok := be.g.(*Device); ok && s.start != nil {
		if ev, err := d.Record(); err == nil {
			s.end = ev
		}
	} else {
		_ = be.g.Synchronize() // a fault is reported by the backend's next wait
	}
	s.wall += time.Duration(time.Now().UnixNano())
}

// readSample returns a timed product's device time (its wall clock
// without events, or where they cannot be read) and closes its events.
func (be *Backend) readSample(s *gemmSample) time.Duration {
	dt := s.wall
	if d, ok := be.g.(*Device); ok && s.start != nil && s.end != nil {
		if e, err := d.Elapsed(s.start, s.end); err == nil {
			dt = e
		}
	}
	for _, ev := range []*driver.Event{s.start, s.end} {
		if ev != nil {
			ev.Close()
		}
	}
	return dt
}

// GemmTunes returns what the backend measured of its products' kernels
// under TCAuto (compute capability 8.0 and later), one entry a shape, ordered by
// precision, M, N, K, batch and transpositions.
func (be *Backend) GemmTunes() []GemmTune {
	be.tune.mu.Lock()
	defer be.tune.mu.Unlock()
	out := make([]GemmTune, 0, len(be.tune.shapes))
	for k, t := range be.tune.shapes {
		r := GemmTune{Precision: k.prec, M: k.m, N: k.n, K: k.k, Batch: k.batch, TransA: k.transA, TransB: k.transB,
			Reference: t.cands[0].name, Refused: slices.Clone(t.refused)}
		if t.pick >= 0 {
			r.Kernel = t.cands[t.pick].name
		}
		if t.medians != nil {
			r.Medians = make(map[string]time.Duration, len(t.medians))
			for i, m := range t.medians {
				r.Medians[t.cands[i].name] = m
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b GemmTune) int {
		return cmp.Or(cmp.Compare(a.Precision, b.Precision), cmp.Compare(a.M, b.M), cmp.Compare(a.N, b.N), cmp.Compare(a.K, b.K),
			cmp.Compare(a.Batch, b.Batch), cmp.Compare(b2i(a.TransA), b2i(b.TransA)), cmp.Compare(b2i(a.TransB), b2i(b.TransB)))
	})
	return out
}

// settleGemm runs product g until its shape's kernel is decided (nothing
// when g is not measured), so that what is timed next is the chosen
// kernel, and returns the name of the kernel that multiplies g.
func (be *Backend) settleGemm(g tensor.GemmArgs) string {
	for range 2 + gemmTuneMaxCands*GemmTuneSamples {
		if name, ok := be.gemmTunedName(g); ok {
			return name
		}
		be.Gemm(g)
	}
	name, _ := be.gemmTunedName(g)
	return name
}

// gemmTunedName returns the name of the kernel that multiplies g, and
// false while g's shape is still measured.
func (be *Backend) gemmTunedName(g tensor.GemmArgs) (string, bool) {
	if !be.tunesGemm(g) {
		return be.gemmFor(g).name, true
	}
	be.tune.mu.Lock()
	defer be.tune.mu.Unlock()
	t := be.gemmTuneOf(g)
	if t.pick < 0 {
		return t.cands[0].name, false
	}
	return t.cands[t.pick].name, true
}

// KernelChoices describes, one line a shape, the products whose kernel
// the backend chose by measuring (GemmTunes: those with more than one
// candidate), e.g. "gemm tf32 256x2048x2048: gemm_wgs_tf32 (medians
// gemm_wgs_tf32 0.031 ms, gemm_wg_tf32 0.033 ms, ...)". A training run
// records them (config.json's ran.kernels).
func (be *Backend) KernelChoices() []string {
	var out []string
	for _, t := range be.GemmTunes() {
		if t.Medians == nil && t.Refused == nil {
			continue
		}
		shape := fmt.Sprintf("%dx%dx%d", t.M, t.N, t.K)
		if t.Batch > 1 {
			shape += fmt.Sprintf(" (batch %d)", t.Batch)
		}
		switch {
		case t.TransA && t.TransB:
			shape += " TT"
		case t.TransA:
			shape += " TN"
		case t.TransB:
			shape += " NT"
		}
		kernel := t.Kernel
		if kernel == "" {
			kernel = t.Reference + ", still measuring"
		}
		line := fmt.Sprintf("gemm %v %s: %s", t.Precision, shape, kernel)
		var parts []string
		if t.Medians != nil {
			parts = append(parts, "medians "+KernelTimes(t.Medians))
		}
		if t.Refused != nil {
			parts = append(parts, "refused: "+strings.Join(t.Refused, "; "))
		}
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, "; ") + ")"
		}
		out = append(out, line)
	}
	return out
}

// KernelTimes lists measured kernels, fastest first (ties by name), as
// "gemm_wgp_bf16 0.271 ms, gemm_wg_bf16 0.320 ms".
func KernelTimes(times map[string]time.Duration) string {
	names := slices.SortedFunc(maps.Keys(times), func(a, b string) int {
		return cmp.Or(cmp.Compare(times[a], times[b]), strings.Compare(a, b))
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.3f ms", n, times[n].Seconds()*1e3)
	}
	return strings.Join(parts, ", ")
}
