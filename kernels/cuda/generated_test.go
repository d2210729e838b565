package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate catches stale PTX without nvcc: every .cu file must
// have a generated module stamped with its current SHA-256.
func TestGeneratedUpToDate(t *testing.T) {
	srcs, err := filepath.Glob("*.cu")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no .cu files found (%v)", err)
	}
	byName := map[string]*Module{}
	for _, m := range Modules() {
		byName[m.Source] = m
	}
	for _, src := range srcs {
		text, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(text)
		m, ok := byName[src]
		switch {
		case !ok:
			t.Errorf("%s has no generated module: run go run ./kernels/cuda/gen (needs nvcc, see docs/cuda.md)", src)
		case m.SHA256 != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since its PTX was generated (SHA-256 %s, generated from %s): run go run ./kernels/cuda/gen (needs nvcc, see docs/cuda.md)",
				src, hex.EncodeToString(sum[:]), m.SHA256)
		}
		delete(byName, src)
	}
	for name := range byName {
		t.Errorf("generated module for %s, which no longer exists: delete zz_generated_%s.go", name, strings.TrimSuffix(name, ".cu"))
	}
}

// TestModulesComplete checks that every module carries PTX for every
// target, that each PTX targets its capability and defines every kernel,
// and that the toolkit is the one the docs name.
func TestModulesComplete(t *testing.T) {
	for _, m := range Modules() {
		if !strings.Contains(m.Toolkit, "release 11.8") {
			t.Errorf("%s: built with %q, expected CUDA 11.8", m.Source, m.Toolkit)
		}
		for _, cc := range []int{60, 70, 80} {
			ptx, ok := m.PTX[cc]
			if !ok {
				t.Errorf("%s: no PTX for sm_%d", m.Source, cc)
				continue
			}
			if !strings.Contains(ptx, fmt.Sprintf(".target sm_%d", cc)) {
				t.Errorf("%s: PTX for sm_%d has another .target", m.Source, cc)
			}
			for _, k := range m.Kernels {
				if !strings.Contains(ptx, ".entry "+k+"(") {
					t.Errorf("%s: PTX for sm_%d lacks kernel %s", m.Source, cc, k)
				}
			}
		}
	}
}

func TestTargets(t *testing.T) {
	m := &Module{PTX: map[int]string{60: "a", 70: "b", 80: "c"}}
	for _, tc := range []struct {
		cc   int
		want string
	}{{50, "[]"}, {61, "[60]"}, {75, "[70 60]"}, {86, "[80 70 60]"}, {90, "[80 70 60]"}} {
		if got := fmt.Sprint(m.Targets(tc.cc)); got != tc.want {
			t.Errorf("Targets(%d) = %s, want %s", tc.cc, got, tc.want)
		}
	}
}
