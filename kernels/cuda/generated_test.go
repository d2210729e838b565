package cuda

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGeneratedUpToDate catches stale PTX without nvcc: every .cu file must
// have a generated module stamped with its current SHA-256 (SourceSHA256:
// its text and the headers it includes).
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
		sum, err := SourceSHA256(src)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := byName[src]
		switch {
		case !ok:
			t.Errorf("%s has no generated module: run go run ./kernels/cuda/gen (needs nvcc, see docs/cuda.md)", src)
		case m.SHA256 != sum:
			t.Errorf("%s or a header it includes changed since its PTX was generated (SHA-256 %s, generated from %s): run go run ./kernels/cuda/gen (needs nvcc, see docs/cuda.md)",
				src, sum, m.SHA256)
		}
		delete(byName, src)
	}
	for name := range byName {
		t.Errorf("generated module for %s, which no longer exists: delete zz_generated_%s.go", name, strings.TrimSuffix(name, ".cu"))
	}
}

// TestModulesComplete checks that every module carries PTX for every
// target from its MinArch on (and none below; sm_90 only for MinArch 90), that each PTX targets its capability and defines every kernel,
// and that the toolkit is the one the docs name.
func TestModulesComplete(t *testing.T) {
	for _, m := range Modules() {
		if m.ArchSpecific {
			checkArchSpecific(t, m)
			continue
		}
		if !strings.Contains(m.Toolkit, "release 11.8") {
			t.Errorf("%s: built with %q, expected CUDA 11.8", m.Source, m.Toolkit)
		}
		for _, cc := range []int{60, 70, 80, 90} {
			if cc == 90 && m.MinArch < 90 { // sm_90 PTX only for a module whose min-arch is 90 (duel_cluster.cu)
				if _, ok := m.PTX[cc]; ok {
					t.Errorf("%s: PTX for sm_90, but min-arch sm_%d (its sm_80 PTX serves sm_90)", m.Source, m.MinArch)
				}
				continue
			}
			if cc < m.MinArch {
				if _, ok := m.PTX[cc]; ok {
					t.Errorf("%s: PTX for sm_%d, below its min-arch sm_%d", m.Source, cc, m.MinArch)
				}
				continue
			}
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

// checkArchSpecific checks an sm_90a module: MinArch 90, PTX for sm_90a
// only (under key 90) from a CUDA 12 toolkit, defining every kernel.
func checkArchSpecific(t *testing.T, m *Module) {
	t.Helper()
	if m.MinArch != 90 || !strings.Contains(m.Toolkit, "release 12.") {
		t.Errorf("%s: arch-specific with min-arch %d built by %q, expected sm_90a from CUDA 12", m.Source, m.MinArch, m.Toolkit)
	}
	if len(m.PTX) != 1 || !strings.Contains(m.PTX[90], ".target sm_90a") {
		t.Errorf("%s: arch-specific PTX for %d targets, expected sm_90a only", m.Source, len(m.PTX))
	}
	for _, k := range m.Kernels {
		if !strings.Contains(m.PTX[90], ".entry "+k+"(") {
			t.Errorf("%s: PTX for sm_90a lacks kernel %s", m.Source, k)
		}
	}
}

// paramSizes returns the byte size of each .param of kernel in ptx.
func paramSizes(ptx, kernel string) ([]int, bool) {
	i := strings.Index(ptx, ".entry "+kernel+"(")
	if i < 0 {
		return nil, false
	}
	j := strings.Index(ptx[i:], ")")
	var sizes []int
	for _, l := range strings.Split(ptx[i:i+j], "\n")[1:] {
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), ","))
		if !strings.HasPrefix(l, ".param") {
			continue
		}
		switch f := strings.Fields(l); {
		case strings.Contains(l, ".b8") && strings.HasSuffix(l, "]"):
			name := f[len(f)-1]
			n, err := strconv.Atoi(name[strings.Index(name, "[")+1 : len(name)-1])
			if err != nil {
				return nil, false
			}
			sizes = append(sizes, n)
		case f[1] == ".u64" || f[1] == ".s64" || f[1] == ".f64" || f[1] == ".b64":
			sizes = append(sizes, 8)
		case f[1] == ".u32" || f[1] == ".s32" || f[1] == ".f32" || f[1] == ".b32":
			sizes = append(sizes, 4)
		default:
			return nil, false
		}
	}
	return sizes, true
}

// TestParamABI checks that every launcher passes parameters of the sizes
// the compiled kernel declares, so that the Go side and the PTX agree
// without a device to run them on.
func TestParamABI(t *testing.T) {
	goSize := map[string]int{"driver.DevicePtr": 8, "int32": 4, "int64": 8, "float32": 4, "float64": 8, "Layout": len(Layout{}.Bytes())}
	for _, m := range Modules() {
		for _, k := range m.Kernels {
			var want []int
			for _, gt := range m.Params[k] {
				n, ok := goSize[gt]
				if !ok {
					t.Fatalf("%s: kernel %s: launcher type %s has no known size", m.Source, k, gt)
				}
				want = append(want, n)
			}
			for cc, ptx := range m.PTX {
				got, ok := paramSizes(ptx, k)
				if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s sm_%d: kernel %s declares parameters of %v bytes, launcher passes %v", m.Source, cc, k, got, want)
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
	wg := &Module{PTX: map[int]string{90: "sm_90a"}, MinArch: 90, ArchSpecific: true}
	for cc, want := range map[int]string{80: "[]", 89: "[]", 90: "[90]", 100: "[]", 120: "[]"} {
		if got := fmt.Sprint(wg.Targets(cc)); got != want {
			t.Errorf("arch-specific Targets(%d) = %s, want %s", cc, got, want)
		}
	}
}
