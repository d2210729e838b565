package train

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadConfig feeds arbitrary bytes to the config.json reader: it must
// return a valid configuration or an error, never panic.
func FuzzReadConfig(f *testing.F) {
	c, _ := Preset("cpu-small", "dmoco")
	dir := f.TempDir()
	if err := WriteConfig(dir, &c); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"method": "moco", "batch": -1}`))
	f.Add([]byte(`{"method": "dmoco", "seed": 18446744073709551615}`))
	f.Add([]byte(`[1, 2]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, ConfigFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadConfig(d)
		if err != nil {
			return
		}
		if err := got.ValidateSettings(); err != nil {
			t.Fatalf("ReadConfig accepted an invalid configuration: %v", err)
		}
	})
}

// FuzzReadMetrics feeds arbitrary bytes to the metrics.jsonl reader and to
// the resume truncation, which must keep only well-formed lines of kept
// steps.
func FuzzReadMetrics(f *testing.F) {
	f.Add([]byte("{\"step\":1,\"loss\":2.5,\"lr\":0.1,\"img_per_s\":10}\n{\"step\":2,\"loss\":2.4,\"lr\":0.1,\"img_per_s\":10}\n"), 1)
	f.Add([]byte("{\"step\":1}\n{\"step\":2,\"lo"), 5)
	f.Add([]byte("\n\n{}\n"), 0)
	f.Add([]byte("not json"), 3)
	// A kNN line records the settings it was measured with; an older one
	// lacks them.
	f.Add([]byte("{\"step\":1,\"loss\":2.5,\"knn_top1\":0.25}\n{\"step\":2,\"loss\":2.4,\"knn_top1\":0.5,\"knn\":{\"k\":20,\"temperature\":0.07,\"train\":2000,\"test\":1000}}\n"), 1)
	f.Add([]byte("{\"step\":2,\"knn\":{\"k\":\"x\"}}\n{\"step\":3,\"knn\":null}\n"), 3)
	f.Fuzz(func(t *testing.T, b []byte, keep int) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, MetricsFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		ReadMetrics(d)
		l, err := openMetrics(d, keep)
		if err != nil {
			return
		}
		l.close()
		ms, err := ReadMetrics(d)
		if err != nil {
			t.Fatalf("after truncation: %v", err)
		}
		for _, m := range ms {
			if m.Step > keep {
				t.Fatalf("step %d kept beyond %d", m.Step, keep)
			}
		}
	})
}

// FuzzReadState feeds arbitrary bytes to the checkpoint's state.json reader.
func FuzzReadState(f *testing.F) {
	f.Add([]byte(`{"step": 3, "loss": 1.5, "method": "dmoco", "optimizer": "adam"}`))
	f.Add([]byte(`{"step": -1}`))
	f.Add([]byte(`{"step": 1e99}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, stateFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := readState(d)
		if err == nil && st.Step < 0 {
			t.Fatalf("negative step accepted")
		}
	})
}

// FuzzParseMemTotal feeds arbitrary text to the /proc/meminfo reader: it
// returns 0 or a positive byte count that a MemTotal line of that many kB
// gives back, never panics.
func FuzzParseMemTotal(f *testing.F) {
	f.Add("MemTotal:       24576000 kB\nMemFree: 1 kB\n")
	f.Add("MemTotal: 9223372036854775807 kB\n")
	f.Add("MemTotal: -5 kB")
	f.Add("MemTotal:")
	f.Fuzz(func(t *testing.T, s string) {
		got := parseMemTotal(s)
		if got < 0 || got%1024 != 0 {
			t.Fatalf("parseMemTotal(%q) = %d, expected 0 or a positive multiple of 1024", s, got)
		}
		if got > 0 && parseMemTotal(fmt.Sprintf("MemTotal: %d kB\n", got/1024)) != got {
			t.Fatalf("parseMemTotal(%q) = %d does not round-trip", s, got)
		}
	})
}
