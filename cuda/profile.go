package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// EnvProfile is the environment variable that profiles a whole process:
// with DUEL_CUDA_PROFILE=1, device 0 is profiled from when it is opened
// (Default, and so Available) until WriteEnvProfile reports it (duelctl
// does on exit, to stderr).
const EnvProfile = "DUEL_CUDA_PROFILE"

// Names of the rows of copies and memsets in a Profile (they have no
// module).
const (
	RowHostToDevice = "[memcpy HtoD]"
	RowDeviceToHost = "[memcpy DtoH]"
	RowMemset       = "[memset]"
)

// harvestAt is the number of profiled operations whose events wait to be
// read before the profiler reads the older half of them (waiting for the
// last of that half, which a GPU has long passed by then: the host is at
// most about a thousand launches ahead). It bounds the events in use. (A
// variable for the tests.)
var harvestAt = 1 << 13

// profKey identifies a row of a profile: a kernel of a module, or a copy
// (mod nil, name one of the Row constants).
type profKey struct {
	mod  *kc.Module
	name string
}

// profTotal is the accumulated device time of a row.
type profTotal struct {
	calls int64
	total time.Duration
}

// profRecord is a profiled operation whose events are not read yet.
type profRecord struct {
	key        profKey
	start, end *driver.Event
}

// profCounters are the host-side counts of a profiler, cumulative over its
// life (a session reports its difference).
type profCounters struct {
	launches      int64
	htod, dtoh    Transfer
	memset        Transfer
	syncs         int64 // stream synchronisations: Synchronize, CopyFromDevice, Free
	deviceAllocs  int64 // Device.Alloc calls (cuMemAlloc)
	deviceFrees   int64 // Device.Free calls (cuMemFree, after a synchronisation)
	profilerSyncs int64 // the profiler's own waits (session boundaries, harvests)
	overhead      time.Duration
}

// profiler times the kernels and copies queued on a Device: each one
// between two events recorded on the stream. Events come from a pool and
// return to it once read, so that a steady state allocates none. A
// Device's profiler exists from its first session on and is active (the
// Device's prof pointer is set) while a session is open.
type profiler struct {
	d  *Device
	mu sync.Mutex

	sessions int
	pool     []*driver.Event
	created  int // events created (the pool's size plus those pending)
	pending  []profRecord
	totals   map[profKey]*profTotal
	c        profCounters
	err      error // the first failure of reading the events
}

// around runs op, a launch or copy of bytes bytes queued on the device's
// stream, between two events, and counts it as k. The lock is held
// throughout, so that the events of concurrent operations do not
// interleave.
func (p *profiler) around(k profKey, bytes int, op func() error) error {
	t0 := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) >= harvestAt {
		p.c.profilerSyncs++
		p.harvest(len(p.pending) / 2)
	}
	start, err := p.event()
	if err != nil {
		return err
	}
	end, err := p.event()
	if err != nil {
		p.pool = append(p.pool, start)
		return err
	}
	if err := start.Record(p.d.stream); err != nil {
		p.pool = append(p.pool, start, end)
		return err
	}
	t1 := time.Now()
	err = op()
	t2 := time.Now()
	if err == nil {
		err = end.Record(p.d.stream)
	}
	if err != nil {
		p.pool = append(p.pool, start, end)
		return err
	}
	p.pending = append(p.pending, profRecord{k, start, end})
	switch {
	case k.mod != nil:
		p.c.launches++
	case k.name == RowHostToDevice:
		p.c.htod.add(bytes)
	case k.name == RowDeviceToHost:
		p.c.dtoh.add(bytes)
	case k.name == RowMemset:
		p.c.memset.add(bytes)
	}
	p.c.overhead += t1.Sub(t0) + time.Since(t2)
	return nil
}

// event returns an event of the pool, or a new one.
func (p *profiler) event() (*driver.Event, error) {
	if n := len(p.pool); n > 0 {
		e := p.pool[n-1]
		p.pool = p.pool[:n-1]
		return e, nil
	}
	e, err := p.d.ctx.NewEvent()
	if err == nil {
		p.created++
	}
	return e, err
}

// harvest reads the oldest n pending records into the totals, waiting for
// the last of them (the caller counts the wait), and returns their events to the pool. A failure (an
// earlier kernel's, which the next waiting call reports too) is kept for
// the session's Stop and drops the records.
func (p *profiler) harvest(n int) {
	if n == 0 {
		return
	}
	err := p.pending[n-1].end.Synchronize()
	for _, r := range p.pending[:n] {
		if err == nil {
			var dt time.Duration
			if dt, err = r.end.Since(r.start); err == nil {
				t := p.totals[r.key]
				if t == nil {
					t = &profTotal{}
					p.totals[r.key] = t
				}
				t.calls++
				t.total += dt
			}
		}
		p.pool = append(p.pool, r.start, r.end)
	}
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("cuda: profiler: reading the events: %w", err)
	}
	p.pending = append(p.pending[:0], p.pending[n:]...)
}

// sync waits for the device's stream and reads every pending record.
func (p *profiler) sync() error {
	p.c.profilerSyncs++
	if err := p.d.stream.Synchronize(); err != nil {
		return err
	}
	p.harvest(len(p.pending))
	return nil
}

// count changes the host counters under the lock (f: one increment).
func (p *profiler) count(f func(c *profCounters)) {
	p.mu.Lock()
	f(&p.c)
	p.mu.Unlock()
}

// profiling returns the device's active profiler, or nil: the whole cost
// of profiling off is this atomic load.
func (d *Device) profiling() *profiler { return d.prof.Load() }

// Row keys of the copies and memsets.
var (
	keyHtoD   = profKey{name: RowHostToDevice}
	keyDtoH   = profKey{name: RowDeviceToHost}
	keyMemset = profKey{name: RowMemset}
)

// profState is the per-Device state of profiling (a field of Device,
// beside its prof pointer, set while a session is open).
type profState struct {
	mu sync.Mutex
	p  *profiler // created by the first session, kept for its pool
}

// Profiling is an open profiling session of a Device (StartProfile):
// every kernel launch, copy and memset queued on the device until Stop is
// timed on the device with a pair of events. Sessions may overlap (e.g.
// DUEL_CUDA_PROFILE's around a command and bench step --profile's around
// its timed steps): each reports what happened between its start and its
// stop.
type Profiling struct {
	d       *Device
	mem     *Allocator // nil: no allocator counters
	mem0    AllocatorStats
	t0      time.Time
	totals  map[profKey]profTotal
	c       profCounters
	waits0  int64 // the device's staging waits at the start
	stopped bool
}

// StartProfile opens a profiling session on d: it waits for the work
// queued so far (so that the session's wall time starts with an idle
// device) and from then on times each launch and copy on the device. Stop
// the session to get its Profile.
func (d *Device) StartProfile() (*Profiling, error) {
	d.profState.mu.Lock()
	defer d.profState.mu.Unlock()
	p := d.profState.p
	if p == nil {
		p = &profiler{d: d, totals: map[profKey]*profTotal{}}
		d.profState.p = p
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.sync(); err != nil {
		return nil, fmt.Errorf("cuda: StartProfile: %w", err)
	}
	p.sessions++
	d.prof.Store(p)
	s := &Profiling{d: d, totals: make(map[profKey]profTotal, len(p.totals)), c: p.c, waits0: d.stagingWaits()}
	for k, t := range p.totals {
		s.totals[k] = *t
	}
	s.t0 = time.Now()
	return s, nil
}

// StartProfile opens a profiling session on the backend's device
// ((*Device).StartProfile) whose Profile also counts the requests to the
// backend's caching allocator. It fails on a backend that does not run on
// a *Device (the tests' host GPUs).
func (be *Backend) StartProfile() (*Profiling, error) {
	d, ok := be.g.(*Device)
	if !ok {
		return nil, fmt.Errorf("cuda: StartProfile: profiling needs a CUDA device (events), the backend runs on %T", be.g)
	}
	s, err := d.StartProfile()
	if err != nil {
		return nil, err
	}
	s.mem, s.mem0 = be.mem, be.mem.Stats()
	return s, nil
}

// Stop waits for the work queued on the device, reads the events of the
// session and closes it. The Profile's rows are sorted by total device
// time, largest first. A second Stop returns an error.
func (s *Profiling) Stop() (Profile, error) {
	d := s.d
	d.profState.mu.Lock()
	defer d.profState.mu.Unlock()
	if s.stopped {
		return Profile{}, errors.New("cuda: Profiling.Stop: the session is already stopped")
	}
	s.stopped = true
	p := d.profState.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sessions--
	if p.sessions == 0 {
		d.prof.Store(nil)
	}
	syncErr := p.sync()
	wall := time.Since(s.t0)
	if syncErr != nil {
		return Profile{}, fmt.Errorf("cuda: Profiling.Stop: %w", syncErr)
	}
	if p.err != nil {
		err := p.err
		if p.sessions == 0 {
			p.err = nil
		}
		return Profile{}, err
	}
	var rows []ProfileRow
	for k, t := range p.totals {
		t0 := s.totals[k]
		if n := t.calls - t0.calls; n > 0 {
			r := ProfileRow{Kernel: k.name, Calls: n, TotalMS: ms(t.total - t0.total)}
			if k.mod != nil {
				r.Module = k.mod.Source
			}
			rows = append(rows, r)
		}
	}
	c, c0 := p.c, s.c
	prof := Profile{
		WallMS:        ms(wall),
		Launches:      c.launches - c0.launches,
		HostToDevice:  c.htod.sub(c0.htod),
		DeviceToHost:  c.dtoh.sub(c0.dtoh),
		Memsets:       c.memset.sub(c0.memset),
		Syncs:         c.syncs - c0.syncs,
		StagingWaits:  d.stagingWaits() - s.waits0,
		DeviceAllocs:  c.deviceAllocs - c0.deviceAllocs,
		DeviceFrees:   c.deviceFrees - c0.deviceFrees,
		ProfilerSyncs: c.profilerSyncs - c0.profilerSyncs,
		ProfilerMS:    ms(c.overhead - c0.overhead),
	}
	if s.mem != nil {
		st := s.mem.Stats()
		prof.Allocator = &ProfileAllocator{
			Requests:     st.Requests - s.mem0.Requests,
			Hits:         st.Hits - s.mem0.Hits,
			DeviceAllocs: st.DeviceAllocs - s.mem0.DeviceAllocs,
			DeviceFrees:  st.DeviceFrees - s.mem0.DeviceFrees,
		}
	}
	prof.setRows(rows)
	return prof, nil
}

// stagingWaits returns the number of times CopyToDevice waited for a
// pinned staging buffer.
func (d *Device) stagingWaits() int64 {
	d.staging.mu.Lock()
	defer d.staging.mu.Unlock()
	return d.staging.waits
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Transfer counts copies (or memsets): how many and their bytes.
type Transfer struct {
	Count int64 `json:"count"`
	Bytes int64 `json:"bytes"`
}

// add counts one transfer of n bytes.
func (t *Transfer) add(n int) { t.Count++; t.Bytes += int64(n) }

// sub returns t - u.
func (t Transfer) sub(u Transfer) Transfer { return Transfer{t.Count - u.Count, t.Bytes - u.Bytes} }

// ProfileRow is the device time of one kernel (or of the copies of one
// direction, or the memsets: Kernel is then a Row constant and Module
// empty) over a profiled interval.
type ProfileRow struct {
	Kernel  string  `json:"kernel"`
	Module  string  `json:"module,omitempty"` // the .cu source
	Calls   int64   `json:"calls"`
	TotalMS float64 `json:"total_ms"`
	MeanUS  float64 `json:"mean_us"`
	Share   float64 `json:"share"` // of the profile's DeviceMS, in [0, 1]
}

// ProfileAllocator counts the requests to a backend's caching allocator
// during a profiled interval.
type ProfileAllocator struct {
	Requests     int64 `json:"requests"`      // allocations asked of the allocator
	Hits         int64 `json:"hits"`          // of them, served from its cache
	DeviceAllocs int64 `json:"device_allocs"` // of them, served by cuMemAlloc
	DeviceFrees  int64 `json:"device_frees"`  // blocks returned to the device (EmptyCache, out-of-memory retries)
}

// Profile is what a profiling session saw: the device time of each kernel
// and of the copies, and what the host did. DeviceMS is the sum of the
// rows: the device is idle (waiting for launches, copies or the host) for
// about WallMS - DeviceMS of the interval, which is where launch overhead
// and host stalls show. The profiler's own event records cost the host
// ProfilerMS (a few microseconds per launch), counted in WallMS.
type Profile struct {
	WallMS        float64           `json:"wall_ms"`       // host time from StartProfile to Stop
	DeviceMS      float64           `json:"device_ms"`     // device time of the rows, summed
	Kernels       []ProfileRow      `json:"kernels"`       // largest total first
	Launches      int64             `json:"launches"`      // kernel launches
	HostToDevice  Transfer          `json:"htod"`          // CopyToDevice calls
	DeviceToHost  Transfer          `json:"dtoh"`          // CopyFromDevice calls
	Memsets       Transfer          `json:"memsets"`       // Zero calls
	Syncs         int64             `json:"syncs"`         // stream synchronisations asked by callers (Synchronize, CopyFromDevice, Free)
	StagingWaits  int64             `json:"staging_waits"` // waits of CopyToDevice for a pinned staging buffer the device still read
	DeviceAllocs  int64             `json:"device_allocs"` // cuMemAlloc calls (Device.Alloc)
	DeviceFrees   int64             `json:"device_frees"`  // cuMemFree calls (Device.Free, each after a synchronisation)
	Allocator     *ProfileAllocator `json:"allocator,omitempty"`
	ProfilerSyncs int64             `json:"profiler_syncs"` // the profiler's own waits
	ProfilerMS    float64           `json:"profiler_ms"`    // host time spent recording the events
}

// setRows sets the rows, their means and shares and DeviceMS, sorted by
// total time (largest first, then by name).
func (p *Profile) setRows(rows []ProfileRow) {
	p.DeviceMS = 0
	for _, r := range rows {
		p.DeviceMS += r.TotalMS
	}
	for i := range rows {
		r := &rows[i]
		if r.Calls > 0 {
			r.MeanUS = r.TotalMS * 1e3 / float64(r.Calls)
		}
		if p.DeviceMS > 0 {
			r.Share = r.TotalMS / p.DeviceMS
		}
	}
	slices.SortFunc(rows, func(a, b ProfileRow) int {
		if c := cmp.Compare(b.TotalMS, a.TotalMS); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Kernel, b.Kernel), cmp.Compare(a.Module, b.Module))
	})
	p.Kernels = rows
}

// RowOther is the Kernel of the row Top puts in place of the rows it
// drops.
const RowOther = "other"

// Top returns p with its first n rows and, when there are more, one row
// RowOther that sums the rest (its Module says how many kernels).
func (p Profile) Top(n int) Profile {
	if n < 0 || len(p.Kernels) <= n {
		return p
	}
	rows := slices.Clone(p.Kernels[:n])
	o := ProfileRow{Kernel: RowOther, Module: fmt.Sprintf("%d kernels", len(p.Kernels)-n)}
	for _, r := range p.Kernels[n:] {
		o.Calls += r.Calls
		o.TotalMS += r.TotalMS
		o.Share += r.Share
	}
	if o.Calls > 0 {
		o.MeanUS = o.TotalMS * 1e3 / float64(o.Calls)
	}
	p.Kernels = append(rows, o)
	return p
}

// WriteTable writes p as text: its rows in order, then the totals and the
// host-side counts.
func (p Profile) WriteTable(w io.Writer) error {
	kw, mw := len("kernel"), len("module")
	for _, r := range p.Kernels {
		kw, mw = max(kw, len(r.Kernel)), max(mw, len(r.Module))
	}
	var err error
	pr := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	pr("%-*s  %-*s  %8s  %10s  %10s  %6s\n", kw, "kernel", mw, "module", "calls", "total ms", "mean us", "share")
	for _, r := range p.Kernels {
		pr("%-*s  %-*s  %8d  %10.3f  %10.1f  %5.1f%%\n", kw, r.Kernel, mw, r.Module, r.Calls, r.TotalMS, r.MeanUS, 100*r.Share)
	}
	busy := 0.0
	if p.WallMS > 0 {
		busy = 100 * p.DeviceMS / p.WallMS
	}
	pr("wall %.3f ms, device %.3f ms (%.1f%% of wall; %.3f ms without a profiled kernel or copy running); profiler's own host time %.3f ms\n",
		p.WallMS, p.DeviceMS, busy, p.WallMS-p.DeviceMS, p.ProfilerMS)
	pr("host: %d launches; HtoD %d copies (%s); DtoH %d copies (%s); %d memsets (%s); %d synchronisations, %d staging waits; %d cuMemAlloc, %d cuMemFree",
		p.Launches, p.HostToDevice.Count, byteSize(p.HostToDevice.Bytes), p.DeviceToHost.Count, byteSize(p.DeviceToHost.Bytes),
		p.Memsets.Count, byteSize(p.Memsets.Bytes), p.Syncs, p.StagingWaits, p.DeviceAllocs, p.DeviceFrees)
	if a := p.Allocator; a != nil {
		pr("; allocator: %d requests, %d cache hits, %d from the device, %d returned", a.Requests, a.Hits, a.DeviceAllocs, a.DeviceFrees)
	}
	pr("\n")
	return err
}

// byteSize formats n bytes with a binary unit.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// envProfiling is the session DUEL_CUDA_PROFILE opened on device 0 (nil
// when it is unset or the device is unusable).
var envProfiling struct {
	mu sync.Mutex
	s  *Profiling
}

// envProfileTop is the number of rows WriteEnvProfile prints.
const envProfileTop = 25

// startEnvProfile opens the session of DUEL_CUDA_PROFILE=1 on d.
func startEnvProfile(d *Device) {
	if os.Getenv(EnvProfile) != "1" {
		return
	}
	s, err := d.StartProfile()
	if err != nil {
		fmt.Fprintf(os.Stderr, "duel: %s=1: %v\n", EnvProfile, err)
		return
	}
	envProfiling.mu.Lock()
	envProfiling.s = s
	envProfiling.mu.Unlock()
}

// attachEnvProfile adds the allocator counters of be, registered on the
// profiled device, to DUEL_CUDA_PROFILE's session (be was created after it
// started: its counters so far are all the session's).
func attachEnvProfile(be *Backend) {
	envProfiling.mu.Lock()
	defer envProfiling.mu.Unlock()
	if s := envProfiling.s; s != nil && be.g == s.d {
		s.mem = be.mem
	}
}

// WriteEnvProfile stops the session DUEL_CUDA_PROFILE=1 opened when device
// 0 was opened and writes its profile to w (the 25 largest rows and
// "other"); it does nothing when there is none (the variable unset, the
// device never opened, or already written). Programs call it on exit.
func WriteEnvProfile(w io.Writer) error {
	envProfiling.mu.Lock()
	s := envProfiling.s
	envProfiling.s = nil
	envProfiling.mu.Unlock()
	if s == nil {
		return nil
	}
	p, err := s.Stop()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%s=1: profile of device %v over the process:\n", EnvProfile, s.d); err != nil {
		return err
	}
	return p.Top(envProfileTop).WriteTable(w)
}
