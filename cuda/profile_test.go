package cuda

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// TestProfileTop checks Top's truncation and "other" row, the sorting,
// means and shares of setRows, and the table WriteTable prints, on a
// profile built by hand.
func TestProfileTop(t *testing.T) {
	var p Profile
	p.WallMS = 20
	p.setRows([]ProfileRow{
		{Kernel: "b", Module: "b.cu", Calls: 4, TotalMS: 2},
		{Kernel: "a", Module: "a.cu", Calls: 2, TotalMS: 6},
		{Kernel: RowHostToDevice, Calls: 1, TotalMS: 1},
		{Kernel: "c", Module: "c.cu", Calls: 10, TotalMS: 1},
	})
	if p.DeviceMS != 10 {
		t.Fatalf("DeviceMS = %v, want 10", p.DeviceMS)
	}
	var order []string
	for _, r := range p.Kernels {
		order = append(order, r.Kernel)
	}
	if got, want := strings.Join(order, ","), "a,b,"+RowHostToDevice+",c"; got != want {
		t.Errorf("row order %s, want %s (by total, then name)", got, want)
	}
	if r := p.Kernels[0]; r.MeanUS != 3000 || r.Share != 0.6 {
		t.Errorf("row a: mean %v us, share %v; want 3000 and 0.6", r.MeanUS, r.Share)
	}
	for _, tc := range []struct {
		n     int
		rows  []string
		other ProfileRow
	}{
		{-1, []string{"a", "b", RowHostToDevice, "c"}, ProfileRow{}},
		{4, []string{"a", "b", RowHostToDevice, "c"}, ProfileRow{}},
		{9, []string{"a", "b", RowHostToDevice, "c"}, ProfileRow{}},
		{2, []string{"a", "b", RowOther}, ProfileRow{Kernel: RowOther, Module: "2 kernels", Calls: 11, TotalMS: 2, MeanUS: 2000.0 / 11, Share: 0.2}},
		{0, []string{RowOther}, ProfileRow{Kernel: RowOther, Module: "4 kernels", Calls: 17, TotalMS: 10, MeanUS: 10000.0 / 17, Share: 1}},
	} {
		q := p.Top(tc.n)
		var got []string
		sum := 0.0
		for _, r := range q.Kernels {
			got = append(got, r.Kernel)
			sum += r.TotalMS
		}
		if strings.Join(got, ",") != strings.Join(tc.rows, ",") || sum != p.DeviceMS || q.DeviceMS != p.DeviceMS {
			t.Errorf("Top(%d): rows %v summing to %v ms, want %v summing to %v", tc.n, got, sum, tc.rows, p.DeviceMS)
		}
		if tc.other.Kernel != "" {
			o := q.Kernels[len(q.Kernels)-1]
			if o.Kernel != tc.other.Kernel || o.Module != tc.other.Module || o.Calls != tc.other.Calls ||
				math.Abs(o.TotalMS-tc.other.TotalMS) > 1e-12 || math.Abs(o.MeanUS-tc.other.MeanUS) > 1e-9 || math.Abs(o.Share-tc.other.Share) > 1e-12 {
				t.Errorf("Top(%d): other row %+v, want %+v", tc.n, o, tc.other)
			}
		}
	}
	if len(p.Kernels) != 4 {
		t.Errorf("Top changed its receiver's rows: %d", len(p.Kernels))
	}
	var b bytes.Buffer
	if err := p.Top(2).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"kernel", "total ms", "mean us", "share", "a.cu", "60.0%", "2 kernels", "wall 20.000 ms, device 10.000 ms (50.0% of wall"} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
}

// TestProfileNeedsDevice: a backend on the host transcription has no
// events to profile with; StartProfile says so.
func TestProfileNeedsDevice(t *testing.T) {
	be, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.StartProfile(); err == nil || !strings.Contains(err.Error(), "profiling needs a CUDA device") {
		t.Errorf("StartProfile on the host GPU: %v, want an error", err)
	}
}

// TestProfileFakeDriver runs the profiler's device tests in child
// processes on the fake libcuda (TestFakeDriver's): DUEL_CUDA_PROFILE=1
// for the whole process in the second. (TestDeviceProfile runs on a GPU
// too.)
func TestProfileFakeDriver(t *testing.T) {
	lib := cudatest.FakeDriver(t)
	for _, tc := range []struct {
		run string
		env []string
	}{
		{"^TestDeviceProfile$", nil},
		{"^TestFakeDeviceEnvProfile$", []string{EnvProfile + "=1"}},
	} {
		out := runFake(t, lib, tc.run, tc.env...)
		name := strings.Trim(tc.run, "^$")
		if strings.Contains(out, "--- SKIP") || !strings.Contains(out, "--- PASS: "+name) {
			t.Errorf("%s with the fake driver:\n%s", name, out)
		}
		t.Log(out)
	}
}

// profWork queues a known sequence on be: 1 fill_f32 and 2 binary_f32
// launches, a 64-byte copy in, a 64-element allocation (a 256-byte
// memset) released at once, a 16-byte copy out and a Synchronize.
func profWork(t *testing.T, be *Backend, x tensor.Operand) {
	t.Helper()
	be.Fill(x, 2)
	be.Binary(tensor.OpMul, x, x, x)
	be.Binary(tensor.OpAdd, x, x, x)
	be.CopyIn(x.Buf, 0, make([]float32, 16))
	y := be.Alloc(64)
	be.Release(y)
	be.CopyOut(make([]float32, 4), x.Buf, 0)
	if err := be.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// calls returns the calls of each row of p, by kernel name.
func calls(p Profile) map[string]int64 {
	m := map[string]int64{}
	for _, r := range p.Kernels {
		m[r.Kernel] += r.Calls
	}
	return m
}

// sameCalls reports whether got and want hold the same counts.
func sameCalls(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// stop stops s, failing t on an error.
func stop(t *testing.T, s *Profiling) Profile {
	t.Helper()
	p, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// start starts a session on be, failing t on an error.
func start(t *testing.T, be *Backend) *Profiling {
	t.Helper()
	s, err := be.StartProfile()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeviceProfile checks the profiler on a GPU or the fake driver
// (TestProfileFakeDriver's child): the rows and counts of a known sequence
// of operations, totals that add up, no recording outside a session,
// overlapping sessions, the pool of events (a second session creates none)
// and the reading of old events in a long session.
func TestDeviceProfile(t *testing.T) {
	d := needGPU(t)
	be, err := newBackend(d, 64)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.Operand{Buf: be.Alloc(1024), Shape: []int{1024}, Strides: []int{1}}
	profWork(t, be, x) // the allocator's cache now holds y's block
	if d.profiling() != nil {
		t.Fatalf("profiling on before any session")
	}
	created0 := 0 // events of an earlier test's sessions
	if d.profState.p != nil {
		created0 = d.profState.p.created
	}

	s := start(t, be)
	profWork(t, be, x)
	p := stop(t, s)
	want := map[string]int64{"fill_f32": 1, "binary_f32": 2, RowHostToDevice: 1, RowDeviceToHost: 1, RowMemset: 1}
	if got := calls(p); !sameCalls(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	sum, share := 0.0, 0.0
	for _, r := range p.Kernels {
		sum += r.TotalMS
		share += r.Share
		if r.TotalMS < 0 || math.Abs(r.MeanUS-r.TotalMS*1e3/float64(r.Calls)) > 1e-9 {
			t.Errorf("row %+v: negative time or mean not total/calls", r)
		}
		if wantMod := map[bool]string{true: "elementwise.cu", false: ""}[!strings.HasPrefix(r.Kernel, "[")]; r.Module != wantMod {
			t.Errorf("row %s: module %q, want %q", r.Kernel, r.Module, wantMod)
		}
	}
	if math.Abs(sum-p.DeviceMS) > 1e-9 || p.DeviceMS <= 0 || p.DeviceMS > p.WallMS || math.Abs(share-1) > 1e-9 {
		t.Errorf("rows sum to %v ms (shares %v), DeviceMS %v, WallMS %v: want the rows' sum, positive, within the wall time, shares summing to 1",
			sum, share, p.DeviceMS, p.WallMS)
	}
	wantHost := Profile{Launches: 3, HostToDevice: Transfer{1, 64}, DeviceToHost: Transfer{1, 16}, Memsets: Transfer{1, 256}, Syncs: 2,
		Allocator: &ProfileAllocator{Requests: 1, Hits: 1}}
	if p.Launches != wantHost.Launches || p.HostToDevice != wantHost.HostToDevice || p.DeviceToHost != wantHost.DeviceToHost ||
		p.Memsets != wantHost.Memsets || p.Syncs != wantHost.Syncs || p.DeviceAllocs != 0 || p.DeviceFrees != 0 ||
		p.Allocator == nil || *p.Allocator != *wantHost.Allocator || p.ProfilerSyncs != 1 {
		t.Errorf("host counts %+v (allocator %+v), want %+v (allocator %+v), 1 profiler sync", p, p.Allocator, wantHost, wantHost.Allocator)
	}
	if _, err := s.Stop(); err == nil {
		t.Errorf("a second Stop succeeded")
	}
	created := d.profState.p.created
	if created < 12 || created > max(created0, 12) || len(d.profState.p.pool) != created {
		t.Errorf("%d events created (%d before), %d in the pool after Stop: want 12 for 6 operations, all back", created, created0, len(d.profState.p.pool))
	}

	// Off: nothing is recorded, and an empty session is empty.
	profWork(t, be, x)
	if d.profiling() != nil {
		t.Fatal("profiling still on after Stop")
	}
	if p := stop(t, start(t, be)); len(p.Kernels) != 0 || p.Launches != 0 || p.DeviceMS != 0 || p.Syncs != 0 {
		t.Errorf("an empty session after unprofiled work: %+v, want nothing", p)
	}

	// Overlapping sessions, on the pool's events.
	outer := start(t, be)
	profWork(t, be, x)
	inner := start(t, be)
	profWork(t, be, x)
	pi := stop(t, inner)
	if d.profiling() == nil {
		t.Fatal("stopping the inner session stopped the profiling of the outer")
	}
	profWork(t, be, x)
	po := stop(t, outer)
	times := func(k int64) map[string]int64 {
		m := map[string]int64{}
		for n, c := range want {
			m[n] = k * c
		}
		return m
	}
	if got := calls(pi); !sameCalls(got, times(1)) {
		t.Errorf("inner session: %v, want %v", got, times(1))
	}
	if got := calls(po); !sameCalls(got, times(3)) || po.Launches != 9 || po.DeviceMS < pi.DeviceMS {
		t.Errorf("outer session: %v, %d launches, %v ms; want %v, 9 launches, at least the inner's %v ms", got, po.Launches, po.DeviceMS, times(3), pi.DeviceMS)
	}
	if d.profState.p.created != created {
		t.Errorf("%d events created by the later sessions, want none (the pool's)", d.profState.p.created-created)
	}

	// A long session reads its old events as it goes.
	defer func(n int) { harvestAt = n }(harvestAt)
	harvestAt = 4
	s = start(t, be)
	for range 10 {
		be.Fill(x, 1)
	}
	p = stop(t, s)
	if got := calls(p); !sameCalls(got, map[string]int64{"fill_f32": 10}) || p.ProfilerSyncs < 4 {
		t.Errorf("10 fills with harvests at 4: %v, %d profiler syncs; want 10 fill_f32 and at least 3 harvests and Stop's sync", got, p.ProfilerSyncs)
	}
	if n := d.profState.p.created; n > max(created, 2*(harvestAt+1)) {
		t.Errorf("%d events for 10 launches harvested at 4, want at most %d", n, max(created, 2*(harvestAt+1)))
	}
}

// TestFakeDeviceEnvProfile runs with DUEL_CUDA_PROFILE=1 (in
// TestProfileFakeDriver's child): device 0 is profiled from its opening,
// with the registered backend's allocator, and WriteEnvProfile prints the
// table once.
func TestFakeDeviceEnvProfile(t *testing.T) {
	needFake(t)
	be, err := Registered()
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.Operand{Buf: be.Alloc(1024), Shape: []int{1024}, Strides: []int{1}}
	profWork(t, be, x)
	var b bytes.Buffer
	if err := WriteEnvProfile(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{EnvProfile + "=1: profile of device cuda:0", "fill_f32", "binary_f32", RowMemset, "allocator: 2 requests, 0 cache hits, 2 from the device"} {
		if !strings.Contains(out, w) {
			t.Errorf("WriteEnvProfile lacks %q:\n%s", w, out)
		}
	}
	t.Log(out)
	b.Reset()
	if err := WriteEnvProfile(&b); err != nil || b.Len() != 0 {
		t.Errorf("a second WriteEnvProfile: %v, %q; want nothing", err, b.String())
	}
	if be.g.(*Device).profiling() != nil {
		t.Errorf("profiling still on after WriteEnvProfile")
	}
}
