package driver

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Context is a CUDA context on one device: the device's primary context
// (shared with any other user of the driver in the process, as the runtime
// API does) or a context of its own.
type Context struct {
	h       uintptr
	dev     Device
	primary bool
	mu      sync.Mutex // guards closed
	closed  bool
}

// PrimaryContext retains the primary context of d. Release it with Close.
func PrimaryContext(d Device) (*Context, error) {
	var h uintptr
	if err := check("cuDevicePrimaryCtxRetain", callRaw(lib.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&h)), uintptr(d))); err != nil {
		return nil, err
	}
	return &Context{h: h, dev: d, primary: true}, nil
}

// NewContext creates a context of its own on d (flags 0: automatic
// scheduling). Destroy it with Close.
func NewContext(d Device) (*Context, error) {
	var h uintptr
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cuCtxCreate", callRaw(lib.cuCtxCreate, uintptr(unsafe.Pointer(&h)), 0, uintptr(d))); err != nil {
		return nil, err
	}
	return &Context{h: h, dev: d}, nil
}

// Device returns the context's device.
func (c *Context) Device() Device { return c.dev }

// Do runs f with c current on the calling OS thread (the goroutine is locked
// to its thread for the duration). Every method that talks to the device
// goes through Do.
func (c *Context) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("cuda: context of device %d used after Close", c.dev)
	}
	if err := check("cuCtxSetCurrent", callRaw(lib.cuCtxSetCurrent, c.h)); err != nil {
		return err
	}
	return f()
}

// Synchronize waits for all work queued in the context.
func (c *Context) Synchronize() error {
	return c.Do(func() error { return check("cuCtxSynchronize", callRaw(lib.cuCtxSynchronize)) })
}

// Close releases a primary context or destroys an own one. Later calls do
// nothing.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.primary {
		return check("cuDevicePrimaryCtxRelease", callRaw(lib.cuDevicePrimaryCtxRelease, uintptr(c.dev)))
	}
	return check("cuCtxDestroy", callRaw(lib.cuCtxDestroy, c.h))
}
