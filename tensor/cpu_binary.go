package tensor

// binary1 applies op to one pair of values.
func binary1(op BinaryOp, a, b float32) float32 {
	switch op {
	case OpAdd:
		return a + b
	case OpSub:
		return a - b
	case OpMul:
		return a * b
	case OpDiv:
		return a / b
	case OpMaximum:
		return max(a, b)
	case OpMinimum:
		return min(a, b)
	}
	panic("tensor: unknown binary op " + op.String())
}

// binaryVVGo is binaryVV in plain Go.
func binaryVVGo(op BinaryOp, d, a, b []float32) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case OpAdd:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case OpSub:
		for i := range d {
			d[i] = a[i] - b[i]
		}
	case OpMul:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case OpDiv:
		for i := range d {
			d[i] = a[i] / b[i]
		}
	default:
		for i := range d {
			d[i] = binary1(op, a[i], b[i])
		}
	}
}

// binaryVSGo is binaryVS in plain Go.
func binaryVSGo(op BinaryOp, d, a []float32, s float32) {
	a = a[:len(d)]
	switch op {
	case OpAdd:
		for i := range d {
			d[i] = a[i] + s
		}
	case OpSub:
		for i := range d {
			d[i] = a[i] - s
		}
	case OpMul:
		for i := range d {
			d[i] = a[i] * s
		}
	case OpDiv:
		for i := range d {
			d[i] = a[i] / s
		}
	default:
		for i := range d {
			d[i] = binary1(op, a[i], s)
		}
	}
}

// binarySVGo is binarySV in plain Go.
func binarySVGo(op BinaryOp, d []float32, s float32, b []float32) {
	b = b[:len(d)]
	switch op {
	case OpAdd:
		for i := range d {
			d[i] = s + b[i]
		}
	case OpSub:
		for i := range d {
			d[i] = s - b[i]
		}
	case OpMul:
		for i := range d {
			d[i] = s * b[i]
		}
	case OpDiv:
		for i := range d {
			d[i] = s / b[i]
		}
	default:
		for i := range d {
			d[i] = binary1(op, s, b[i])
		}
	}
}

// simdMin is the row length from which the AVX2 kernels are called.
const simdMin = 16

// binaryVV computes d[i] = a[i] op b[i] on rows of equal length.
func binaryVV(op BinaryOp, d, a, b []float32) {
	if useAVX2 && len(d) >= simdMin {
		a, b = a[:len(d)], b[:len(d)]
		switch op {
		case OpAdd:
			addVV(d, a, b)
			return
		case OpSub:
			subVV(d, a, b)
			return
		case OpMul:
			mulVV(d, a, b)
			return
		case OpDiv:
			divVV(d, a, b)
			return
		}
	}
	binaryVVGo(op, d, a, b)
}

// binaryVS computes d[i] = a[i] op s.
func binaryVS(op BinaryOp, d, a []float32, s float32) {
	if useAVX2 && len(d) >= simdMin {
		a = a[:len(d)]
		switch op {
		case OpAdd:
			addVS(d, a, s)
			return
		case OpSub:
			subVS(d, a, s)
			return
		case OpMul:
			mulVS(d, a, s)
			return
		case OpDiv:
			divVS(d, a, s)
			return
		}
	}
	binaryVSGo(op, d, a, s)
}

// binarySV computes d[i] = s op b[i].
func binarySV(op BinaryOp, d []float32, s float32, b []float32) {
	if useAVX2 && len(d) >= simdMin {
		b = b[:len(d)]
		switch op {
		case OpAdd:
			addSV(d, s, b)
			return
		case OpSub:
			subSV(d, s, b)
			return
		case OpMul:
			mulSV(d, s, b)
			return
		case OpDiv:
			divSV(d, s, b)
			return
		}
	}
	binarySVGo(op, d, s, b)
}
