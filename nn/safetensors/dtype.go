package safetensors

import "fmt"

// DType names an element type as the safetensors header spells it.
type DType string

// The element types this package reads and writes.
const (
	F32 DType = "F32"
	F64 DType = "F64"
	I32 DType = "I32"
	I64 DType = "I64"
)

// knownDTypes lists every dtype of the specification with its size in
// bytes, including those this package recognises but does not decode.
var knownDTypes = map[DType]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"F64": 8, "I64": 8, "U64": 8,
}

// Size returns the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int { return knownDTypes[d] }

// supported reports whether values of d can be decoded into Go slices.
func (d DType) supported() bool {
	switch d {
	case F32, F64, I32, I64:
		return true
	}
	return false
}

// rank orders dtypes as the reference writer does: tensors are laid out by
// dtype in descending order of the specification's enumeration (I64, F64,
// F32, I32 for the supported ones), then by name.
func (d DType) rank() int {
	switch d {
	case I64:
		return 0
	case F64:
		return 1
	case F32:
		return 2
	case I32:
		return 3
	}
	return 4
}

// dtypeOf returns the dtype of a data slice.
func dtypeOf(data any) (DType, int, error) {
	switch v := data.(type) {
	case []float32:
		return F32, len(v), nil
	case []float64:
		return F64, len(v), nil
	case []int32:
		return I32, len(v), nil
	case []int64:
		return I64, len(v), nil
	}
	return "", 0, fmt.Errorf("data of type %T, expected []float32, []float64, []int32 or []int64", data)
}
