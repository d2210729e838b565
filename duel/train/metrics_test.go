package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOpenMetrics checks what resuming keeps of metrics.jsonl: the lines up
// to the checkpoint's step, less a torn last line (a kill while writing it);
// any other line that does not parse is refused, naming the file, the line,
// what was found and what was expected, and the file is left as it was.
func TestOpenMetrics(t *testing.T) {
	const (
		l1 = `{"step":1,"loss":0.5}`
		l2 = `{"step":2,"loss":0.4}`
		l3 = `{"step":3,"loss":0.25}`
		l4 = `{"step":4,"loss":0.2}`
	)
	for _, tc := range []struct {
		name  string
		in    string
		keep  int
		steps []int    // kept, when no error
		want  []string // the error mentions each
	}{
		{"whole", l1 + "\n" + l2 + "\n" + l3 + "\n", 3, []int{1, 2, 3}, nil},
		{"after the checkpoint", l1 + "\n" + l2 + "\n" + l3 + "\n" + l4 + "\n", 2, []int{1, 2}, nil},
		{"torn last line", l1 + "\n" + l2 + "\n" + `{"step":3,"lo`, 3, []int{1, 2}, nil},
		{"torn last line after the checkpoint", l1 + "\n" + l2 + "\n" + l3 + "\n" + `{"st`, 2, []int{1, 2}, nil},
		{"blank lines", l1 + "\n\n" + l2 + "\n  \n", 3, []int{1, 2}, nil},
		{"whole last line without its newline", l1 + "\n" + l2, 3, []int{1, 2}, nil},
		{"empty", "", 3, nil, nil},
		{"garbage line", l1 + "\ngarbage\n" + l3 + "\n" + l4 + "\n", 4, nil, []string{MetricsFile + ":2:", `found "garbage"`, `expected a JSON object with a numeric "step"`}},
		{"garbage last line with its newline", l1 + "\n" + l2 + "\ngarbage\n", 4, nil, []string{MetricsFile + ":3:", `found "garbage"`}},
		{"garbage before the checkpoint's step", "garbage\n" + l2 + "\n", 1, nil, []string{MetricsFile + ":1:"}},
		{"bad field", l1 + "\n" + `{"step":2,"loss":"x"}` + "\n" + l3 + "\n", 3, nil, []string{MetricsFile + ":2:", `found "{\"step\":2,\"loss\":\"x\"}"`}},
		{"no step", l1 + "\n" + `{"loss":0.4}` + "\n" + l3 + "\n", 3, nil, []string{MetricsFile + ":2:", `no "step"`}},
		{"negative step", l1 + "\n" + `{"step":-2}` + "\n" + l3 + "\n", 3, nil, []string{MetricsFile + ":2:", "step -2, expected >= 0"}},
		{"step repeated", l1 + "\n" + l2 + "\n" + l2 + "\n" + l3 + "\n", 3, nil, []string{MetricsFile + ":3:", "step 2 after step 2, expected increasing steps", "two processes"}},
		{"step going back", l1 + "\n" + l3 + "\n" + l2 + "\n", 3, nil, []string{MetricsFile + ":3:", "step 2 after step 3"}},
		{"long line", l1 + "\n" + strings.Repeat("x", 100) + "\n" + l3 + "\n", 3, nil, []string{MetricsFile + ":2:", `found "xxxx`, `x"...,`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MetricsFile)
			if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			ml, err := openMetrics(dir, tc.keep)
			if tc.want != nil {
				if err == nil {
					ml.close()
					t.Fatalf("no error, want one mentioning %q", tc.want)
				}
				for _, w := range append(tc.want, path) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				if b, _ := os.ReadFile(path); string(b) != tc.in {
					t.Errorf("metrics.jsonl changed to %q after the error", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := ml.write(&Metric{Step: tc.keep + 1}); err != nil {
				t.Fatal(err)
			}
			ml.close()
			ms, err := ReadMetrics(dir)
			if err != nil {
				t.Fatalf("metrics.jsonl after resuming: %v", err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Step)
			}
			if want := append(slices.Clone(tc.steps), tc.keep+1); !slices.Equal(got, want) {
				t.Errorf("steps %v, want %v", got, want)
			}
		})
	}
}

// TestReadMetrics checks that ReadMetrics skips a torn last line, as
// duelctl analyze does, and refuses any other bad line.
func TestReadMetrics(t *testing.T) {
	for _, tc := range []struct {
		in    string
		steps []int
		err   string
	}{
		{"{\"step\":1}\n{\"step\":2}\n", []int{1, 2}, ""},
		{"{\"step\":1}\n{\"step\":2}", []int{1, 2}, ""},
		{"{\"step\":1}\n{\"ste", []int{1}, ""},
		{"{\"step\":1}\n{\"ste\n", nil, MetricsFile + ":2: found"},
		{"{\"step\":1}\nnope\n{\"step\":3}\n", nil, MetricsFile + ":2: found \"nope\""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		ms, err := ReadMetrics(dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one mentioning %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var got []int
		for _, m := range ms {
			got = append(got, m.Step)
		}
		if !slices.Equal(got, tc.steps) {
			t.Errorf("%q: steps %v, want %v", tc.in, got, tc.steps)
		}
	}
}

// TestResumeRefusesBadMetrics is the audit's case: line 2 of a 4-step
// run's metrics.jsonl replaced with garbage; resuming to more steps must
// fail naming the file and the line, and leave the run as it was.
func TestResumeRefusesBadMetrics(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "simclr")
	c.Steps, c.LogEvery, c.KNNEvery = 4, 1, 0
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) < 4 {
		t.Fatalf("metrics.jsonl of %d lines, want 4:\n%s", len(lines), b)
	}
	lines[1] = "garbage\n"
	bad := strings.Join(lines, "")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	opts := tinyOptions(dir)
	opts.Resume = true
	c.Steps = 6
	_, err = Train(context.Background(), c, opts)
	if err == nil || !strings.Contains(err.Error(), path+":2: found \"garbage\"") || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("resume: %v, want an error naming %s:2, garbage and what was expected", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != bad {
		t.Errorf("metrics.jsonl changed by the refused resume:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); string(b) != string(config) {
		t.Errorf("config.json changed by the refused resume:\n%s", b)
	}

	// A torn last line (a kill while logging) is still tolerated.
	lines[1] = `{"step":2}` + "\n"
	torn := strings.Join(lines, "") + `{"step":5,"lo`
	if err := os.WriteFile(path, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatalf("resume after a torn last line: %v", err)
	}
	ms, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, m := range ms {
		steps = append(steps, m.Step)
	}
	if want := []int{1, 2, 3, 4, 5, 6}; !slices.Equal(steps, want) {
		t.Errorf("steps %v after resuming, want %v", steps, want)
	}
}

// TestResumeContinuesElapsed: a resumed run's elapsed_s goes on from the
// last line kept at its checkpoint, so the run's wall time does not restart
// at 0 (a sawtooth in the training curves).
func TestResumeContinuesElapsed(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "simclr")
	c.Steps, c.LogEvery, c.KNNEvery = 2, 1, 0
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	ms, err := ReadMetrics(dir)
	if err != nil || len(ms) != 2 {
		t.Fatalf("metrics: %v, %d lines", err, len(ms))
	}
	// Say the first segment took 1000 s.
	path := filepath.Join(dir, MetricsFile)
	var b strings.Builder
	for _, m := range ms {
		m.ElapsedS += 1000
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	resumeTrain(t, c, dir, 4)
	if ms, err = ReadMetrics(dir); err != nil || len(ms) != 4 {
		t.Fatalf("metrics after resuming: %v, %d lines", err, len(ms))
	}
	for _, m := range ms[2:] {
		if !(m.ElapsedS > ms[1].ElapsedS && m.ElapsedS < ms[1].ElapsedS+100) {
			t.Errorf("step %d: elapsed_s %g, want it to go on from step 2's %g", m.Step, m.ElapsedS, ms[1].ElapsedS)
		}
	}
}
