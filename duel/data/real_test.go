package data

import (
	"os"
	"testing"
)

// TestRealDatasets opens the fetched datasets under $DUEL_DATA_DIR (a cache
// root, e.g. ~/.cache/duel after `duelctl data fetch ...`) and checks their
// sizes and class counts. It is skipped when the variable is unset; a
// dataset that is not there is skipped too.
func TestRealDatasets(t *testing.T) {
	root := os.Getenv("DUEL_DATA_DIR")
	if root == "" {
		t.Skip("set DUEL_DATA_DIR to a cache root with fetched datasets")
	}
	for _, c := range []struct {
		name        string
		train, test int
		h, w, ch    int
	}{
		{"cifar10", 50000, 10000, 32, 32, 3},
		{"mnist", 60000, 10000, 28, 28, 1},
		{"fashion-mnist", 60000, 10000, 28, 28, 1},
	} {
		for _, train := range []bool{true, false} {
			d, err := Open(c.name, root, train)
			if err != nil {
				t.Logf("%s: skipped: %v", c.name, err)
				break
			}
			want := c.test
			if train {
				want = c.train
			}
			if d.Len() != want || d.H != c.h || d.W != c.w || d.C != c.ch {
				t.Fatalf("%s train=%v: %d images of %dx%dx%d, want %d of %dx%dx%d", c.name, train, d.Len(), d.H, d.W, d.C, want, c.h, c.w, c.ch)
			}
			for k, n := range d.ClassCounts() {
				if n == 0 {
					t.Fatalf("%s train=%v: class %d is empty", c.name, train, k)
				}
			}
		}
	}
}
