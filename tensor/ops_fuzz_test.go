package tensor

import (
	"math"
	"slices"
	"testing"
)

// byteReader hands out fuzz input bytes, then zeros.
type byteReader struct{ b []byte }

func (r *byteReader) next(n int) int {
	if len(r.b) == 0 || n <= 0 {
		return 0
	}
	v := int(r.b[0])
	r.b = r.b[1:]
	return v % n
}

// fuzzView builds a tensor of rank 0..4 from the input and applies views
// to it (permute, slice, expand of size-1 axes).
func fuzzView(r *byteReader, seed float32) *Tensor {
	nd := r.next(5)
	shape := make([]int, nd)
	for i := range shape {
		shape[i] = r.next(5) // 0..4
	}
	t := New(shape...)
	for i := range t.data {
		t.data[i] = seed + float32(i)*0.25
	}
	if nd > 0 {
		perm := make([]int, nd)
		for i := range perm {
			perm[i] = i
		}
		for i := nd - 1; i > 0; i-- {
			j := r.next(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		t = t.Permute(perm...)
		ax := r.next(nd)
		n := t.shape[ax]
		lo := r.next(n + 1)
		hi := lo + r.next(n-lo+1)
		t = t.Slice(ax, lo, hi)
	}
	return t
}

// naiveBroadcast returns the element of t read at index idx of the
// broadcast shape.
func naiveBroadcast(t *Tensor, idx []int) float64 {
	lead := len(idx) - len(t.shape)
	ti := make([]int, len(t.shape))
	for i := range ti {
		if t.shape[i] != 1 {
			ti[i] = idx[i+lead]
		}
	}
	return float64(t.At(ti...))
}

func eachIndex(shape []int, f func(idx []int)) {
	if numel(shape) == 0 {
		return
	}
	idx := make([]int, len(shape))
	for {
		f(idx)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// FuzzBroadcastViews checks broadcasting binary ops, SumTo and reductions
// on arbitrary views against element-by-element definitions.
func FuzzBroadcastViews(f *testing.F) {
	f.Add([]byte{2, 3, 4, 1, 0, 1, 0, 3, 2, 1, 1, 0, 5})
	f.Add([]byte{4, 2, 3, 4, 1, 3, 2, 1, 0, 1, 2, 9, 9, 9})
	f.Add([]byte{0, 1, 1})
	f.Add([]byte{3, 0, 2, 2, 1, 1, 1, 7, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		a := fuzzView(r, 1)
		// b: a's shape with some axes set to 1 and some leading ones dropped.
		bs := cloneInts(a.shape)
		for i := range bs {
			if r.next(2) == 0 {
				bs[i] = 1
			}
		}
		bs = bs[r.next(len(bs)+1):]
		b := New(bs...)
		for i := range b.data {
			b.data[i] = 0.5 - float32(i)
		}
		if r.next(2) == 0 && len(bs) >= 2 {
			b = b.Transpose(0, len(bs)-1).Contiguous().Transpose(0, len(bs)-1)
		}
		shape, err := BroadcastShapes(a.shape, b.shape)
		if err != nil {
			t.Fatalf("BroadcastShapes(%v, %v): %v", a.shape, b.shape, err)
		}
		for _, op := range []struct {
			name string
			f    func(a, b *Tensor) *Tensor
			g    func(x, y float64) float64
		}{
			{"Add", Add, func(x, y float64) float64 { return x + y }},
			{"Sub", Sub, func(x, y float64) float64 { return x - y }},
			{"Mul", Mul, func(x, y float64) float64 { return x * y }},
			{"Maximum", Maximum, math.Max},
		} {
			got := op.f(a, b)
			if !slices.Equal(got.shape, shape) {
				t.Fatalf("%s(%v, %v) has shape %v, want %v", op.name, a.shape, b.shape, got.shape, shape)
			}
			eachIndex(shape, func(idx []int) {
				want := float32(op.g(naiveBroadcast(a, idx), naiveBroadcast(b, idx)))
				if g := got.At(idx...); g != want {
					t.Fatalf("%s(%v strides %v, %v strides %v) at %v = %v, want %v", op.name, a.shape, a.strides, b.shape, b.strides, idx, g, want)
				}
			})
		}
		// SumTo of the broadcast sum back to b's shape.
		sum := Add(a, b)
		st := SumTo(sum, b.shape)
		want := make([]float64, numel(b.shape))
		lead := len(shape) - len(b.shape)
		eachIndex(shape, func(idx []int) {
			j := 0
			for i, d := range b.shape {
				v := 0
				if d != 1 {
					v = idx[i+lead]
				}
				j = j*d + v
			}
			want[j] += float64(sum.At(idx...))
		})
		for i, v := range vals(st) {
			if math.Abs(float64(v)-want[i]) > 1e-4*(1+math.Abs(want[i])) {
				t.Fatalf("SumTo(%v -> %v) element %d = %v, want %v", shape, b.shape, i, v, want[i])
			}
		}
		// Reductions along every axis of the view a.
		for ax := range a.shape {
			s, m := Sum(a, ax, true), Max(a, ax, true)
			eachIndex(s.shape, func(idx []int) {
				full := cloneInts(idx)
				acc, mx := 0.0, math.Inf(-1)
				for k := 0; k < a.shape[ax]; k++ {
					full[ax] = k
					v := float64(a.At(full...))
					acc += v
					mx = math.Max(mx, v)
				}
				if g := float64(s.At(idx...)); math.Abs(g-acc) > 1e-5*(1+math.Abs(acc)) {
					t.Fatalf("Sum(%v strides %v, axis %d) at %v = %v, want %v", a.shape, a.strides, ax, idx, g, acc)
				}
				if g := float64(m.At(idx...)); g != float64(float32(mx)) {
					t.Fatalf("Max(%v strides %v, axis %d) at %v = %v, want %v", a.shape, a.strides, ax, idx, g, mx)
				}
			})
		}
	})
}
