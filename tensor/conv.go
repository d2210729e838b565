package tensor

import "fmt"

// ConvOutSize returns the output size of a convolution or pooling window
// of size k over in elements with the given stride and zero padding on
// both sides: (in+2*pad-k)/stride + 1, or 0 when the window does not fit.
func ConvOutSize(in, k, stride, pad int) int {
	if stride <= 0 || k <= 0 || in < 0 || pad < 0 {
		panic(fmt.Sprintf("tensor.ConvOutSize: in=%d k=%d stride=%d pad=%d", in, k, stride, pad))
	}
	if in+2*pad < k {
		return 0
	}
	return (in+2*pad-k)/stride + 1
}
