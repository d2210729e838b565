package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainNoBarOffTerminal checks that train draws no progress bar (no
// carriage-return frames) when its output goes to a file, as with
// `duelctl train > log 2>&1`, or to a buffer (a pipe), and that the
// per-step log lines are there instead.
func TestTrainNoBarOffTerminal(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (w io.Writer, read func() string)
	}{
		{"file", func(t *testing.T) (io.Writer, func() string) {
			f, err := os.Create(filepath.Join(dir, "log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, func() string {
				b, err := os.ReadFile(f.Name())
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}},
		{"buffer", func(*testing.T) (io.Writer, func() string) {
			var b bytes.Buffer
			return &b, b.String
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, read := tc.open(t)
			args := []string{"duelctl", "train", "--preset", "tiny", "--steps", "2", "--log-every", "1", "--out", filepath.Join(dir, tc.name)}
			code := run(args, w, w) // stdout and stderr into one place, as 2>&1 does
			out := read()
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			if strings.Contains(out, "\r") {
				t.Errorf("output holds carriage returns (a progress bar):\n%q", out)
			}
			if !strings.Contains(out, "step") || !strings.Contains(out, "done:") {
				t.Errorf("output lacks the step log lines:\n%s", out)
			}
		})
	}
}
