package safetensors

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// TestStateDictRoundTrip writes a state dict with a float and an Int64
// entry (one of them a transposed view) and reads it back.
func TestStateDictRoundTrip(t *testing.T) {
	w := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	sd := nn.StateDict{
		{Name: "fc.weight", Tensor: w.Transpose(0, 1)},
		{Name: "bn.num_batches_tracked", Tensor: tensor.Scalar(7), Int64: true},
	}
	ts := FromStateDict("head", sd)
	if got := []string{ts[0].Name, ts[1].Name}; !slices.Equal(got, []string{"head.fc.weight", "head.bn.num_batches_tracked"}) {
		t.Fatalf("names %v", got)
	}
	if ts[1].DType() != I64 {
		t.Fatalf("Int64 entry written as %s", ts[1].DType())
	}
	var buf bytes.Buffer
	if err := Encode(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	back, err := f.StateDict()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]nn.StateEntry{}
	for _, e := range back {
		byName[e.Name] = e
	}
	fw := byName["head.fc.weight"]
	if fw.Int64 || !slices.Equal(fw.Tensor.Shape(), []int{3, 2}) || !slices.Equal(fw.Tensor.Data(), []float32{1, 4, 2, 5, 3, 6}) {
		t.Fatalf("weight read back as %+v %v", fw, fw.Tensor)
	}
	if nb := byName["head.bn.num_batches_tracked"]; !nb.Int64 || nb.Tensor.Item() != 7 {
		t.Fatalf("num_batches_tracked read back as %+v", nb)
	}
	if _, err := (Tensor{Name: "i", Shape: []int{1}, Data: []int32{1}}).StateEntry(); err == nil || !strings.Contains(err.Error(), "expected F32 or F64") {
		t.Fatalf("I32 entry: %v", err)
	}
}
