package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"
)

// topEigenvectors returns the eigenvectors of the k largest eigenvalues of
// the symmetric d x d matrix a (row-major, both triangles), as the
// columns of a d x k matrix in decreasing order of eigenvalue, each with
// the sign that makes its largest-magnitude coefficient positive.
//
// It reduces a to tridiagonal T = Qᵀ a Q (LAPACK's dsytrd, blocked), takes
// all of T's eigenvalues without vectors (dsterf, O(d²)), finds the k
// vectors of T by inverse iteration with the eigenvalue as shift, each
// orthogonalised against the earlier ones of its cluster (eigenvalues
// within 10⁻³‖T‖, LAPACK's dstein rule), and maps them back through Q.
// gonum's EigenSym accumulates every rotation of the QR iteration into
// all d vectors (O(d³) scalar work: seconds at d = 512, minutes at 2048); this
// is O(d³) only in the blocked reduction. A vector whose residual
// ‖T z − λ z‖ does not reach 10⁻⁹‖T‖ after the iterations, which no test
// matrix has shown, makes it fall back to EigenSym.
func topEigenvectors(a []float64, d, k int) (*mat.Dense, error) {
	if k < 1 || k > d {
		return nil, fmt.Errorf("%d eigenvectors of a %dx%d matrix", k, d, d)
	}
	z, ok := tridiagonalTop(a, d, k)
	if ok {
		return z, nil
	}
	return eigenSymTop(a, d, k)
}

// eigenSymTop is topEigenvectors by gonum's EigenSym (all d vectors).
func eigenSymTop(a []float64, d, k int) (*mat.Dense, error) {
	sym := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			sym.SetSym(i, j, a[i*d+j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, fmt.Errorf("eigen-decomposition of the %dx%d matrix did not converge", d, d)
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	out := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ { // ascending: the last k, largest first
		for j := 0; j < d; j++ {
			out.Set(j, c, vecs.At(j, d-1-c))
		}
	}
	fixSigns(out)
	return out, nil
}

// fixSigns flips each column of m whose largest-magnitude coefficient
// (the first such) is negative.
func fixSigns(m *mat.Dense) {
	r, c := m.Dims()
	for col := 0; col < c; col++ {
		best, sign := 0.0, 1.0
		for j := 0; j < r; j++ {
			if v := m.At(j, col); math.Abs(v) > best {
				best, sign = math.Abs(v), math.Copysign(1, v)
			}
		}
		if sign < 0 {
			for j := 0; j < r; j++ {
				m.Set(j, col, -m.At(j, col))
			}
		}
	}
}

// tridiagonalTop is topEigenvectors' main path; ok is false when a
// vector did not converge.
func tridiagonalTop(a []float64, d, k int) (_ *mat.Dense, ok bool) {
	var impl gonum.Implementation
	q := append([]float64(nil), a...)
	diag, off, tau := make([]float64, d), make([]float64, max(d-1, 0)), make([]float64, max(d-1, 1))
	work := make([]float64, 1)
	impl.Dsytrd(blas.Lower, d, q, d, diag, off, tau, work, -1)
	work = make([]float64, max(int(work[0]), 1))
	impl.Dsytrd(blas.Lower, d, q, d, diag, off, tau, work, len(work))

	vals := append([]float64(nil), diag...)
	e := append([]float64(nil), off...)
	if !impl.Dsterf(d, vals, e) {
		return nil, false
	}
	// ‖T‖₁ (T is symmetric: the largest column sum).
	var tnorm float64
	for i := 0; i < d; i++ {
		s := math.Abs(diag[i])
		if i > 0 {
			s += math.Abs(off[i-1])
		}
		if i < d-1 {
			s += math.Abs(off[i])
		}
		tnorm = max(tnorm, s)
	}
	if tnorm == 0 {
		tnorm = 1 // the zero matrix: any orthonormal vectors
	}
	const eps = 0x1p-52
	ortol := 1e-3 * tnorm
	z := make([][]float64, k) // T's vectors
	dl, dd, du := make([]float64, d), make([]float64, d), make([]float64, d)
	r := rand.New(rand.NewPCG(0x70636121, uint64(d)))
	cluster := 0 // the first vector of the current cluster
	prev := math.Inf(1)
	for c := 0; c < k; c++ {
		lambda := vals[d-1-c]
		if prev-lambda > ortol {
			cluster = c
		} else if lambda >= prev-10*eps*math.Abs(prev) {
			// Equal eigenvalues: shift a little below the previous one so
			// that the solves differ (dstein's perturbation).
			lambda = prev - 10*eps*math.Max(math.Abs(prev), tnorm)
		}
		prev = lambda
		x := make([]float64, d)
		for i := range x {
			x[i] = r.Float64()*2 - 1
		}
		var converged bool
		for it := 0; it < 8 && !converged; it++ {
			copy(dl, off)
			copy(du, off)
			for i := range dd {
				dd[i] = diag[i] - lambda
			}
			if !impl.Dgtsv(d, 1, dl[:max(d-1, 0)], dd, du[:max(d-1, 0)], x, 1) {
				// A zero pivot: the shift is an eigenvalue to the last bit.
				lambda -= eps * tnorm
				for i := range x {
					x[i] = r.Float64()*2 - 1
				}
				continue
			}
			for _, y := range z[cluster:c] {
				floats.AddScaled(x, -floats.Dot(x, y), y)
			}
			normalize(x)
			converged = residual(diag, off, vals[d-1-c], x) <= 1e-9*tnorm
		}
		if !converged {
			return nil, false
		}
		z[c] = x
	}
	// Back to a's basis: v = Q z, Q = H_0 H_1 ... H_{d-2}, H_i = I − τ_i
	// u uᵀ with u[i+1] = 1 and u[i+2:] in column i of q below the
	// subdiagonal.
	out := mat.NewDense(d, k, nil)
	raw := out.RawMatrix()
	for c, x := range z {
		for j := 0; j < d; j++ {
			raw.Data[j*raw.Stride+c] = x[j]
		}
	}
	w := make([]float64, k)
	for i := d - 2; i >= 0; i-- {
		if tau[i] == 0 {
			continue
		}
		// w = uᵀ V (a row of k), then V −= τ u w.
		copy(w, raw.Data[(i+1)*raw.Stride:(i+1)*raw.Stride+k])
		for row := i + 2; row < d; row++ {
			u := q[row*d+i]
			vr := raw.Data[row*raw.Stride : row*raw.Stride+k]
			for c := range w {
				w[c] += u * vr[c]
			}
		}
		for c := range w {
			w[c] *= tau[i]
		}
		v1 := raw.Data[(i+1)*raw.Stride : (i+1)*raw.Stride+k]
		for c := range w {
			v1[c] -= w[c]
		}
		for row := i + 2; row < d; row++ {
			u := q[row*d+i]
			vr := raw.Data[row*raw.Stride : row*raw.Stride+k]
			for c := range w {
				vr[c] -= u * w[c]
			}
		}
	}
	fixSigns(out)
	return out, true
}

// residual returns ‖T x − λ x‖₂ for the tridiagonal T (diag, off).
func residual(diag, off []float64, lambda float64, x []float64) float64 {
	var s float64
	for i := range x {
		t := (diag[i] - lambda) * x[i]
		if i > 0 {
			t += off[i-1] * x[i-1]
		}
		if i < len(x)-1 {
			t += off[i] * x[i+1]
		}
		s += t * t
	}
	return math.Sqrt(s)
}

// normalize scales x to unit length (a zero vector stays zero).
func normalize(x []float64) {
	if n := floats.Norm(x, 2); n > 0 {
		floats.Scale(1/n, x)
	}
}
