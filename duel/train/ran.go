package train

import (
	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/tensor"
)

// precisioner is implemented by backends whose products and convolutions
// may compute below fp32 (the CUDA backend's TF32 and BF16, the CPU's BF16).
type precisioner interface {
	Precisions() (products, convolutions string)
}

// ranOn returns the Ran of a segment of a run computing on dev with the
// process group comm: fp32 unless dev's backend says otherwise.
func ranOn(dev tensor.Device, comm dist.Comm) *Ran {
	r := &Ran{Device: string(dev), Precision: "fp32", ConvPrecision: "fp32", WorldSize: comm.Size()}
	if be, err := tensor.Lookup(dev.BackendName()); err == nil {
		if p, ok := be.(precisioner); ok {
			r.Precision, r.ConvPrecision = p.Precisions()
		}
	}
	return r
}
