package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `// header
// y = a*x
extern "C" __global__ void __launch_bounds__(256) axpy_f32(float* y, const float* x, float a, long long n, Layout L) {
    y[0] = __shfl_down_sync(0xffffffffu, x[0], 1);
}

// z = 0
extern "C" __global__ void zero(int* z) { z[0] = 0; }
`
	ks, err := parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 {
		t.Fatalf("parsed %d kernels, want 2", len(ks))
	}
	k := ks[0]
	if k.name != "axpy_f32" || k.comment != "y = a*x" || k.bounds != 256 || !k.warps || len(k.params) != 5 {
		t.Errorf("kernel 0 = %+v", k)
	}
	want := []param{{"float*", "y"}, {"const float*", "x"}, {"float", "a"}, {"long long", "n"}, {"Layout", "L"}}
	for i, p := range want {
		if k.params[i] != p {
			t.Errorf("param %d = %+v, want %+v", i, k.params[i], p)
		}
	}
	if z := ks[1]; z.name != "zero" || z.bounds != 1024 || z.warps {
		t.Errorf("kernel 1 = %+v", z)
	}
	for _, b := range []string{"0", "2048", "99999999999999999999"} {
		bad := "// z = 0\nextern \"C\" __global__ void __launch_bounds__(" + b + ") zero(int* z) { z[0] = 0; }\n"
		if _, err := parse(bad); err == nil || !strings.Contains(err.Error(), "__launch_bounds__("+b+")") {
			t.Errorf("__launch_bounds__(%s): %v, want an error naming it", b, err)
		}
	}
}

// TestParseCluster: a __cluster_dims__ after the launch bounds is not the
// kernel's name.
func TestParseCluster(t *testing.T) {
	ks, err := parse("// c = 1\nextern \"C\" __global__ void __launch_bounds__(1024, 1) __cluster_dims__(CLUSTER, 1, 1) sel(int* c, long long n) { c[0] = 1; }\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || ks[0].name != "sel" || ks[0].bounds != 1024 || len(ks[0].params) != 2 || ks[0].comment != "c = 1" {
		t.Errorf("parsed %+v", ks)
	}
}

func TestParseBad(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"none", "int x;", "no extern"},
		{"no comment", "int x;\nextern \"C\" __global__ void k(int a) {}", "no one-line math comment"},
		{"bad param", "// c\nextern \"C\" __global__ void k(a) {}", "cannot parse parameter"},
	} {
		if _, err := parse(tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, _, _, err := goType("short", "s"); err == nil || !strings.Contains(err.Error(), `unsupported C type "short"`) {
		t.Errorf("goType(short): %v", err)
	}
}

func TestPtxasSummary(t *testing.T) {
	ok := "ptxas info    : Compiling entry function 'k' for 'sm_80'\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 32 registers, 440 bytes cmem[0]\n"
	var w bytes.Buffer
	if err := ptxasSummary(&w, "k.cu", "sm_80", ok); err != nil || !strings.Contains(w.String(), "k.cu             k                sm_80   32 registers") {
		t.Errorf("summary %q, err %v", w.String(), err)
	}
	spill := strings.Replace(ok, "0 bytes spill stores", "8 bytes spill stores", 1)
	if err := ptxasSummary(&w, "k.cu", "sm_80", spill); err == nil || !strings.Contains(err.Error(), "kernel k spills") {
		t.Errorf("spilling kernel: %v", err)
	}
}

func TestCamel(t *testing.T) {
	for in, want := range map[string]string{"duel_update": "DuelUpdate", "im2col_f32": "Im2colF32", "x": "X", "a__b": "AB"} {
		if got := camel(in); got != want {
			t.Errorf("camel(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse checks that parse never panics and that what it accepts maps
// to Go types or fails with an error.
func FuzzParse(f *testing.F) {
	f.Add("// c\nextern \"C\" __global__ void k(float* a, int n) {}")
	f.Add("// c\nextern \"C\" __global__ void __launch_bounds__(64) k(const double* a, long long n, Layout L) { __shfl_down_sync(); }")
	f.Add("extern \"C\" __global__ void k(,) {}")
	f.Add("// c\nextern \"C\" __global__ void k() {}")
	f.Fuzz(func(t *testing.T, src string) {
		ks, err := parse(src)
		if err != nil {
			return
		}
		for _, k := range ks {
			if k.name == "" {
				t.Fatalf("kernel without a name from %q", src)
			}
			for _, p := range k.params {
				goType(p.ctype, p.name)
			}
			camel(k.name)
		}
	})
}

func TestMinArch(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
		err  bool
	}{
		{"// x\nextern \"C\" __global__ void k() {}", 0, false},
		{"// tensor cores\n// gen: min-arch 80\n", 80, false},
		{"// gen: min-arch 75\n", 0, true},
		{"// clusters\n// gen: min-arch 90\n", 90, false},
		{"// gen: min-arch 100\n", 0, true},
		{"  // gen: min-arch 80 (indented: not a directive)\n", 0, false},
	} {
		got, err := minArch(tc.src)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("minArch(%q) = %d, %v; want %d, error %v", tc.src, got, err, tc.want, tc.err)
		}
	}
}

func TestArchSpecific(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"// wgmma\n// gen: arch 90a\n", true},
		{"// gen: arch 90a  \n", true},
		{"// gen: arch 90\n", false},
		{"  // gen: arch 90a (indented: not a directive)\n", false},
		{"// gen: min-arch 90\n", false},
	} {
		if got := archSpecificRE.MatchString(tc.src); got != tc.want {
			t.Errorf("archSpecificRE on %q = %v, want %v", tc.src, got, tc.want)
		}
	}
	for _, tc := range []struct {
		toolkit string
		want    bool
	}{
		{"Cuda compilation tools, release 11.8, V11.8.89", false},
		{"Cuda compilation tools, release 12.4, V12.4.131", true},
		{"Cuda compilation tools, release 13.0, V13.0.48", true},
		{"no release", false},
	} {
		if got := cuda12(tc.toolkit); got != tc.want {
			t.Errorf("cuda12(%q) = %v, want %v", tc.toolkit, got, tc.want)
		}
	}
}
