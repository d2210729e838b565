package safetensors

import (
	"github.com/duel-ssl/duel/nn"
)

// FromStateDict returns the entries of sd as named tensors, in sd's order,
// each name preceded by prefix and a dot when prefix is not empty. Entries
// marked Int64 (PyTorch's num_batches_tracked) are written as I64, the
// others as F32 (the data of a contiguous tensor is shared, not copied).
func FromStateDict(prefix string, sd nn.StateDict) []Tensor {
	out := make([]Tensor, 0, len(sd))
	for _, e := range sd {
		name := e.Name
		if prefix != "" {
			name = prefix + "." + name
		}
		if !e.Int64 {
			out = append(out, FromTensor(name, e.Tensor))
			continue
		}
		t := e.Tensor.Contiguous()
		src := t.Data()
		v := make([]int64, len(src))
		for i, x := range src {
			v[i] = int64(x)
		}
		out = append(out, Tensor{Name: name, Shape: t.Shape(), Data: v})
	}
	return out
}

// StateEntry returns t as a state-dict entry of the same name: F32 and F64
// data as ToTensor gives them, I64 data as float32 values marked Int64 (as
// PyTorch's num_batches_tracked). I32 data is an error.
func (t Tensor) StateEntry() (nn.StateEntry, error) {
	e := nn.StateEntry{Name: t.Name}
	if d, ok := t.Data.([]int64); ok {
		ft := make([]float32, len(d))
		for i, x := range d {
			ft[i] = float32(x)
		}
		t = Tensor{Name: t.Name, Shape: t.Shape, Data: ft}
		e.Int64 = true
	}
	v, err := t.ToTensor()
	if err != nil {
		return nn.StateEntry{}, err
	}
	e.Tensor = v
	return e, nil
}

// StateDict returns the file's tensors, in file order, as a state dict (see
// Tensor.StateEntry).
func (f *File) StateDict() (nn.StateDict, error) {
	sd := make(nn.StateDict, 0, len(f.Tensors))
	for _, t := range f.Tensors {
		e, err := t.StateEntry()
		if err != nil {
			return nil, err
		}
		sd = append(sd, e)
	}
	return sd, nil
}
