package analysis

import (
	"cmp"
	"math"
	"slices"
)

// sparseP is the symmetric joint distribution P of Barnes-Hut t-SNE in
// compressed rows: row i's entries are col[ptr[i]:ptr[i+1]] (ascending)
// with values val[...].
type sparseP struct {
	ptr []int
	col []int32
	val []float64
}

// neighbourCount is scikit-learn's number of neighbours of Barnes-Hut
// t-SNE, min(n−1, ⌊3·perplexity + 1⌋).
func neighbourCount(n int, perplexity float64) int {
	return min(n-1, int(3*perplexity+1))
}

// nearestNeighbours returns the k nearest other rows of each row of z (n
// x d), by squared Euclidean distance, nearest first (ties by index), and
// those distances: n x k each. Exact: every pair is measured.
func nearestNeighbours(z []float64, n, d, k int) ([]int32, []float64) {
	idx := make([]int32, n*k)
	dist := make([]float64, n*k)
	type cand struct {
		d float64
		j int32
	}
	less := func(a, b cand) int {
		if c := cmp.Compare(a.d, b.d); c != 0 {
			return c
		}
		return cmp.Compare(a.j, b.j)
	}
	parallelChunks(n, 16, 1, func(lo, hi int) {
		row := make([]cand, n)
		for i := lo; i < hi; i++ {
			zi := z[i*d : (i+1)*d]
			m := 0
			for j := 0; j < n; j++ {
				if j == i {
					continue
				}
				row[m] = cand{squaredDistance(zi, z[j*d:(j+1)*d]), int32(j)}
				m++
			}
			nearest := row[:m]
			if k < m {
				selectSmallest(nearest, k, less)
				nearest = nearest[:k]
			}
			slices.SortFunc(nearest, less)
			for a, c := range nearest {
				idx[i*k+a], dist[i*k+a] = c.j, c.d
			}
		}
	})
	return idx, dist
}

// selectSmallest reorders v so that its k smallest elements by less come
// first, in any order (quickselect; v is left permuted).
func selectSmallest[T any](v []T, k int, less func(a, b T) int) {
	lo, hi := 0, len(v)-1
	for lo < hi {
		// Median of three as the pivot, moved to hi.
		mid := lo + (hi-lo)/2
		if less(v[mid], v[lo]) < 0 {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if less(v[hi], v[lo]) < 0 {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if less(v[mid], v[hi]) < 0 {
			v[mid], v[hi] = v[hi], v[mid]
		}
		p := v[hi]
		s := lo
		for j := lo; j < hi; j++ {
			if less(v[j], p) < 0 {
				v[s], v[j] = v[j], v[s]
				s++
			}
		}
		v[s], v[hi] = v[hi], v[s]
		switch {
		case s == k || s == k-1:
			return
		case s < k:
			lo = s + 1
		default:
			hi = s - 1
		}
	}
}

// sparseJointProbabilities returns scikit-learn's P of Barnes-Hut t-SNE
// for the rows of z (n x d): the conditional p_j|i of each row over its k
// = neighbourCount nearest rows, each row's β found by the same binary
// search as the exact method's (conditionalRow), then P = (C + Cᵀ) / ΣC
// with C the n x n matrix of the p_j|i (ΣC = n).
func sparseJointProbabilities(z []float64, n, d int, perplexity float64) *sparseP {
	k := neighbourCount(n, perplexity)
	idx, dist := nearestNeighbours(z, n, d, k)
	cond := make([]float64, n*k)
	parallelRows(n, func(i int) {
		conditionalRow(cond[i*k:(i+1)*k], dist[i*k:(i+1)*k], -1, perplexity)
	})
	// Every entry twice, (i, j) and (j, i), counted by row, then each
	// row's columns sorted and the repeats merged (in a fixed order: the
	// sums are the same on every machine).
	count := make([]int, n+1)
	for i := 0; i < n; i++ {
		for a := 0; a < k; a++ {
			count[i+1]++
			count[int(idx[i*k+a])+1]++
		}
	}
	for i := 0; i < n; i++ {
		count[i+1] += count[i]
	}
	type entry struct {
		j int32
		v float64
	}
	ent := make([]entry, count[n])
	fill := slices.Clone(count[:n])
	var total float64
	for i := 0; i < n; i++ {
		for a := 0; a < k; a++ {
			j, v := int(idx[i*k+a]), cond[i*k+a]
			total += 2 * v
			ent[fill[i]] = entry{int32(j), v}
			fill[i]++
			ent[fill[j]] = entry{int32(i), v}
			fill[j]++
		}
	}
	total = math.Max(total, 0x1p-52)
	p := &sparseP{ptr: make([]int, n+1)}
	for i := 0; i < n; i++ {
		row := ent[count[i]:count[i+1]]
		slices.SortStableFunc(row, func(a, b entry) int { return cmp.Compare(a.j, b.j) })
		for a := 0; a < len(row); {
			j, v := row[a].j, row[a].v
			for a++; a < len(row) && row[a].j == j; a++ {
				v += row[a].v
			}
			p.col = append(p.col, j)
			p.val = append(p.val, v/total)
		}
		p.ptr[i+1] = len(p.col)
	}
	return p
}

// bhGradient computes the Barnes-Hut t-SNE gradient (van der Maaten 2014,
// as scikit-learn's method="barnes_hut"): the attraction exactly over the
// sparse P, the repulsion and Z = Σ_{k≠l} w_kl from the quadtree of the
// embedding with opening angle theta, so that
//
//	∂C/∂y_i ≈ 4 (α Σ_j P_ij w_ij (y_i−y_j) − (1/Z) Σ_j w_ij² (y_i−y_j)),
//
// rows split over the CPUs, Z added in row order: the result does not
// depend on the number of goroutines.
type bhGradient struct {
	n       int
	theta2  float64
	tree    quadTree
	attract []float64 // n x 2
	repulse []float64 // n x 2
	rowZ    []float64 // n
}

func newBHGradient(n int, theta float64) *bhGradient {
	return &bhGradient{n: n, theta2: theta * theta, attract: make([]float64, 2*n), repulse: make([]float64, 2*n), rowZ: make([]float64, n)}
}

// forces fills attract, repulse and rowZ for the embedding y and returns
// Z.
func (g *bhGradient) forces(y []float64, p *sparseP) float64 {
	g.tree.build(y)
	parallelChunks(g.n, 64, 4, func(lo, hi int) {
		var stack []int32
		for i := lo; i < hi; i++ {
			yi0, yi1 := y[2*i], y[2*i+1]
			var a0, a1 float64
			for e := p.ptr[i]; e < p.ptr[i+1]; e++ {
				j := p.col[e]
				d0, d1 := yi0-y[2*j], yi1-y[2*j+1]
				pw := p.val[e] / (1 + d0*d0 + d1*d1)
				a0 += pw * d0
				a1 += pw * d1
			}
			g.attract[2*i], g.attract[2*i+1] = a0, a1
			var z, r0, r1 float64
			z, r0, r1, stack = g.tree.repulsion(int32(i), yi0, yi1, g.theta2, stack)
			g.repulse[2*i], g.repulse[2*i+1] = r0, r1
			g.rowZ[i] = z
		}
	})
	var z float64
	for _, v := range g.rowZ {
		z += v
	}
	return z
}

func (g *bhGradient) compute(y []float64, p *sparseP, exag float64, grad []float64) {
	z := g.forces(y, p)
	for i := range grad {
		grad[i] = 4 * (exag*g.attract[i] - g.repulse[i]/z)
	}
}

// kl returns KL(P‖Q) over P's entries, Q_ij = w_ij / Z with the tree's Z
// (scikit-learn's Barnes-Hut error).
func (g *bhGradient) kl(y []float64, p *sparseP) float64 {
	z := g.forces(y, p)
	var kl float64
	for i := 0; i < g.n; i++ {
		for e := p.ptr[i]; e < p.ptr[i+1]; e++ {
			j := p.col[e]
			d0, d1 := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
			q := math.Max(1/(1+d0*d0+d1*d1)/z, 0x1p-52)
			pv := math.Max(p.val[e], 0x1p-52)
			kl += pv * math.Log(pv/q)
		}
	}
	return kl
}
