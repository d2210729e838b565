package cudaduel

import (
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
)

// phaseTimer times a stretch of an update's device work for SelectAuto's
// and MoveAuto's samples: device events around it on a *cuda.Device, else
// the wall clock (GPUs that finish their work before returning).
type phaseTimer struct {
	start, end *driver.Event
	t0         time.Time
	wall       time.Duration
}

// startPhase marks the start of the work queued next on g.
func startPhase(g cuda.GPU) phaseTimer {
	pt := phaseTimer{t0: time.Now()}
	if d, ok := g.(*cuda.Device); ok {
		if ev, err := d.Record(); err == nil {
			pt.start = ev
		}
	}
	return pt
}

// stop marks the end of the work queued since startPhase.
func (pt *phaseTimer) stop(g cuda.GPU) {
	pt.wall = time.Since(pt.t0)
	if d, ok := g.(*cuda.Device); ok && pt.start != nil {
		if ev, err := d.Record(); err == nil {
			pt.end = ev
		}
	}
}

// read returns the time between the marks, waiting for the device to pass
// the end (the wall clock without events), and closes the events; an
// error is the device's (a fault of the work timed).
func (pt *phaseTimer) read(g cuda.GPU) (time.Duration, error) {
	defer pt.close()
	if pt.start != nil && pt.end != nil {
		if d, ok := g.(*cuda.Device); ok {
			return d.Elapsed(pt.start, pt.end)
		}
	}
	return pt.wall, nil
}

// close closes the events not yet read.
func (pt *phaseTimer) close() {
	for _, ev := range []*driver.Event{pt.start, pt.end} {
		if ev != nil {
			ev.Close()
		}
	}
	pt.start, pt.end = nil, nil
}
