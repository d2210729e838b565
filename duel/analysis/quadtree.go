package analysis

// quadTree is the Barnes-Hut tree of a two-dimensional embedding: square
// cells, each split into four when a second point at other coordinates
// arrives, with the number of points under every cell and the sum of
// their coordinates (the centre of mass is sum / count). Points at the
// same coordinates share a leaf, as do points that would need a cell
// narrower than quadMaxDepth halvings of the root; a leaf lists its points
// through next. Building it is sequential and its sums are added in point
// order, so the tree, and every force read from it, depends only on the
// coordinates.
type quadTree struct {
	nodes  []quadNode
	leafOf []int32 // the leaf holding each point
	next   []int32 // the next point of the same leaf, -1 at the end
}

// quadNode is one cell. The fields repulsion reads come first.
type quadNode struct {
	mx, my       float64 // centre of mass (set by build once the points are in)
	count        float64 // points under it
	width2       float64 // squared width
	child        int32   // the first of its four children, or -1 for a leaf
	head         int32   // a leaf's first point, -1 when empty
	sx, sy       float64 // sums of the coordinates of the points under it
	cx, cy, half float64 // centre and half width
}

// quadMaxDepth bounds the halvings: 2^-48 of the root's width is below
// float64's resolution of any coordinate in the tree.
const quadMaxDepth = 48

// build replaces the tree by that of the n points y (n x 2).
func (t *quadTree) build(y []float64) {
	n := len(y) / 2
	if cap(t.leafOf) < n {
		t.leafOf = make([]int32, n)
		t.next = make([]int32, n)
	}
	t.leafOf, t.next = t.leafOf[:n], t.next[:n]
	t.nodes = t.nodes[:0]
	if n == 0 {
		return
	}
	x0, x1, y0, y1 := y[0], y[0], y[1], y[1]
	for i := 1; i < n; i++ {
		x0, x1 = min(x0, y[2*i]), max(x1, y[2*i])
		y0, y1 = min(y0, y[2*i+1]), max(y1, y[2*i+1])
	}
	// A little wider than the points, so that none lies on the far edge.
	half := max(x1-x0, y1-y0)/2*(1+1e-9) + 1e-300
	t.nodes = append(t.nodes, quadNode{cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, half: half, child: -1, head: -1})
	for i := 0; i < n; i++ {
		t.insert(int32(i), y)
	}
	for i := range t.nodes {
		c := &t.nodes[i]
		if c.count > 0 {
			c.mx, c.my = c.sx/c.count, c.sy/c.count
		}
		c.width2 = 4 * c.half * c.half
	}
}

// quadrant returns which child of cell c holds (x, y): bit 0 east, bit 1
// north.
func (c *quadNode) quadrant(x, y float64) int32 {
	q := int32(0)
	if x >= c.cx {
		q |= 1
	}
	if y >= c.cy {
		q |= 2
	}
	return q
}

// insert adds point i to every cell on its way down and to a leaf,
// splitting the leaf it meets when its points lie elsewhere.
func (t *quadTree) insert(i int32, y []float64) {
	px, py := y[2*i], y[2*i+1]
	nd := int32(0)
	for depth := 0; ; depth++ {
		c := &t.nodes[nd]
		if c.child >= 0 {
			c.sx += px
			c.sy += py
			c.count++
			nd = c.child + c.quadrant(px, py)
			continue
		}
		if c.head < 0 || depth >= quadMaxDepth || (y[2*c.head] == px && y[2*c.head+1] == py) {
			c.sx += px
			c.sy += py
			c.count++
			t.next[i] = c.head
			c.head = i
			t.leafOf[i] = nd
			return
		}
		t.split(nd, y)
		// The loop comes back to the cell, now with children.
		depth--
	}
}

// split gives leaf nd four children and moves its points (all at one
// place: split only happens above quadMaxDepth) into the one that holds
// them.
func (t *quadTree) split(nd int32, y []float64) {
	first := int32(len(t.nodes))
	c := t.nodes[nd]
	h := c.half / 2
	for q := int32(0); q < 4; q++ {
		cx, cy := c.cx-h, c.cy-h
		if q&1 != 0 {
			cx = c.cx + h
		}
		if q&2 != 0 {
			cy = c.cy + h
		}
		t.nodes = append(t.nodes, quadNode{cx: cx, cy: cy, half: h, child: -1, head: -1})
	}
	to := first + c.quadrant(y[2*c.head], y[2*c.head+1])
	k := &t.nodes[to]
	k.sx, k.sy, k.count, k.head = c.sx, c.sy, c.count, c.head
	for p := c.head; p >= 0; p = t.next[p] {
		t.leafOf[p] = to
	}
	parent := &t.nodes[nd]
	parent.child, parent.head = first, -1
}

// repulsion returns, for point i at (yi0, yi1), Σ_j w_ij and Σ_j
// w_ij² (y_i − y_j) over every other point j, w_ij = 1/(1+‖y_i−y_j‖²),
// with the points of a cell taken together at their centre of mass when
// the cell's width over its distance is below theta (theta2 = θ²), and
// always in a leaf (theta 0: every point on its own, except points at the
// same place or closer than the tree resolves). stack is scratch.
func (t *quadTree) repulsion(i int32, yi0, yi1, theta2 float64, stack []int32) (z, r0, r1 float64, _ []int32) {
	own := t.leafOf[i]
	stack = append(stack[:0], 0)
	for len(stack) > 0 {
		nd := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c := &t.nodes[nd]
		cnt, mx, my := c.count, c.mx, c.my
		if nd == own { // i's own leaf: the others in it
			cnt = cnt - 1
			if cnt == 0 {
				continue
			}
			mx, my = (c.sx-yi0)/cnt, (c.sy-yi1)/cnt
		}
		if cnt == 0 {
			continue
		}
		d0, d1 := yi0-mx, yi1-my
		d2 := d0*d0 + d1*d1
		if c.child >= 0 && c.width2 >= theta2*d2 {
			stack = append(stack, c.child, c.child+1, c.child+2, c.child+3)
			continue
		}
		w := 1 / (1 + d2)
		z += cnt * w
		ww := cnt * w * w
		r0 += ww * d0
		r1 += ww * d1
	}
	return z, r0, r1, stack
}
