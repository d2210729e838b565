package nn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/duel-ssl/duel/tensor"
)

// StateEntry is one named tensor of a state dict.
type StateEntry struct {
	Name   string
	Tensor *tensor.Tensor
	// Int64 marks tensors PyTorch stores as int64 (num_batches_tracked);
	// the values are integers held as float32.
	Int64 bool
}

// StateDict is an ordered list of named tensors, in PyTorch's state_dict
// order: for each module in pre-order, its parameters then its buffers.
type StateDict []StateEntry

// Get returns the tensor named name.
func (sd StateDict) Get(name string) (*tensor.Tensor, bool) {
	for _, e := range sd {
		if e.Name == name {
			return e.Tensor, true
		}
	}
	return nil, false
}

// Names returns the entry names in order.
func (sd StateDict) Names() []string {
	out := make([]string, len(sd))
	for i, e := range sd {
		out[i] = e.Name
	}
	return out
}

// StateDictOf returns the parameters and buffers of the tree, sharing their
// storage (not copies), named as PyTorch's state_dict names them.
func StateDictOf(m Module) StateDict {
	var out StateDict
	for _, nm := range Modules(m) {
		mbs := nm.Module.Members()
		for _, mb := range mbs {
			if mb.Param != nil {
				out = append(out, StateEntry{Name: join(nm.Name, mb.Name), Tensor: mb.Param.Value})
			}
		}
		for _, mb := range mbs {
			if mb.Buffer != nil {
				out = append(out, StateEntry{Name: join(nm.Name, mb.Name), Tensor: mb.Buffer.Tensor, Int64: mb.Buffer.Int64})
			}
		}
	}
	return out
}

// listedProblems is how many problems of each kind LoadStateDict's error
// names.
const listedProblems = 4

// firstOf joins the first listedProblems items with sep, and says how many
// more there are.
func firstOf(items []string, sep string) string {
	if len(items) <= listedProblems {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(items[:listedProblems], sep), sep, len(items)-listedProblems)
}

// LoadStateDict copies the tensors of sd into the parameters and buffers of
// m with the same names, on m's devices: sources on another device (a
// state read from a file into host memory, a model on a GPU) are copied
// across through the backends. With strict, every name of m must be in sd and
// every name of sd must be in m (num_batches_tracked may be absent from sd,
// as PyTorch allows); without strict, names present on one side only are
// skipped. Shapes must always match. Nothing is modified when an error is
// returned. The error counts every problem and names the first few of
// each kind (listedProblems), so that it stays one readable line.
func LoadStateDict(m Module, sd StateDict, strict bool) error {
	own := StateDictOf(m)
	byName := make(map[string]StateEntry, len(sd))
	for _, e := range sd {
		if _, dup := byName[e.Name]; dup {
			return fmt.Errorf("loading state dict: name %q appears twice", e.Name)
		}
		byName[e.Name] = e
	}
	var missing, mismatched []string
	known := make(map[string]bool, len(own))
	for _, e := range own {
		known[e.Name] = true
		src, ok := byName[e.Name]
		if !ok {
			if strict && !strings.HasSuffix(e.Name, "num_batches_tracked") {
				missing = append(missing, e.Name)
			}
			continue
		}
		if !slices.Equal(src.Tensor.Shape(), e.Tensor.Shape()) {
			mismatched = append(mismatched, fmt.Sprintf("%s: got shape %v, expected %v", e.Name, src.Tensor.Shape(), e.Tensor.Shape()))
		}
	}
	var unexpected []string
	if strict {
		for _, e := range sd {
			if !known[e.Name] {
				unexpected = append(unexpected, e.Name)
			}
		}
	}
	if len(missing)+len(unexpected)+len(mismatched) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("missing %d: %s", len(missing), firstOf(missing, ", ")))
		}
		if len(unexpected) > 0 {
			parts = append(parts, fmt.Sprintf("unexpected %d: %s", len(unexpected), firstOf(unexpected, ", ")))
		}
		if len(mismatched) > 0 {
			parts = append(parts, fmt.Sprintf("shape mismatch %d: %s", len(mismatched), firstOf(mismatched, "; ")))
		}
		return fmt.Errorf("loading state dict: %s", strings.Join(parts, "; "))
	}
	// Bring every source to its destination's device first (a host file
	// onto a device model, a device state onto the CPU), so that a failed
	// transfer leaves m untouched; then copy through the backend.
	srcs := make([]*tensor.Tensor, len(own))
	for i, e := range own {
		src, ok := byName[e.Name]
		if !ok {
			continue
		}
		v, err := src.Tensor.To(e.Tensor.Device())
		if err != nil {
			return fmt.Errorf("loading state dict: %s: %w", e.Name, err)
		}
		srcs[i] = v
	}
	for i, e := range own {
		if srcs[i] != nil {
			tensor.CopyInto(e.Tensor, srcs[i])
		}
	}
	return nil
}

// ToHost returns sd with every tensor on the host: entries already on the
// CPU are shared, the others copied out of their device (Tensor.To), so
// that a model on any device can be written to a file.
func (sd StateDict) ToHost() (StateDict, error) {
	out := make(StateDict, len(sd))
	for i, e := range sd {
		h, err := e.Tensor.To(tensor.CPU)
		if err != nil {
			return nil, fmt.Errorf("copying %s to the host: %w", e.Name, err)
		}
		out[i] = StateEntry{Name: e.Name, Tensor: h, Int64: e.Int64}
	}
	return out, nil
}
