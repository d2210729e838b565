package tensor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/kernels/gemm"
)

func TestSetCPUPrecision(t *testing.T) {
	defer SetCPUPrecision("fp32", "fp32")
	cases := []struct {
		products, convs string
		want            [2]string
		err             string
	}{
		{"fp32", "fp32", [2]string{"fp32", "fp32"}, ""},
		{"bf16", "", [2]string{"bf16", "fp32"}, ""},
		{"", "BF16", [2]string{"bf16", "bf16"}, ""},
		{"fp32", "", [2]string{"fp32", "bf16"}, ""},
		{"tf32", "", [2]string{}, "no TF32"},
		{"", "fp16", [2]string{}, `convolutions "fp16": expected fp32 or bf16`},
	}
	for _, c := range cases {
		err := SetCPUPrecision(c.products, c.convs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("SetCPUPrecision(%q, %q) = %v, want an error containing %q", c.products, c.convs, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("SetCPUPrecision(%q, %q): %v", c.products, c.convs, err)
		}
		if p, cv := CPUPrecisions(); p != c.want[0] || cv != c.want[1] {
			t.Errorf("after SetCPUPrecision(%q, %q): %s, %s, want %v", c.products, c.convs, p, cv, c.want)
		}
	}
}

// TestCPUPrecisionApplies checks that the registered CPU backend's bf16
// products are gemm.SgemmBF16's, bit for bit (MatMul and the Linear
// passes), and that its bf16 convolutions run a bfloat16 algorithm
// (Im2colBF16, DirectBF16 or WinogradBF16) whatever was asked for; fp32
// gives Sgemm's bits again.
func TestCPUPrecisionApplies(t *testing.T) {
	defer SetCPUPrecision("fp32", "fp32")
	r := rand.New(rand.NewPCG(1, 2))
	rs := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	const m, k, n = 13, 37, 21
	a, b := rs(m*k), rs(k*n)
	want := func(mm gemm.Func) []float32 {
		c := make([]float32, m*n)
		mm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		return c
	}
	same := func(name string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
			}
		}
	}
	for _, p := range []string{"bf16", "fp32"} {
		if err := SetCPUPrecision(p, p); err != nil {
			t.Fatal(err)
		}
		mm := gemm.Func(gemm.Sgemm)
		if p == "bf16" {
			mm = gemm.SgemmBF16
		}
		same(p+" MatMul", MatMul(FromSlice(a, m, k), FromSlice(b, k, n)).Data(), want(mm))
		// Linear: y = x W^T with W = b^T stored n x k.
		wt := make([]float32, n*k)
		for i := range k {
			for j := range n {
				wt[j*k+i] = b[i*n+j]
			}
		}
		y := make([]float32, m*n)
		be := cpuBackend.(LinearBackend)
		be.LinearForward(Operand{Buf: Buffer{Host: y}, Shape: []int{m, n}, Strides: []int{n, 1}},
			Operand{Buf: Buffer{Host: a}, Shape: []int{m, k}, Strides: []int{k, 1}},
			Operand{Buf: Buffer{Host: wt}, Shape: []int{n, k}, Strides: []int{k, 1}}, Operand{})
		lw := make([]float32, m*n)
		mm(false, true, m, n, k, 1, a, k, wt, k, 0, lw, n)
		same(p+" LinearForward", y, lw)
		s := ConvShape{N: 2, In: 4, H: 8, W: 8, Out: 4, K: 3, S: 1, P: 1, ChannelMajor: true}
		bf16Algo := func(a conv.Algo) bool {
			return a == conv.Im2colBF16 || a == conv.DirectBF16 || a == conv.WinogradBF16
		}
		for _, c := range []struct{ req, bf16 conv.Algo }{
			{conv.Direct, conv.DirectBF16}, {conv.Im2col, conv.Im2colBF16}, {conv.Auto, 0}, {conv.Winograd, conv.WinogradBF16},
		} {
			al := cpuBackend.(ConvBackend).ConvAlgos(s, c.req)
			for _, a := range []conv.Algo{al.Forward, al.WeightGrad, al.InputGrad} {
				if bf16Algo(a) != (p == "bf16") || p == "bf16" && c.bf16 != 0 && a != c.bf16 {
					t.Errorf("%s: ConvAlgos(%v) = %+v", p, c.req, al)
				}
			}
		}
	}
}

// FuzzParseCPUPrecision: any string parses exactly when it names fp32 or
// bf16 (any case, surrounding spaces), and SetCPUPrecision refuses the
// others with an error rather than a panic, leaving the precisions as
// they were.
func FuzzParseCPUPrecision(f *testing.F) {
	for _, s := range []string{"fp32", "BF16", " bf16 ", "tf32", "", "fp16", "bf16\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		defer SetCPUPrecision("fp32", "fp32")
		bf16, ok := ParseCPUPrecision(s)
		name := strings.ToLower(strings.TrimSpace(s))
		if ok != (name == "fp32" || name == "bf16") || ok && bf16 != (name == "bf16") {
			t.Fatalf("ParseCPUPrecision(%q) = %v, %v", s, bf16, ok)
		}
		SetCPUPrecision("fp32", "fp32")
		err := SetCPUPrecision(s, "")
		if s == "" {
			return // an empty value leaves the precision as it is
		}
		if (err == nil) != ok {
			t.Fatalf("SetCPUPrecision(%q): %v, parse ok %v", s, err, ok)
		}
		want := "fp32"
		if ok && bf16 {
			want = "bf16"
		}
		if p, _ := CPUPrecisions(); p != want {
			t.Fatalf("after SetCPUPrecision(%q): products %s, want %s", s, p, want)
		}
	})
}
