package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/floattest"
)

// specials returns n values of floattest.Specials with about one in
// twelve replaced by a huge one (|x| near 1e30) and, unless inf, the
// infinities by tiny ones (near 1e-30).
func specials(r *rand.Rand, n int, inf bool) []float32 {
	v := floattest.Specials(r, n)
	for i, x := range v {
		switch {
		case r.IntN(12) == 0:
			v[i] = float32(r.NormFloat64() * 1e30)
		case !inf && math.IsInf(float64(x), 0):
			v[i] = float32(r.NormFloat64() * 1e-30)
		}
	}
	return v
}

// loopCase is one step applied twice: by the exported step (the split over
// goroutines, the assembly and its Go tail) and by the Go loop alone.
type loopCase struct {
	name string
	// run applies the step to the state (parameter first, then its
	// buffers), through the exported function when ref is false.
	run func(state [][]float32, g []float32, ref bool)
	// buffers is the number of state slices beside the parameter.
	buffers int
}

// loopCases returns the steps of TestLoops and FuzzLoops, with constants
// drawn from r.
func loopCases(r *rand.Rand) []loopCase {
	lr, wd, mom := 0.01+r.Float64(), r.Float64()*1e-2, r.Float64()
	var cases []loopCase
	for _, a := range []SGD{
		{LR: lr, WeightDecay: wd},
		{LR: lr, WeightDecay: wd, Momentum: mom, First: true},
		{LR: lr, WeightDecay: wd, Momentum: mom, Dampening: 0.3},
		{LR: lr, Momentum: mom, Nesterov: true},
		{LR: lr, WeightDecay: wd, Momentum: mom, Nesterov: true, First: true},
	} {
		k := sgdLoop{wd: a.WeightDecay, scale: 1, lr: a.LR}
		k.setMomentum(a)
		buffers := 0
		if a.Momentum != 0 {
			buffers = 1
		}
		cases = append(cases, loopCase{"SGD", func(s [][]float32, g []float32, ref bool) {
			buf := append(s[1:], nil)[0]
			if ref {
				sgdGo(s[0], g, buf, &k)
				return
			}
			SGDStep(s[0], g, buf, a)
		}, buffers})
	}
	for _, clip := range []bool{false, true} {
		a := LARS{SGD: SGD{LR: lr, WeightDecay: wd, Momentum: mom}, Eta: 0.02, Eps: 1e-8, ClipLR: clip}
		cases = append(cases, loopCase{"LARS", func(s [][]float32, g []float32, ref bool) {
			if !ref {
				LARSStep(s[0], g, s[1], a)
				return
			}
			// The reference computes the same norms in order.
			k := sgdLoop{scale: 1, lr: a.LR}
			if pn, gn := Norm(s[0]), Norm(g); pn != 0 && gn != 0 {
				k.scale = a.Eta * pn / (gn + pn*a.WeightDecay + a.Eps)
				if clip {
					k.scale = math.Min(k.scale/a.LR, 1)
				}
				k.wd = a.WeightDecay
			}
			k.setMomentum(a.SGD)
			sgdGo(s[0], g, s[1], &k)
		}, 1})
	}
	for _, decoupled := range []bool{false, true} {
		a := Adam{LR: lr * 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: wd, Decoupled: decoupled, Step: 1 + r.Int64N(100)}
		cases = append(cases, loopCase{"Adam", func(s [][]float32, g []float32, ref bool) {
			if !ref {
				AdamStep(s[0], g, s[1], s[2], a)
				return
			}
			t := float64(a.Step)
			k := adamLoop{decay: 1, l2: a.WeightDecay, b1: a.Beta1, c1: 1 - a.Beta1, b2: a.Beta2, c2: 1 - a.Beta2,
				stepSize: a.LR / (1 - math.Pow(a.Beta1, t)), invSqrtBC2: 1 / math.Sqrt(1-math.Pow(a.Beta2, t)), eps: a.Eps}
			if decoupled {
				k.decay, k.l2 = 1-a.LR*a.WeightDecay, 0
			}
			adamUpdate(s[0], g, s[1], s[2], &k)
		}, 2})
	}
	m := r.Float64()
	cases = append(cases, loopCase{"EMA", func(s [][]float32, g []float32, ref bool) {
		if ref {
			emaGo(s[0], g, float32(m), float32(1-m))
			return
		}
		EMA(s[0], g, m)
	}, 0})
	return cases
}

// checkLoops runs every case of loopCases on n elements drawn from r and
// reports the first element whose bits differ from the Go loop's.
func checkLoops(t *testing.T, r *rand.Rand, n int, inf bool) {
	t.Helper()
	for _, c := range loopCases(r) {
		g := specials(r, n, inf)
		got := make([][]float32, 1+c.buffers)
		want := make([][]float32, 1+c.buffers)
		for i := range got {
			got[i] = specials(r, n, inf)
			if c.name == "Adam" && i == 2 {
				for j, x := range got[i] { // second moments are not negative
					got[i][j] = float32(math.Abs(float64(x)))
				}
			}
			want[i] = slices.Clone(got[i])
		}
		c.run(got, g, false)
		c.run(want, g, true)
		for i := range got {
			if j := floattest.FirstDiff(got[i], want[i]); j >= 0 {
				t.Errorf("%s n=%d, state %d: element %d = %g (%#x), Go loop %g (%#x)", c.name, n, i, j,
					got[i][j], math.Float32bits(got[i][j]), want[i][j], math.Float32bits(want[i][j]))
				return
			}
		}
	}
}

// TestLoops checks that the exported steps (split over goroutines for
// large parameters, in assembly where the CPU allows) store bit for bit
// what the Go loops store, on empty, odd, group-sized and split sizes,
// with zeros, negative zeros, tiny, huge and infinite values, in every
// momentum mode.
func TestLoops(t *testing.T) {
	t.Logf("assembly loops: %v", useAVX2)
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 100, 1027, 1 << 16, 3<<16 + 7} {
		checkLoops(t, r, n, true)
	}
}

// TestStepsMatchFormulas checks the steps against PyTorch's formulas
// written out directly in float64 on finite values, so that the loops'
// restructuring (one loop for SGD and LARS, constants precomputed) is held
// to the documented rules, not only to itself.
func TestStepsMatchFormulas(t *testing.T) {
	const n = 257
	r := rand.New(rand.NewPCG(9, 9))
	w0, g, b0 := specials(r, n, false), specials(r, n, false), specials(r, n, false)
	a := SGD{LR: 0.1, WeightDecay: 5e-4, Momentum: 0.9, Dampening: 0.1, Nesterov: true}
	w, buf := slices.Clone(w0), slices.Clone(b0)
	SGDStep(w, g, buf, a)
	for j := range w {
		d := float64(g[j]) + a.WeightDecay*float64(w0[j])
		v := a.Momentum*float64(b0[j]) + (1-a.Dampening)*d
		d += a.Momentum * v
		if wb, bb := float32(float64(w0[j])-a.LR*d), float32(v); w[j] != wb || buf[j] != bb {
			t.Fatalf("SGD element %d: w %g buf %g, formula %g %g", j, w[j], buf[j], wb, bb)
		}
	}
	ad := Adam{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true, Step: 3}
	m0 := specials(r, n, false)
	v0 := make([]float32, n)
	for j := range v0 {
		v0[j] = float32(math.Abs(r.NormFloat64()))
	}
	w, m, v := slices.Clone(w0), slices.Clone(m0), slices.Clone(v0)
	AdamStep(w, g, m, v, ad)
	for j := range w {
		x := float64(w0[j]) * (1 - ad.LR*ad.WeightDecay)
		mj := ad.Beta1*float64(m0[j]) + (1-ad.Beta1)*float64(g[j])
		vj := ad.Beta2*float64(v0[j]) + (1-ad.Beta2)*float64(g[j])*float64(g[j])
		den := math.Sqrt(vj)/math.Sqrt(1-math.Pow(ad.Beta2, 3)) + ad.Eps
		want := x - ad.LR/(1-math.Pow(ad.Beta1, 3))*mj/den
		if math.Abs(float64(w[j])-want) > 1e-6*math.Max(1, math.Abs(want)) || m[j] != float32(mj) || v[j] != float32(vj) {
			t.Fatalf("AdamW element %d: w %g m %g v %g, formula %g %g %g", j, w[j], m[j], v[j], want, float32(mj), float32(vj))
		}
	}
}

// TestZero checks Zero on empty, small and split lengths.
func TestZero(t *testing.T) {
	for _, n := range []int{0, 1, 9, 1<<16 + 3} {
		x := make([]float32, n)
		for i := range x {
			x[i] = 1
		}
		Zero(x)
		if i := slices.IndexFunc(x, func(v float32) bool { return v != 0 }); i >= 0 {
			t.Errorf("n=%d: element %d = %g after Zero", n, i, x[i])
		}
	}
}

// FuzzLoops holds the exported steps to the Go loops on fuzzed sizes and
// seeds.
func FuzzLoops(f *testing.F) {
	f.Add(uint16(0), uint64(1), false)
	f.Add(uint16(13), uint64(2), true)
	f.Add(uint16(4099), uint64(3), true)
	f.Fuzz(func(t *testing.T, n uint16, seed uint64, inf bool) {
		checkLoops(t, rand.New(rand.NewPCG(seed, uint64(n))), int(n), inf)
	})
}

// BenchmarkSGDStep times SGD with momentum and weight decay on a
// ResNet-18-sized parameter (11.2M elements) beside the Go loop on one
// goroutine (the step before the assembly and the split): metric x_go is
// the ratio.
func BenchmarkSGDStep(b *testing.B) {
	const n = 11_200_000
	r := rand.New(rand.NewPCG(1, 1))
	w, g, buf := specials(r, n, false), specials(r, n, false), specials(r, n, false)
	a := SGD{LR: 0.1, WeightDecay: 5e-4, Momentum: 0.9}
	k := sgdLoop{wd: a.WeightDecay, scale: 1, lr: a.LR}
	k.setMomentum(a)
	b.SetBytes(n * 4 * 5)
	ref := timeLoop(b.N, func() { sgdGo(w, g, buf, &k) })
	b.ResetTimer()
	for range b.N {
		SGDStep(w, g, buf, a)
	}
	b.StopTimer()
	b.ReportMetric(ref/b.Elapsed().Seconds(), "x_go")
}

// BenchmarkEMA times EMA on 11.2M elements beside the Go loop on one
// goroutine (metric x_go).
func BenchmarkEMA(b *testing.B) {
	const n = 11_200_000
	r := rand.New(rand.NewPCG(2, 2))
	tg, on := specials(r, n, false), specials(r, n, false)
	b.SetBytes(n * 4 * 3)
	ref := timeLoop(b.N, func() { emaGo(tg, on, 0.99, 0.01) })
	b.ResetTimer()
	for range b.N {
		EMA(tg, on, 0.99)
	}
	b.StopTimer()
	b.ReportMetric(ref/b.Elapsed().Seconds(), "x_go")
}

// BenchmarkAdamStep times AdamW on 11.2M elements beside the Go loop on
// one goroutine (metric x_go).
func BenchmarkAdamStep(b *testing.B) {
	const n = 11_200_000
	r := rand.New(rand.NewPCG(3, 3))
	w, g, m, v := specials(r, n, false), specials(r, n, false), specials(r, n, false), make([]float32, n)
	a := Adam{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true, Step: 10}
	k := adamLoop{decay: 1 - a.LR*a.WeightDecay, b1: a.Beta1, c1: 1 - a.Beta1, b2: a.Beta2, c2: 1 - a.Beta2,
		stepSize: a.LR / (1 - math.Pow(a.Beta1, 10)), invSqrtBC2: 1 / math.Sqrt(1-math.Pow(a.Beta2, 10)), eps: a.Eps}
	b.SetBytes(n * 4 * 7)
	ref := timeLoop(b.N, func() { adamUpdate(w, g, m, v, &k) })
	b.ResetTimer()
	for range b.N {
		AdamStep(w, g, m, v, a)
	}
	b.StopTimer()
	b.ReportMetric(ref/b.Elapsed().Seconds(), "x_go")
}

// timeLoop returns the seconds n calls of f take.
func timeLoop(n int, f func()) float64 {
	start := time.Now()
	for range n {
		f()
	}
	return time.Since(start).Seconds()
}
