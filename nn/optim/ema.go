package optim

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// EMA moves every target parameter towards its online twin,
//
//	t = m*t + (1-m)*o
//
// in float32 with m and 1-m rounded to float32 (MoCo's momentum update of
// its key encoder, BYOL's target update). It runs on the parameters'
// device, through the backend's fused EMA when it has one
// (tensor.OptimizerBackend) and otherwise as a scale and an add-scaled,
// which give the same bits. The lists pair up by index; a length or shape
// mismatch is a programming error and panics.
func EMA(target, online []*autograd.Var, m float64) {
	if len(target) != len(online) {
		panic(fmt.Sprintf("optim.EMA: %d target parameters, %d online", len(target), len(online)))
	}
	type args struct {
		m      float64
		online tensor.Device
	}
	var gs groups[args]
	for i, t := range target {
		o := online[i].Value
		if !slices.Equal(t.Value.Shape(), o.Shape()) || !t.Value.IsContiguous() || !o.IsContiguous() {
			panic(fmt.Sprintf("optim.EMA: parameter %d: target %s of shape %v, online %s of shape %v (both contiguous, same shape expected)",
				i, t, t.Value.Shape(), online[i], o.Shape()))
		}
		if !gs.add(args{m, o.Device()}, t.Value, o) {
			emaStep(t.Value, o, m)
		}
	}
	for _, g := range gs {
		g.be.EMAs(g.ops[0], g.ops[1], m)
	}
}
