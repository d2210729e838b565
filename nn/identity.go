package nn

import "github.com/duel-ssl/duel/autograd"

// Identity returns its input, PyTorch's nn.Identity (used to drop a
// classifier head).
type Identity struct{}

// NewIdentity returns an Identity layer.
func NewIdentity() *Identity { return &Identity{} }

// Members returns nil.
func (*Identity) Members() []Member { return nil }

// Forward returns x.
func (*Identity) Forward(_ *autograd.Tape, x *autograd.Var) *autograd.Var { return x }
