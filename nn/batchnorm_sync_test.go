package nn

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/duel-ssl/duel/autograd"
)

// sumGroup is an in-process all-reduce for n goroutines: each call blocks
// until all n have contributed, then every caller gets the sum (taken in
// rank order).
type sumGroup struct {
	n     int
	mu    sync.Mutex
	cond  *sync.Cond
	parts [][]float32
	gen   int
	out   []float32
}

func newSumGroup(n int) *sumGroup {
	g := &sumGroup{n: n, parts: make([][]float32, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// sync returns rank's SyncFunc.
func (g *sumGroup) sync(rank int) SyncFunc {
	return func(buf []float32) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		gen := g.gen
		g.parts[rank] = append([]float32(nil), buf...)
		arrived := 0
		for _, p := range g.parts {
			if p != nil {
				arrived++
			}
		}
		if arrived == g.n {
			g.out = make([]float32, len(buf))
			for _, p := range g.parts {
				for i, v := range p {
					g.out[i] += v
				}
			}
			clear(g.parts)
			g.gen++
			g.cond.Broadcast()
		} else {
			for g.gen == gen {
				g.cond.Wait()
			}
		}
		copy(buf, g.out)
		return nil
	}
}

// TestSyncBatchNormMatchesWholeBatch: two processes (goroutines) each
// normalising half of a batch with a synchronised BatchNorm give the
// output, input gradient and running statistics of one BatchNorm over
// the whole batch, with ReLU and a residual fused as in a ResNet block,
// and the parameter gradients summed over the two are the whole batch's.
func TestSyncBatchNormMatchesWholeBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	const n, c = 8, 3
	x := randTensor(r, n, c, 3, 2)
	res := randTensor(r, n, c, 3, 2)
	w := randTensor(r, n, c, 3, 2) // the loss is sum(w * y)
	ref := NewBatchNorm2d(c)
	NormalInit(ref.Weight.Value, 1, r)
	run := func(bn *BatchNorm, lo, hi int) (y, dx []float32, dg, db []float32) {
		xv := autograd.NewVar(x.Slice(0, lo, hi).Contiguous(), true)
		rv := autograd.NewVar(res.Slice(0, lo, hi).Contiguous(), false)
		tp := autograd.NewTape()
		out := bn.ForwardAddReLU(tp, xv, rv)
		l := autograd.SumAll(tp, autograd.Mul(tp, out, autograd.Const(w.Slice(0, lo, hi).Contiguous())))
		tp.Backward(l)
		return out.Value.Contiguous().Data(), xv.Grad.Data(), bn.Weight.Grad.Data(), bn.Bias.Grad.Data()
	}
	wantY, wantDX, wantDG, wantDB := run(ref, 0, n)
	g := newSumGroup(2)
	type result struct{ y, dx, dg, db, rm, rv []float32 }
	got := make([]result, 2)
	inRanks(2, func(rank int) {
		bn := NewBatchNorm2d(c)
		copy(bn.Weight.Value.Data(), ref.Weight.Value.Data())
		bn.Sync = g.sync(rank)
		y, dx, dg, db := run(bn, rank*n/2, (rank+1)*n/2)
		got[rank] = result{y, dx, dg, db, bn.RunningMean.Tensor.Data(), bn.RunningVar.Tensor.Data()}
	})
	close := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 2e-5*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%s[%d] = %v, whole batch %v", what, i, got[i], want[i])
			}
		}
	}
	half := len(wantY) / 2
	for rank := range 2 {
		close("y", got[rank].y, wantY[rank*half:(rank+1)*half])
		close("dx", got[rank].dx, wantDX[rank*half:(rank+1)*half])
		close("running_mean", got[rank].rm, ref.RunningMean.Tensor.Data())
		close("running_var", got[rank].rv, ref.RunningVar.Tensor.Data())
	}
	sum := func(a, b []float32) []float32 {
		out := make([]float32, len(a))
		for i := range a {
			out[i] = a[i] + b[i]
		}
		return out
	}
	close("weight gradient (summed)", sum(got[0].dg, got[1].dg), wantDG)
	close("bias gradient (summed)", sum(got[0].db, got[1].db), wantDB)
}

// TestSyncBatchNormChannelMajor: the synchronised pass keeps a
// channel-major input's layout, as the fused pass does.
func TestSyncBatchNormChannelMajor(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	x := randTensor(r, 4, 3, 2, 2)
	cm := x.Permute(1, 0, 2, 3).Contiguous().Permute(1, 0, 2, 3)
	bn := NewBatchNorm2d(3)
	bn.Sync = func([]float32) error { return nil }
	y := bn.Forward(nil, autograd.NewVar(cm, false))
	if _, isCM := densePlanes(y.Value); !isCM {
		t.Errorf("output layout is not channel-major")
	}
	ref := NewBatchNorm2d(3).Forward(nil, autograd.NewVar(x, false))
	a, b := y.Value.Contiguous().Data(), ref.Value.Contiguous().Data()
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-5 {
			t.Fatalf("element %d: %v, plain BatchNorm %v", i, a[i], b[i])
		}
	}
}

// TestSyncBatchNormLargeMean: two processes normalising halves of a batch
// whose mean is large against its spread (1000 ± 0.01) give the whole
// batch's output and input gradient. E[x²] - E[x]² in float32 would lose
// the variance entirely here (x² ≈ 1e6, whose float32 spacing is 0.06,
// against a variance of 1e-4); the two-pass variance keeps it.
func TestSyncBatchNormLargeMean(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	const n, c = 8, 2
	x := randTensor(r, n, c, 2, 2)
	for i, v := range x.Data() {
		x.Data()[i] = 1000 + 0.01*v
	}
	w := randTensor(r, n, c, 2, 2)
	run := func(bn *BatchNorm, lo, hi int) (y, dx []float32) {
		xv := autograd.NewVar(x.Slice(0, lo, hi).Contiguous(), true)
		tp := autograd.NewTape()
		out := bn.Forward(tp, xv)
		tp.Backward(autograd.SumAll(tp, autograd.Mul(tp, out, autograd.Const(w.Slice(0, lo, hi).Contiguous()))))
		return out.Value.Contiguous().Data(), xv.Grad.Data()
	}
	wantY, wantDX := run(NewBatchNorm2d(c), 0, n)
	g := newSumGroup(2)
	got := make([][2][]float32, 2)
	inRanks(2, func(rank int) {
		bn := NewBatchNorm2d(c)
		bn.Sync = g.sync(rank)
		y, dx := run(bn, rank*n/2, (rank+1)*n/2)
		got[rank] = [2][]float32{y, dx}
	})
	half := len(wantY) / 2
	for rank := range 2 {
		for k, want := range [][]float32{wantY[rank*half : (rank+1)*half], wantDX[rank*half : (rank+1)*half]} {
			scale := 0.0
			for _, v := range want {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for i, v := range got[rank][k] {
				if d := math.Abs(float64(v - want[i])); d > 1e-2*scale || math.IsNaN(float64(v)) {
					t.Fatalf("rank %d, %s[%d] = %v, whole batch %v", rank, []string{"y", "dx"}[k], i, v, want[i])
				}
			}
		}
	}
}

// inRanks runs f(rank) for ranks goroutines at once, as processes of a
// synchronised group, and waits for them.
func inRanks(ranks int, f func(rank int)) {
	var wg sync.WaitGroup
	for rank := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(rank)
		}()
	}
	wg.Wait()
}
