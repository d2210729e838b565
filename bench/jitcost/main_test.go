package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBadInput checks that a bad compute capability and a ptxas that
// does not exist are reported by name, before or at the first module.
func TestRunBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-ptxas")
	for _, c := range []struct {
		name  string
		ptxas string
		cc    int
		want  string
	}{
		{"cc too low", "ptxas", 5, "-cc 5"},
		{"cc too high", "ptxas", 900, "-cc 900"},
		{"no ptxas", missing, 90, missing},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(c.ptxas, c.cc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("run(%q, %d) = %v, want an error naming %q", c.ptxas, c.cc, err, c.want)
			}
		})
	}
}
