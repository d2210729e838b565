package nn

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

func TestLoadStateDict(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	mk := func() *Sequential { return NewSequential(NewLinear(3, 4, true, r), NewBatchNorm1d(4)) }
	src, dst := mk(), mk()
	src.Layers[1].(*BatchNorm).RunningMean.Tensor.Data()[2] = 7
	if err := LoadStateDict(dst, StateDictOf(src), true); err != nil {
		t.Fatal(err)
	}
	if got := dst.Layers[1].(*BatchNorm).RunningMean.Tensor.Data()[2]; got != 7 {
		t.Errorf("running_mean not loaded: %v", got)
	}
	if !equal(dst.Layers[0].(*Linear).Weight.Value.Data(), src.Layers[0].(*Linear).Weight.Value.Data()) {
		t.Errorf("weight not loaded")
	}

	for _, tc := range []struct {
		name   string
		edit   func(StateDict) StateDict
		strict bool
		want   string // "" means success
	}{
		{"missing", func(sd StateDict) StateDict { return sd[1:] }, true, "missing 1: 0.weight"},
		{"missing-lax", func(sd StateDict) StateDict { return sd[1:] }, false, ""},
		{"no-num-batches", func(sd StateDict) StateDict { return sd[:len(sd)-1] }, true, ""},
		{"unexpected", func(sd StateDict) StateDict {
			return append(sd, StateEntry{Name: "fc.weight", Tensor: tensor.New(1)})
		}, true, "unexpected 1: fc.weight"},
		{"unexpected-lax", func(sd StateDict) StateDict {
			return append(sd, StateEntry{Name: "fc.weight", Tensor: tensor.New(1)})
		}, false, ""},
		{"shape", func(sd StateDict) StateDict {
			sd[0].Tensor = tensor.New(4, 2)
			return sd
		}, false, "0.weight: got shape [4 2], expected [4 3]"},
		{"dup", func(sd StateDict) StateDict { return append(sd, sd[0]) }, false, "appears twice"},
		{"many unexpected", func(sd StateDict) StateDict {
			for i := range 9 {
				sd = append(sd, StateEntry{Name: fmt.Sprintf("x%d", i), Tensor: tensor.New(1)})
			}
			return sd
		}, true, "unexpected 9: x0, x1, x2, x3, and 5 more"},
		{"many mismatched", func(sd StateDict) StateDict {
			for i := range sd {
				sd[i].Tensor = tensor.New(7)
			}
			return sd
		}, false, "shape mismatch 7: 0.weight: got shape [7], expected [4 3]; 0.bias: got shape [7], expected [4]; 1.weight: got shape [7], expected [4]; 1.bias: got shape [7], expected [4]; and 3 more"},
	} {
		sd := append(StateDict(nil), StateDictOf(mk())...)
		err := LoadStateDict(mk(), tc.edit(sd), tc.strict)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
