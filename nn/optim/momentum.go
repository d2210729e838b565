package optim

// momentumStep applies PyTorch's SGD momentum (shared by SGD and LARS) to
// the update d of one element whose momentum buffer is *b, and returns the
// step to take:
//
//	buf = d                             (first: the buffer's first step)
//	buf = mom*buf + damp*d              (later steps; damp = 1 - dampening)
//	step = d + mom*buf with Nesterov, else buf
func momentumStep(d float64, b *float32, first bool, mom, damp float64, nesterov bool) float64 {
	v := d
	if !first {
		v = mom*float64(*b) + damp*d
	}
	*b = float32(v)
	if nesterov {
		return d + mom*v
	}
	return v
}
