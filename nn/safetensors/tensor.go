package safetensors

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// Tensor is one named array of a safetensors file.
type Tensor struct {
	// Name is the tensor's key in the header, unique within a file.
	Name string
	// Shape is the array's shape; an empty shape is a scalar.
	Shape []int
	// Data holds the elements in row-major order: a []float32, []float64,
	// []int32 or []int64, which fixes the dtype.
	Data any
}

// DType returns the tensor's element type, derived from its Data.
func (t Tensor) DType() DType {
	d, _, _ := dtypeOf(t.Data)
	return d
}

// FromTensor returns t's elements as a named F32 tensor. The data of a
// contiguous tensor is shared, not copied.
func FromTensor(name string, t *tensor.Tensor) Tensor {
	return Tensor{Name: name, Shape: append([]int(nil), t.Shape()...), Data: t.Contiguous().Data()}
}

// ToTensor returns the elements as a float32 tensor. F32 data is shared;
// F64 data is converted. Integer tensors are an error.
func (t Tensor) ToTensor() (*tensor.Tensor, error) {
	switch v := t.Data.(type) {
	case []float32:
		return tensor.FromSlice(v, t.Shape...), nil
	case []float64:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return tensor.FromSlice(out, t.Shape...), nil
	}
	return nil, fmt.Errorf("safetensors: tensor %q has dtype %s, expected F32 or F64", t.Name, t.DType())
}

// numel returns the product of shape, or an error on a negative dimension
// or an overflow.
func numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

// maxElements bounds the element count of one tensor so that byte sizes
// never overflow an int.
const maxElements = 1 << 56
