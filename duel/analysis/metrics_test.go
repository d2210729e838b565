package analysis

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	in := `{"step": 0, "loss": 4.5, "lr": 0.05, "img_per_s": 100, "phase": "warmup", "memory_class_entropy": null}

{"step": 10, "loss": 4.0, "lr": 0.049, "img_per_s": 120.5, "memory_class_entropy": 2.1, "nested": {"a": 1}}
{"step":20,"loss":3.5,"knn_top1":0.31,"knn":{"k":20,"temperature":0.07,"train":2000,"test":1000}}
`
	m, err := ParseMetrics(strings.NewReader(in), "metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Records) != 3 || m.Truncated {
		t.Fatalf("%d records, truncated %v", len(m.Records), m.Truncated)
	}
	if want := []string{"img_per_s", "loss", "lr", "step", "memory_class_entropy", "knn_top1"}; !slices.Equal(m.Keys, want) {
		t.Errorf("keys %v, expected %v", m.Keys, want)
	}
	steps, vals := m.Series("memory_class_entropy")
	if !slices.Equal(steps, []float64{10}) || !slices.Equal(vals, []float64{2.1}) {
		t.Errorf("series %v %v", steps, vals)
	}
	if v, ok := m.Last("loss"); !ok || v != 3.5 {
		t.Errorf("Last(loss) = %v, %v", v, ok)
	}
	if _, ok := m.Last("nope"); ok {
		t.Error("Last(nope) found")
	}
}

func TestParseMetricsTruncatedLastLine(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader("{\"step\": 1, \"loss\": 2}\n{\"step\": 2, \"lo"), "m")
	if err != nil || len(m.Records) != 1 || !m.Truncated {
		t.Fatalf("%+v, %v", m, err)
	}
	// a complete last line without newline is kept
	m, err = ParseMetrics(strings.NewReader("{\"step\": 1}\n{\"step\": 2}"), "m")
	if err != nil || len(m.Records) != 2 || m.Truncated {
		t.Fatalf("%+v, %v", m, err)
	}
}

func TestParseMetricsBad(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not json", "{\"step\": 1}\nhello\n{\"step\": 2}\n", "m.jsonl:2"},
		{"array", "[1, 2]\n", "m.jsonl:1"},
		{"null", "null\n", "m.jsonl:1"},
		{"no step", "{\"loss\": 1}\n", "step"},
		{"string step", "{\"step\": \"1\"}\n", "step"},
		{"two objects", "{\"step\": 1} {\"step\": 2}\n", "more than one"},
		{"closing brace after", "{\"step\": 1}}\n", "more than one"},
		{"huge number", "{\"step\": 1e999}\n", "finite"},
		{"truncated middle", "{\"step\": 1\n{\"step\": 2}\n", "m.jsonl:1"},
		{"step repeated", "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 2}\n", "m.jsonl:3: step 2 after step 2, expected increasing steps"},
		{"step going back", "{\"step\": 5}\n{\"step\": 2}\n", "m.jsonl:2: step 2 after step 5"},
		{"long line", "{\"step\": 1, \"x\": \"" + strings.Repeat("a", maxMetricsLine) + "\"}\n", "longer"},
	} {
		_, err := ParseMetrics(strings.NewReader(tc.in), "m.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, expected one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestReadMetrics(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(p, []byte("{\"step\": 3, \"loss\": 1.25}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMetrics(p)
	if err != nil || len(m.Records) != 1 || m.Records[0]["loss"] != 1.25 {
		t.Fatalf("%+v, %v", m, err)
	}
	if _, err := ReadMetrics(filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte("{\"step\": 0, \"loss\": 4.5, \"lr\": 0.05}\n{\"step\": 1, \"x\": null}\n"))
	f.Add([]byte("{\"step\": 1e308}\n{\"step\""))
	f.Add([]byte("\n\n{\"step\": -0, \"a\": {\"b\": [1, 2]}}"))
	f.Add([]byte("[]\n"))
	f.Add([]byte("{\"step\": 2, \"knn_top1\": 0.5, \"knn\": {\"k\": 20, \"temperature\": 0.07, \"train\": 2000, \"test\": 1000}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMetrics(strings.NewReader(string(b)), "fuzz.jsonl")
		if err != nil {
			return
		}
		for _, r := range m.Records {
			if _, ok := r["step"]; !ok {
				t.Fatal("record without step")
			}
			for k, v := range r {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s = %v", k, v)
				}
			}
		}
		for _, k := range m.Keys {
			m.Series(k)
		}
	})
}

func TestMetricsUpTo(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(`{"step":1,"loss":4}
{"step":2,"loss":3}
{"step":3,"loss":2}
`), "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step     float64
		n        int
		lastLoss float64
	}{
		{0, 0, 0}, {1, 1, 4}, {2, 2, 3}, {3, 3, 2}, {10, 3, 2},
	} {
		u := m.UpTo(tc.step)
		last, _ := u.Last("loss")
		if len(u.Records) != tc.n || last != tc.lastLoss {
			t.Errorf("UpTo(%v): %d records, last loss %v; expected %d, %v", tc.step, len(u.Records), last, tc.n, tc.lastLoss)
		}
	}
	if len(m.Records) != 3 {
		t.Errorf("UpTo changed m: %d records", len(m.Records))
	}
}
