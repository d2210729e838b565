package tensor

import (
	"errors"
	"fmt"
)

// DeviceError is the panic value of a Backend method that fails at run
// time: out of device memory, a driver or kernel-launch error. Backend
// methods have no error results because their arguments are checked by
// package tensor before the call; what remains are device failures, which
// a device backend reports by panicking with a *DeviceError wrapping the
// driver's error (its status name and text).
type DeviceError struct {
	Backend string // backend name, e.g. "cuda"
	Op      string // backend method, e.g. "Alloc"
	Err     error  // the driver's error
}

// ErrNoHostStorage is wrapped by the *DeviceError that Data, Storage and Map
// panic with on a tensor whose storage is device memory: a host-side loop
// reached a tensor it cannot read (move it with To(CPU) first, or compute
// through the backend).
var ErrNoHostStorage = errors.New("no host storage")

// Error names the backend, the method and the driver's error.
func (e *DeviceError) Error() string {
	return fmt.Sprintf("tensor: %s backend: %s: %v", e.Backend, e.Op, e.Err)
}

// Unwrap returns the driver's error.
func (e *DeviceError) Unwrap() error { return e.Err }

// CatchDeviceError runs f and returns the *DeviceError it panicked with, so
// that a program's top level can report a device failure as one error
// line. Other panics (programming errors) propagate unchanged.
func CatchDeviceError(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			de, ok := r.(*DeviceError)
			if !ok {
				panic(r)
			}
			err = de
		}
	}()
	f()
	return nil
}
