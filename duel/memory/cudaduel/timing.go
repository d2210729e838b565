package cudaduel

import (
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
)

// duelTiming accumulates the time of Update's phases (benchmarks; permute
// is the move, duel_move or duel_gather; check is the host checking the
// batch before anything is queued: on a GPU, the time the device waits
// for it beyond the previous update's move). On a *cuda.Device, whose
// launches do not wait for their kernels, a phase is timed by events
// recorded on the device's stream around it; on other GPUs (which finish
// the work before returning) by the wall clock.
type duelTiming struct {
	upload, dots, check, selection, permute, download time.Duration
	marks                                             []timeMark // the current update's phase boundaries
}

// timeMark is a phase boundary: a device event, or the wall time.
type timeMark struct {
	at time.Time
	ev *driver.Event
}

// mark records a phase boundary (no-op without timing).
func (m *Memory) mark() {
	if m.timing == nil {
		return
	}
	tm := timeMark{at: time.Now()}
	if d, ok := m.g.(*cuda.Device); ok {
		if ev, err := d.Record(); err == nil {
			tm.ev = ev
		}
	}
	m.timing.marks = append(m.timing.marks, tm)
}

// account adds the phases between the recorded boundaries to the timing,
// in order (check, upload, dots, selection, download, permute), and closes
// the events (no-op without timing).
func (m *Memory) account() {
	if m.timing == nil {
		return
	}
	t := m.timing
	phases := []*time.Duration{&t.check, &t.upload, &t.dots, &t.selection, &t.download, &t.permute}
	d, _ := m.g.(*cuda.Device)
	for i := 1; i < len(t.marks) && i <= len(phases); i++ {
		a, b := t.marks[i-1], t.marks[i]
		dt := b.at.Sub(a.at)
		if d != nil && a.ev != nil && b.ev != nil {
			if e, err := d.Elapsed(a.ev, b.ev); err == nil {
				dt = e
			}
		}
		*phases[i-1] += dt
	}
	for _, tm := range t.marks {
		if tm.ev != nil {
			tm.ev.Close()
		}
	}
	t.marks = t.marks[:0]
}
