package dist

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
)

// onRanks runs fn on every rank of a new in-process group of n and waits.
func onRanks(n int, fn func(c *Local)) {
	var wg sync.WaitGroup
	for _, c := range NewLocal(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(c)
		}()
	}
	wg.Wait()
}

func TestShardRows(t *testing.T) {
	for _, tc := range []struct{ n, size int }{{16, 2}, {7, 3}, {2, 4}, {0, 2}, {5, 1}} {
		var all []int
		for r := range tc.size {
			rows := ShardRows(tc.n, r, tc.size)
			if len(rows) != ShardLen(tc.n, r, tc.size) {
				t.Errorf("n %d size %d rank %d: %d rows, ShardLen %d", tc.n, tc.size, r, len(rows), ShardLen(tc.n, r, tc.size))
			}
			all = append(all, rows...)
		}
		slices.Sort(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("n %d size %d: the shards are not a partition of the rows: %v", tc.n, tc.size, all)
			}
		}
		if len(all) != tc.n {
			t.Errorf("n %d size %d: %d rows in all", tc.n, tc.size, len(all))
		}
	}
}

// TestLocalCollectives checks every collective of the in-process group on
// 1, 2 and 3 ranks, with values that reveal a wrong order or sum.
func TestLocalCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		errs := make([]error, n)
		onRanks(n, func(c *Local) {
			r := c.Rank()
			fail := func(err error) { errs[r] = errors.Join(errs[r], err) }
			v := []float32{float32(r + 1), float32(10 * (r + 1))}
			if err := c.AllReduce(v); err != nil {
				fail(err)
			}
			want := float32(n * (n + 1) / 2)
			if v[0] != want || v[1] != 10*want {
				fail(errors.New("AllReduce: wrong sum"))
			}
			d := []float64{float64(r)}
			if err := c.AllReduceFloat64(d); err != nil || d[0] != float64(n*(n-1)/2) {
				fail(errors.New("AllReduceFloat64: wrong sum"))
			}
			b := []byte{byte(r), byte(r)}
			if err := c.Broadcast(b, n-1); err != nil || b[0] != byte(n-1) {
				fail(errors.New("Broadcast: not the root's bytes"))
			}
			recv := make([]byte, n)
			if err := c.AllGather([]byte{byte(r)}, recv); err != nil {
				fail(err)
			}
			for i, x := range recv {
				if x != byte(i) {
					fail(errors.New("AllGather: not in rank order"))
				}
			}
			// Two requests in flight, waited in reverse order.
			a, bb := []float32{1}, []float32{2}
			qa, err1 := c.IAllReduce(a)
			qb, err2 := c.IAllReduce(bb)
			if err := errors.Join(err1, err2); err != nil {
				fail(err)
			} else {
				if err := qb.Wait(); err != nil || bb[0] != float32(2*n) {
					fail(errors.New("IAllReduce b: wrong sum"))
				}
				for {
					ok, err := qa.Test()
					if err != nil {
						fail(err)
						break
					}
					if ok {
						break
					}
				}
				if a[0] != float32(n) {
					fail(errors.New("IAllReduce a: wrong sum"))
				}
			}
			if err := c.AllGather([]byte{1}, make([]byte, n+1)); err == nil {
				fail(errors.New("AllGather accepted a receive buffer of the wrong length"))
			}
			if err := c.Barrier(); err != nil {
				fail(err)
			}
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("%d ranks, rank %d: %v", n, r, err)
			}
		}
	}
}

// TestLocalAbort: a rank's Abort releases the ranks waiting in a
// collective with ErrAborted.
func TestLocalAbort(t *testing.T) {
	errs := make([]error, 3)
	onRanks(3, func(c *Local) {
		if c.Rank() == 2 {
			c.Abort(1)
			return
		}
		errs[c.Rank()] = c.Barrier()
	})
	for r := range 2 {
		if !errors.Is(errs[r], ErrAborted) {
			t.Errorf("rank %d: %v, expected ErrAborted", r, errs[r])
		}
	}
}

// TestGather checks the forward value (the global rows in order) and the
// backward pass of Gather: each rank computes the same loss sum(w * G) of
// the gathered G, and its gradient must be the rows of w of its own
// samples (Gather is a copy, so this is its exact derivative).
func TestGather(t *testing.T) {
	for _, tc := range []struct{ n, size, width int }{{8, 2, 3}, {7, 3, 2}, {5, 1, 4}} {
		rng := rand.New(rand.NewPCG(1, 2))
		global := make([]float32, tc.n*tc.width)
		w := make([]float32, tc.n*tc.width)
		for i := range global {
			global[i], w[i] = rng.Float32(), rng.Float32()
		}
		errs := make([]error, tc.size)
		onRanks(tc.size, func(c *Local) {
			r := c.Rank()
			rows := ShardRows(tc.n, r, tc.size)
			x := autograd.NewVar(tensor.FromSlice(TakeRows(global, rows, tc.width), len(rows), tc.width), true)
			tp := autograd.NewTape()
			g, err := Gather(tp, c, x, tc.n)
			if err != nil {
				errs[r] = err
				return
			}
			if !slices.Equal(g.Value.Contiguous().Data(), global) {
				errs[r] = errors.New("gathered rows are not the global batch in order")
				return
			}
			l := autograd.SumAll(tp, autograd.Mul(tp, g, autograd.Const(tensor.FromSlice(w, tc.n, tc.width))))
			tp.Backward(l)
			if !slices.Equal(x.Grad.Contiguous().Data(), TakeRows(w, rows, tc.width)) {
				errs[r] = errors.New("the gradient is not this rank's rows of the incoming gradient")
			}
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("n %d, %d ranks, rank %d: %v", tc.n, tc.size, r, err)
			}
		}
	}
}

// TestReducer sums gradients over 3 ranks through the bucketed reducer
// with buckets small enough to make several: every rank must end with the
// sum, a gradient absent on every rank stays absent, and some buckets
// start during the backward pass.
func TestReducer(t *testing.T) {
	const ranks = 3
	sums := make([][][]float32, ranks)
	nilGrad := make([]bool, ranks)
	overlapped := make([]int, ranks)
	errs := make([]error, ranks)
	onRanks(ranks, func(c *Local) {
		r := c.Rank()
		rng := rand.New(rand.NewPCG(7, 7)) // same parameters on every rank
		var params []*autograd.Var
		for i := range 6 {
			t := tensor.New(3 + i)
			for j, d := 0, t.Data(); j < len(d); j++ {
				d[j] = rng.Float32()
			}
			params = append(params, autograd.Param(t, ""))
		}
		unused := autograd.Param(tensor.New(2), "unused")
		params = append(params, unused)
		red := NewReducer(c, params, 16) // 4 values per bucket at most
		tp := autograd.NewTape()
		tp.TrackInputs()
		// A chain so that the parameters complete one after the other:
		// l = sum_i (i+1+rank) * sum(p_i * p_i).
		var l *autograd.Var
		for i, p := range params[:6] {
			term := autograd.MulScalar(tp, autograd.SumAll(tp, autograd.Mul(tp, p, p)), float32(i+1+r))
			if l == nil {
				l = term
			} else {
				l = autograd.Add(tp, l, term)
			}
		}
		if err := red.Backward(tp, l); err != nil {
			errs[r] = err
			return
		}
		for _, p := range params[:6] {
			sums[r] = append(sums[r], slices.Clone(p.Grad.Data()))
		}
		nilGrad[r] = unused.Grad == nil
		overlapped[r] = red.Overlapped
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 6 {
		for j := 0; j < 3+i; j++ {
			v := rng.Float32()
			var want float32 // d/dp of sum_r (i+1+r) p^2, summed in rank order
			for r := range ranks {
				want += float32(2 * v * float32(i+1+r)) // rounded as the ranks round it, never fused
			}
			for r := range ranks {
				if got := sums[r][i][j]; got != want {
					t.Fatalf("rank %d, parameter %d[%d]: gradient %v, expected the sum %v", r, i, j, got, want)
				}
			}
		}
	}
	for r := range ranks {
		if !nilGrad[r] {
			t.Errorf("rank %d: an unused parameter got a gradient", r)
		}
		if overlapped[r] == 0 {
			t.Errorf("rank %d: no bucket started during the backward pass", r)
		}
	}
}

func TestAgree(t *testing.T) {
	errs := make([]error, 3)
	onRanks(3, func(c *Local) {
		h := uint64(42)
		if c.Rank() == 2 {
			h = 43
		}
		errs[c.Rank()] = Agree(c, "the model", h)
	})
	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d: no error although rank 2 differs", r)
		}
	}
	stop := make([]bool, 2)
	onRanks(2, func(c *Local) {
		stop[c.Rank()], _ = AnyTrue(c, c.Rank() == 1)
	})
	if !stop[0] || !stop[1] {
		t.Errorf("AnyTrue: %v, expected true on both ranks", stop)
	}
}

// fixedPeer is rank 0 of a group of two whose rank 1 always sends the
// same rows: AllGather is all Gather needs.
type fixedPeer struct {
	Single
	rows []byte
}

func (fixedPeer) Size() int { return 2 }

func (p fixedPeer) AllGather(send, recv []byte) error {
	copy(recv, send)
	copy(recv[len(send):], p.rows)
	return nil
}

// TestGatherGradcheck checks Gather on rank 0 of two against float64
// central differences (gradcheck): the loss mixes the gathered rows of
// both ranks nonlinearly, and only rank 0's rows vary.
func TestGatherGradcheck(t *testing.T) {
	const n, width = 7, 3 // rank 0 holds rows 0, 2, 4, 6; rank 1 rows 1, 3, 5
	rng := rand.New(rand.NewPCG(3, 4))
	peerRows := make([]float32, 4*width) // padded to 4 rows, as GatherRowsHost sends
	for i := range peerRows[:3*width] {
		peerRows[i] = rng.Float32()*2 - 1
	}
	c := fixedPeer{rows: Float32Bytes(peerRows)}
	x := tensor.New(ShardLen(n, 0, 2), width)
	for i, d := 0, x.Data(); i < len(d); i++ {
		d[i] = rng.Float32()*2 - 1
	}
	w := tensor.New(n, width)
	for i, d := 0, w.Data(); i < len(d); i++ {
		d[i] = rng.Float32()*2 - 1
	}
	gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		g, err := Gather(tp, c, in[0], n)
		if err != nil {
			t.Fatal(err)
		}
		y := autograd.Mul(tp, g, autograd.Const(w))
		return autograd.SumAll(tp, autograd.Mul(tp, y, y))
	}, []*tensor.Tensor{x}, gradcheck.Options{})
}
