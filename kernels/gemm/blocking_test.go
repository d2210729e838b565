package gemm

import (
	"testing"

	"github.com/duel-ssl/duel/internal/cpu"
)

var (
	zen4 = hardware{l1d: 32 << 10, l2: 1 << 20, l3: 32 << 20, fma512: 1}
	zen5 = hardware{l1d: 48 << 10, l2: 1 << 20, l3: 32 << 20, fma512: 2}
	spr  = hardware{l1d: 48 << 10, l2: 2 << 20, l3: 105 << 20, fma512: 2}
)

// TestDerive pins the blocking the model gives on the CPUs the package
// documentation names, and checks that every derived blocking is valid.
func TestDerive(t *testing.T) {
	unknown := hardwareOf(&cpu.Info{})
	for _, tc := range []struct {
		name   string
		hw     hardware
		mr, nr int
		want   blocking
	}{
		{"zen5 14x32", zen5, 14, 32, blocking{mc: 140, kc: 432, nc: 4032, ns: 288}},
		{"zen4 14x32", zen4, 14, 32, blocking{mc: 224, kc: 288, nc: 4032, ns: 448}},
		{"spr 14x32", spr, 14, 32, blocking{mc: 294, kc: 432, nc: 4032, ns: 576}},
		{"zen5 16x16", zen5, 16, 16, blocking{mc: 160, kc: 384, nc: 4032, ns: 336}},
		{"zen5 6x16", zen5, 6, 16, blocking{mc: 126, kc: 512, nc: 4096, ns: 256}},
		{"zen5 4x4", zen5, 4, 4, blocking{mc: 128, kc: 512, nc: 4096, ns: 256}},
		{"unknown 14x32", unknown, 14, 32, blocking{mc: 112, kc: 288, nc: 3584, ns: 224}},
		{"tiny caches", hardware{l1d: 4 << 10, l2: 64 << 10, l3: 1 << 20, fma512: 1}, 14, 32, blocking{mc: 56, kc: 64, nc: 2048, ns: 128}},
		{"huge L3 (a VM's report)", hardware{l1d: 48 << 10, l2: 1 << 20, l3: 508 << 20, fma512: 2}, 14, 32, blocking{mc: 140, kc: 432, nc: 4032, ns: 288}},
	} {
		got := derive(tc.mr, tc.nr, tc.hw)
		if got != tc.want {
			t.Errorf("%s: derive = %+v, want %+v", tc.name, got, tc.want)
		}
		if !got.valid(tc.mr, tc.nr) {
			t.Errorf("%s: derived blocking %+v is not valid", tc.name, got)
		}
	}
	if unknown != (hardware{l1d: defaultL1D, l2: defaultL2, l3: defaultL3, fma512: 1}) {
		t.Errorf("hardwareOf(zero Info) = %+v", unknown)
	}
}

// TestForRows checks the choice between the 14x32 and 16x16 tiles that the
// model of the FMA pipes and load ports makes.
func TestForRows(t *testing.T) {
	wide := &kernel{name: "wide", mr: 14, nr: 32, lanes: 16}
	narrow := &kernel{name: "narrow", mr: 16, nr: 16, lanes: 16}
	wide.narrow = narrow
	for _, tc := range []struct {
		hw   hardware
		m    int
		want *kernel
	}{
		{zen5, 16, narrow}, {zen5, 32, wide}, {zen5, 64, wide}, {zen5, 14, wide}, {zen5, 1000, wide},
		{zen4, 16, narrow}, {zen4, 32, wide}, {zen4, 8, wide}, {zen4, 28, wide},
	} {
		if got := wide.forRowsOn(tc.m, tc.hw); got != tc.want {
			t.Errorf("fma512=%d m=%d: %s, want %s", tc.hw.fma512, tc.m, got.name, tc.want.name)
		}
	}
}

// TestCrowding checks the L2 set estimate behind packBInstead against a
// direct count, and the decisions it gives on the bench shapes.
func TestCrowding(t *testing.T) {
	count := func(stride, rows, width, sets int) int {
		n := map[int]int{}
		seen := map[int]bool{}
		most := 0
		for i := 0; i < rows; i++ {
			for l := i * stride / 64; l <= (i*stride+width-1)/64; l++ {
				if seen[l] {
					continue
				}
				seen[l] = true
				n[l%sets]++
				most = max(most, n[l%sets])
			}
		}
		return most
	}
	for _, tc := range []struct{ stride, rows, width, sets int }{
		{4096, 432, 1152, 1024}, {2304, 432, 1152, 1024}, {2048, 432, 1152, 1024}, {1024, 432, 1024, 1024},
		{8192, 432, 1152, 1024}, {256, 432, 256, 1024}, {4096, 10, 1152, 1024}, {65536, 100, 128, 2048},
	} {
		got, want := crowding(tc.stride, tc.rows, tc.width, tc.sets), count(tc.stride, tc.rows, tc.width, tc.sets)
		if got < want-1 || got > want+1 {
			t.Errorf("crowding(%d, %d, %d, %d) = %d, direct count %d", tc.stride, tc.rows, tc.width, tc.sets, got, want)
		}
	}
	kn := &kernel{mr: 14, nr: 32, blocking: derive(14, 32, zen5)}
	for _, tc := range []struct {
		m, n, k int
		pack    bool
	}{
		{1024, 1024, 1024, true}, {2048, 2048, 2048, true}, {512, 512, 4608, true},
		{2048, 256, 2304, false}, {32768, 64, 576, false}, {64, 576, 32768, false}, {1000, 1000, 1000, false},
		{128, 1024, 1024, false},
	} {
		p := &problem{m: tc.m, n: tc.n, k: tc.k, ldb: tc.n}
		if got := packBInstead(kn, p, zen5); got != tc.pack {
			t.Errorf("%dx%dx%d: packBInstead = %v, want %v", tc.m, tc.n, tc.k, got, tc.pack)
		}
	}
}
