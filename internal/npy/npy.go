// Package npy reads and writes NumPy's .npy files (format versions 1.0, 2.0
// and 3.0, https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html)
// for the dtypes the tools exchange: little-endian float32, float64, int32
// and int64, in C order. Anything else (big-endian data, Fortran order,
// other dtypes, object arrays) is a clear error, never a wrong array.
package npy

import "fmt"

// An Array is an n-dimensional array in C (row-major) order. Exactly one of
// the data slices is set, with as many elements as the product of Shape.
type Array struct {
	Shape   []int
	Float32 []float32
	Float64 []float64
	Int32   []int32
	Int64   []int64
}

// dtypes maps the supported descr strings to their names and sizes.
var dtypes = map[string]struct {
	name string
	size int
}{
	"<f4": {"float32", 4},
	"<f8": {"float64", 8},
	"<i4": {"int32", 4},
	"<i8": {"int64", 8},
}

// DType returns "float32", "float64", "int32", "int64", or "" for an array
// with no data slice set.
func (a *Array) DType() string {
	switch {
	case a.Float32 != nil:
		return "float32"
	case a.Float64 != nil:
		return "float64"
	case a.Int32 != nil:
		return "int32"
	case a.Int64 != nil:
		return "int64"
	}
	return ""
}

// Len returns the number of elements of the data slice that is set.
func (a *Array) Len() int {
	return len(a.Float32) + len(a.Float64) + len(a.Int32) + len(a.Int64)
}

// descr returns the array's NumPy type string.
func (a *Array) descr() string {
	for d, t := range dtypes {
		if t.name == a.DType() {
			return d
		}
	}
	return ""
}

// check verifies that exactly one data slice is set and that its length is
// the product of Shape.
func (a *Array) check() error {
	set := 0
	for _, n := range []bool{a.Float32 != nil, a.Float64 != nil, a.Int32 != nil, a.Int64 != nil} {
		if n {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("npy: array has %d data slices set, expected exactly 1", set)
	}
	n := 1
	for _, d := range a.Shape {
		if d < 0 {
			return fmt.Errorf("npy: negative dimension in shape %v", a.Shape)
		}
		n *= d
	}
	if n != a.Len() {
		return fmt.Errorf("npy: shape %v holds %d elements, data has %d", a.Shape, n, a.Len())
	}
	return nil
}

// Float32Matrix returns a 2-D float32 or float64 array as rows x cols
// float32 values (float64 values are rounded to float32).
func (a *Array) Float32Matrix() (data []float32, rows, cols int, err error) {
	if len(a.Shape) != 2 {
		return nil, 0, 0, fmt.Errorf("shape %v, expected 2 dimensions (rows x columns)", a.Shape)
	}
	if data, err = a.Float32Values(); err != nil {
		return nil, 0, 0, err
	}
	return data, a.Shape[0], a.Shape[1], nil
}

// Float32Values returns the elements of a float32 or float64 array (of any
// shape) as float32 values: float32 data is shared, float64 values are
// rounded to float32. Other dtypes are an error.
func (a *Array) Float32Values() ([]float32, error) {
	switch {
	case a.Float32 != nil:
		return a.Float32, nil
	case a.Float64 != nil:
		data := make([]float32, len(a.Float64))
		for i, v := range a.Float64 {
			data[i] = float32(v)
		}
		return data, nil
	}
	return nil, fmt.Errorf("dtype %s, expected float32 or float64", a.DType())
}

// Int64Vector returns a 1-D int32 or int64 array as int64 values.
func (a *Array) Int64Vector() ([]int64, error) {
	if len(a.Shape) != 1 {
		return nil, fmt.Errorf("shape %v, expected 1 dimension", a.Shape)
	}
	switch {
	case a.Int64 != nil:
		return a.Int64, nil
	case a.Int32 != nil:
		out := make([]int64, len(a.Int32))
		for i, v := range a.Int32 {
			out[i] = int64(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("dtype %s, expected int32 or int64", a.DType())
}
