package eval

import (
	"errors"
	"math"
	"testing"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/tensor"
)

// tinyDataset has n 2x2 RGB images; image i has every byte equal to i and
// label i % 3.
func tinyDataset(n int) *data.Dataset {
	ds := &data.Dataset{Name: "tiny", Split: "test", H: 2, W: 2, C: 3, Classes: []string{"a", "b", "c"}}
	for i := 0; i < n; i++ {
		for j := 0; j < 12; j++ {
			ds.Pixels = append(ds.Pixels, uint8(i))
		}
		ds.Labels = append(ds.Labels, int32(i%3))
	}
	return ds
}

// meanEncoder returns the per-channel mean of each image (D = C).
func meanEncoder(x *tensor.Tensor) (*tensor.Tensor, error) {
	return tensor.Mean(x.Reshape(x.Dim(0), x.Dim(1), -1), 2, false), nil
}

func TestExtract(t *testing.T) {
	ds := tinyDataset(10)
	var calls []int
	f, err := Extract(ds, meanEncoder, ExtractOptions{Batch: 4, Progress: func(done, total int) { calls = append(calls, done*100+total) }})
	if err != nil {
		t.Fatal(err)
	}
	if f.N != 10 || f.D != 3 || len(f.X) != 30 {
		t.Fatalf("got N=%d D=%d len=%d", f.N, f.D, len(f.X))
	}
	for i := 0; i < 10; i++ {
		if f.Labels[i] != int32(i%3) || math.Abs(float64(f.X[i*3+1])-float64(i)/255) > 1e-6 {
			t.Errorf("row %d: label %d, value %v", i, f.Labels[i], f.X[i*3+1])
		}
	}
	if len(calls) != 3 || calls[2] != 1010 {
		t.Errorf("progress calls %v", calls)
	}
	g, err := Extract(ds, meanEncoder, ExtractOptions{Limit: 4, Mean: []float32{0, 0, 0}, Std: []float32{2, 2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	// balanced: images 0, 1, 2, 3
	if g.N != 4 || g.Labels[3] != 0 || math.Abs(float64(g.X[3*3])-3.0/255/2) > 1e-6 {
		t.Errorf("limit 4: labels %v features %v", g.Labels, g.X)
	}
}

func TestExtractErrors(t *testing.T) {
	ds := tinyDataset(5)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		enc  Encoder
	}{
		{"encoder error", func(*tensor.Tensor) (*tensor.Tensor, error) { return nil, boom }},
		{"wrong rows", func(x *tensor.Tensor) (*tensor.Tensor, error) { return tensor.Zeros(1, 3), nil }},
		{"not 2-d", func(x *tensor.Tensor) (*tensor.Tensor, error) { return x, nil }},
		{"NaN", func(x *tensor.Tensor) (*tensor.Tensor, error) {
			return tensor.Full(float32(math.NaN()), x.Dim(0), 2), nil
		}},
	} {
		if _, err := Extract(ds, tc.enc, ExtractOptions{Batch: 2}); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := Extract(ds, meanEncoder, ExtractOptions{Batch: -1}); err == nil {
		t.Error("batch -1: no error")
	}
}
