package tensor_test

import (
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/backendtest"
	"github.com/duel-ssl/duel/tensor/reference"
)

// TestConformance runs the backend conformance suite against every
// registered backend.
func TestConformance(t *testing.T) {
	for _, name := range tensor.Backends() {
		b, err := tensor.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { backendtest.Run(t, b) })
	}
}

// TestReferenceConformance checks the suite against the oracle itself, so a
// broken suite shows up as a failure here too.
func TestReferenceConformance(t *testing.T) { backendtest.Run(t, reference.Backend{}) }
