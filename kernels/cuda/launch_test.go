package cuda

import (
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
)

// recorder is a Launcher that records launches instead of running them.
type recorder struct {
	module, kernel string
	cfg            Config
	args           []any
}

func (r *recorder) Launch(m *Module, kernel string, cfg Config, args ...any) error {
	r.module, r.kernel, r.cfg, r.args = m.Source, kernel, cfg, args
	return nil
}

func cfg(grid, block int) Config {
	return Config{Grid: driver.Dim3{X: grid, Y: 1, Z: 1}, Block: driver.Dim3{X: block, Y: 1, Z: 1}}
}

func TestLauncherChecks(t *testing.T) {
	const p = driver.DevicePtr(0x1000)
	var l Layout
	tests := []struct {
		name string
		call func(Launcher) error
		want string // "" for success
	}{
		{"fill ok", func(r Launcher) error { return FillF32(r, cfg(1, 128), p, 1, l) }, ""},
		{"fill nil dst", func(r Launcher) error { return FillF32(r, cfg(1, 128), 0, 1, l) }, "parameter dst is a nil device pointer"},
		{"fill no grid", func(r Launcher) error { return FillF32(r, cfg(0, 128), p, 1, l) }, "bad grid"},
		{"fill big block", func(r Launcher) error { return FillF32(r, cfg(1, 2048), p, 1, l) }, "bad block"},
		{"reduce partial warp", func(r Launcher) error { return ReduceRowsF32(r, cfg(1, 48), 0, p, p, 1, 1) }, "whole warps"},
		{"reduce ok", func(r Launcher) error { return ReduceRowsF32(r, cfg(3, 64), 0, p, p, 1, 1) }, ""},
		{"sgemm over bounds", func(r Launcher) error {
			return SgemmF32(r, cfg(1, 512), 0, 0, 1, 1, 1, 1, p, 1, 0, p, 1, 0, 0, p, 1, 0, 1)
		}, "1..256 threads"},
		{"duel nil kept", func(r Launcher) error {
			return DuelSelectGlobal(r, cfg(1, 256), p, 1, 1, 1, 1, p, p, p, p, 0, p)
		}, "parameter kept is a nil"},
		{"negative shared", func(r Launcher) error {
			c := cfg(1, 32)
			c.Shared = -1
			return Im2colF32(r, c, p, p, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1)
		}, "shared memory"},
	}
	for _, tc := range tests {
		r := &recorder{}
		err := tc.call(r)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && r.kernel == "":
			t.Errorf("%s: nothing launched", tc.name)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		case tc.want != "" && r.kernel != "":
			t.Errorf("%s: launched %s despite the error", tc.name, r.kernel)
		}
	}
}

func TestLayout(t *testing.T) {
	l, err := NewLayout([]int{2, 3}, []int{5, 0}, []int{3, 1}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if l.N != 6 || l.Rank != 2 || l.Off[0] != 5 || l.Stride[1][0] != 0 || l.Stride[0][0] != 3 {
		t.Errorf("NewLayout: %+v", l)
	}
	if got, want := len(l.Bytes()), 8*(2+MaxDim+3+3*MaxDim); got != want {
		t.Errorf("Bytes: %d bytes, want %d (the C struct)", got, want)
	}
	for _, bad := range []func() error{
		func() error { _, err := NewLayout(make([]int, 9), []int{0}, make([]int, 9)); return err },
		func() error { _, err := NewLayout([]int{2}, []int{0}, []int{1, 1}); return err },
		func() error { _, err := NewLayout([]int{-1}, []int{0}, []int{1}); return err },
		func() error { _, err := NewLayout([]int{1}, []int{0, 0}, []int{1}); return err },
	} {
		if bad() == nil {
			t.Error("NewLayout accepted a bad layout")
		}
	}
}
