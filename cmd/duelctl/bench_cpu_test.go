package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// TestBenchCPU checks that bench cpu --json ends with one JSON object
// describing internal/cpu's detection.
func TestBenchCPU(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"duelctl", "bench", "cpu", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	t.Log(out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	d := cpu.Detect()
	for _, tc := range []struct {
		key  string
		want any
	}{
		{"vendor", d.Vendor},
		{"family", float64(d.Family)},
		{"model", float64(d.Model)},
		{"brand", d.Brand},
		{"l1d_bytes", float64(d.L1D)},
		{"fma512_units", float64(d.FMA512Units)},
		{"avx2", d.AVX2},
		{"avx512f", d.AVX512F},
		{"key", d.Key()},
		{"isa", cpu.ISA().String()},
		{"best_isa", d.Best().String()},
		{"max_isa", d.Max().String()},
		{"bf16", gemm.ISABF16()},
	} {
		if res[tc.key] != tc.want {
			t.Errorf("%s = %v (%T), want %v", tc.key, res[tc.key], res[tc.key], tc.want)
		}
	}
	if _, ok := res["reported"].(map[string]any); !ok {
		t.Errorf("reported = %v, want an object", res["reported"])
	}
}
