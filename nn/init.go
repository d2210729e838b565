package nn

import (
	"math"
	"math/rand/v2"

	"github.com/duel-ssl/duel/tensor"
)

// FanIn returns the fan-in of a weight of the given shape as PyTorch computes
// it: shape[1] times the receptive field (the product of shape[2:]).
func FanIn(shape []int) int {
	f := 1
	if len(shape) > 1 {
		f = shape[1]
	}
	for _, d := range shape[min(2, len(shape)):] {
		f *= d
	}
	return f
}

// FanOut returns shape[0] times the receptive field.
func FanOut(shape []int) int {
	f := shape[0]
	for _, d := range shape[min(2, len(shape)):] {
		f *= d
	}
	return f
}

// UniformInit fills t with values drawn uniformly from [-bound, bound).
func UniformInit(t *tensor.Tensor, bound float64, r *rand.Rand) {
	d := t.Data()
	for i := range d {
		d[i] = float32((2*r.Float64() - 1) * bound)
	}
}

// NormalInit fills t with values drawn from N(0, std^2).
func NormalInit(t *tensor.Tensor, std float64, r *rand.Rand) {
	d := t.Data()
	for i := range d {
		d[i] = float32(r.NormFloat64() * std)
	}
}

// DefaultInit applies PyTorch's default initialisation of Linear and Conv2d
// (kaiming_uniform_ with a=sqrt(5)): weight and bias uniform in
// +-1/sqrt(fan_in). bias may be nil.
func DefaultInit(weight, bias *tensor.Tensor, r *rand.Rand) {
	bound := 1 / math.Sqrt(float64(FanIn(weight.Shape())))
	UniformInit(weight, bound, r)
	if bias != nil {
		UniformInit(bias, bound, r)
	}
}

// KaimingNormalFanOut applies kaiming_normal_(mode="fan_out",
// nonlinearity="relu"): N(0, 2/fan_out), torchvision's ResNet convolution
// initialisation.
func KaimingNormalFanOut(weight *tensor.Tensor, r *rand.Rand) {
	NormalInit(weight, math.Sqrt(2/float64(FanOut(weight.Shape()))), r)
}
