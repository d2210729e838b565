package tensor

import "fmt"

// Fill sets every element of t (any view) to v.
func (t *Tensor) Fill(v float32) { backendOf("Fill", t).Fill(t.operand(), v) }

// Zero sets every element of t to 0.
func (t *Tensor) Zero() { t.Fill(0) }

// CopyInto copies src into dst. src may have any strides and is broadcast
// to dst's shape; dst must not overlap src.
func CopyInto(dst, src *Tensor) {
	be := sameBackend("CopyInto", dst, src)
	be.Unary(OpCopy, dst.operand(), src.expandedOperand("CopyInto", dst.shape), 0)
}

// AddScaledInPlace computes t += alpha*x. x must have t's shape (or
// broadcast to it).
func (t *Tensor) AddScaledInPlace(alpha float32, x *Tensor) {
	be := sameBackend("AddScaledInPlace", t, x)
	be.AddScaled(t.operand(), alpha, x.expandedOperand("AddScaledInPlace", t.shape))
}

// ScaleInPlace computes t *= alpha.
func (t *Tensor) ScaleInPlace(alpha float32) {
	be := backendOf("ScaleInPlace", t)
	o := t.operand()
	be.Unary(OpMulScalar, o, o, alpha)
}

// To returns t on device dev: t itself when it is already there, a copy
// otherwise.
func (t *Tensor) To(dev Device) (*Tensor, error) {
	if dev == t.device {
		return t, nil
	}
	var src Backend = cpuBackend
	if t.device != CPU {
		b, err := Lookup(t.device.BackendName())
		if err != nil {
			return nil, fmt.Errorf("tensor: moving from %q: %w", t.device, err)
		}
		src = b
	}
	var dstB Backend = cpuBackend
	if dev != CPU {
		b, err := Lookup(dev.BackendName())
		if err != nil {
			return nil, fmt.Errorf("tensor: moving to %q: %w", dev, err)
		}
		dstB = b
	}
	c := t
	if !t.IsContiguous() {
		c = empty(src, t.device, t.shape)
		src.Unary(OpCopy, c.operand(), t.operand(), 0)
	}
	host := c.data
	if c.device != CPU {
		host = make([]float32, c.Numel())
		src.CopyOut(host, c.operand().Buf, c.offset)
	} else {
		host = host[c.offset : c.offset+c.Numel()]
	}
	out := empty(dstB, dev, t.shape)
	dstB.CopyIn(out.operand().Buf, 0, host)
	return out, nil
}
