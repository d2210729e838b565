package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"
)

// Readback is page-locked host memory that device memory is copied into
// without the host waiting for the stream: Start queues the copy
// (cuMemcpyDtoHAsync into pinned memory, truly asynchronous) and an event
// after it, and Wait waits for that event alone. Work queued after Start
// keeps the device busy while the host waits for, then reads, the copy;
// CopyFromDevice would have the host wait for the whole stream, so that
// work queued after it starts only once the host has woken up. A Readback
// is not safe for concurrent use.
type Readback struct {
	d       *Device
	buf     []byte
	ev      *driver.Event
	pending int // bytes of the copy Start queued and Wait has not returned (-1: none)
}

// NewReadback returns a Readback of n bytes (n > 0) on d; Close frees it.
func (d *Device) NewReadback(n int) (*Readback, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: readback buffer of %d bytes, expected a positive size", n)
	}
	buf, err := d.ctx.HostAlloc(n)
	if err != nil {
		return nil, err
	}
	ev, err := d.ctx.NewEvent()
	if err != nil {
		d.ctx.FreeHost(buf)
		return nil, err
	}
	return &Readback{d: d, buf: buf, ev: ev, pending: -1}, nil
}

// Len returns the buffer's size in bytes.
func (r *Readback) Len() int { return len(r.buf) }

// Start queues a copy of n bytes of device memory at src into the buffer
// after the work queued before it, and returns without waiting. n is at
// most Len; a copy started before and not yet waited for is replaced.
func (r *Readback) Start(src driver.DevicePtr, n int) error {
	if n < 0 || n > len(r.buf) {
		return fmt.Errorf("cuda: readback of %d bytes into a buffer of %d", n, len(r.buf))
	}
	dst := r.buf[:n]
	copyOut := func() error { return driver.CopyDtoHAsync(r.d.stream, dst, src) }
	var err error
	if p := r.d.profiling(); p != nil {
		err = p.around(keyDtoH, n, copyOut)
	} else {
		err = copyOut()
	}
	if err != nil {
		return err
	}
	if err := r.ev.Record(r.d.stream); err != nil {
		return err
	}
	r.pending = n
	return nil
}

// Wait waits for the copy Start queued (not for the work queued after it)
// and returns its bytes, valid until the next Start or Close. Its error
// may be that of an earlier launch.
func (r *Readback) Wait() ([]byte, error) {
	if r.pending < 0 {
		return nil, fmt.Errorf("cuda: readback waited for with no copy started")
	}
	if p := r.d.profiling(); p != nil {
		p.count(func(c *profCounters) { c.syncs++ })
	}
	n := r.pending
	r.pending = -1
	if err := r.ev.Synchronize(); err != nil {
		return nil, err
	}
	return r.buf[:n], nil
}

// Close frees the buffer and the event, after waiting for the work queued
// on the device (a copy may still be writing the buffer). Closing again
// does nothing.
func (r *Readback) Close() error {
	if r == nil || r.buf == nil {
		return nil
	}
	err := r.d.stream.Synchronize()
	r.ev.Close()
	if ferr := r.d.ctx.FreeHost(r.buf); err == nil {
		err = ferr
	}
	r.buf = nil
	return err
}
