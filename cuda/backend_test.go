package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"

	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/backendtest"
)

// TestConformance runs tensor's conformance suite on the CUDA backend at
// several block sizes (GPU only).
func TestConformance(t *testing.T) {
	d := needGPU(t)
	sizes := []int{32, 128, 256, 1024}
	if os.Getenv(envFake) != "" {
		sizes = []int{64} // the fake driver's emulated kernels: one size (TestConformanceEmulated's)
	}
	for _, bs := range sizes {
		t.Run(fmt.Sprintf("block%d", bs), func(t *testing.T) {
			b, err := newBackend(d, bs)
			if err != nil {
				t.Fatal(err)
			}
			backendtest.Run(t, b)
		})
	}
}

// TestRegistered checks that, once Available has been called, "cuda" is
// registered exactly when a device is usable.
func TestRegistered(t *testing.T) {
	avail := Available()
	_, err := tensor.Lookup("cuda")
	if (err == nil) != (avail == nil) {
		t.Errorf("tensor.Lookup(\"cuda\") error %v, Available() %v", err, Available())
	}
	b, rerr := Registered()
	if (rerr == nil) != (avail == nil) || rerr != avail {
		t.Errorf("Registered() error %v, Available() %v", rerr, avail)
	}
	if l, _ := tensor.Lookup("cuda"); avail == nil && tensor.Backend(b) != l {
		t.Errorf("Registered() = %p, not the registered backend %v", b, l)
	}
}

// TestLayout checks the merging of dimensions into kernel layouts, which
// runs on the host before any launch.
func TestLayout(t *testing.T) {
	op := func(off int, strides ...int) tensor.Operand { return tensor.Operand{Offset: off, Strides: strides} }
	tests := []struct {
		shape []int
		views []tensor.Operand
		want  string // N rank shape-prefix strides-prefix of view 0 and 1
	}{
		{[]int{2, 3, 4}, []tensor.Operand{op(0, 12, 4, 1), op(5, 12, 4, 1)}, "24 1 [24] [1] [1]"},
		{[]int{2, 3, 4}, []tensor.Operand{op(0, 12, 4, 1), op(0, 0, 4, 1)}, "24 2 [2 12] [12 1] [0 1]"},
		{[]int{2, 1, 4}, []tensor.Operand{op(0, 4, 4, 1), op(0, 1, 7, 2)}, "8 2 [2 4] [4 1] [1 2]"},
		{[]int{}, []tensor.Operand{op(3), op(4)}, "1 0 [] [] []"},
		{[]int{3, 0, 2}, []tensor.Operand{op(0, 0, 2, 1), op(0, 2, 2, 1)}, "0 1 [0] [0] [0]"},
		{[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5}, []tensor.Operand{op(0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1), op(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2)}, "5 1 [5] [1] [2]"},
	}
	for _, tc := range tests {
		for i := range tc.views {
			tc.views[i].Shape = tc.shape
		}
		l := layout("Test", tc.shape, tc.views...)
		got := fmt.Sprintf("%d %d %v %v %v", l.N, l.Rank, l.Shape[:l.Rank], l.Stride[0][:l.Rank], l.Stride[1][:l.Rank])
		if got != tc.want {
			t.Errorf("layout(%v) = %s, want %s", tc.shape, got, tc.want)
		}
		if l.Off[1] != int64(tc.views[1].Offset) {
			t.Errorf("layout(%v): offset %d, want %d", tc.shape, l.Off[1], tc.views[1].Offset)
		}
	}
	// Nine dimensions that cannot merge are refused with a clear message.
	shape := []int{2, 2, 2, 2, 2, 2, 2, 2, 2}
	st := []int{1 << 17, 1 << 15, 1 << 13, 1 << 11, 1 << 9, 1 << 7, 1 << 5, 1 << 3, 1}
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, fmt.Sprintf("at most %d dimensions", kc.MaxDim)) {
			t.Errorf("rank-9 layout: recovered %q, want a rank error", r)
		}
	}()
	layout("Test", shape, tensor.Operand{Shape: shape, Strides: st})
}

// TestHostBufferRefused checks that handing host storage to the backend
// fails with a message naming the operation (no device needed).
func TestHostBufferRefused(t *testing.T) {
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "Backend.CopyIn: buffer is not CUDA device storage") {
			t.Errorf("recovered %q", r)
		}
	}()
	(&Backend{}).CopyIn(tensor.Buffer{Host: make([]float32, 4)}, 0, []float32{1})
}
