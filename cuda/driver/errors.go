package driver

import (
	"errors"
	"fmt"
	"unsafe"
)

// Result is a CUresult status code.
type Result int

// Status codes that callers test for.
const (
	Success        Result = 0   // CUDA_SUCCESS
	ErrOutOfMemory Result = 2   // CUDA_ERROR_OUT_OF_MEMORY
	ErrNoDevice    Result = 100 // CUDA_ERROR_NO_DEVICE
	ErrNotInited   Result = 3   // CUDA_ERROR_NOT_INITIALIZED
)

// ErrNoDriver is returned (wrapped) by Load when the driver library
// (libcuda.so.1, or DUEL_CUDA_DRIVER's) cannot be opened, e.g.
//
//	cuda: libcuda.so.1 not found (no NVIDIA driver) [dlopen: ...]: use --device cpu
var ErrNoDriver = errors.New("no NVIDIA driver")

// Error is a failed driver call.
type Error struct {
	Op   string // the driver function, e.g. "cuMemAlloc"
	Code Result // the CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // the driver's description
}

// Error returns "cuda: Op: NAME (text)".
func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%s)", e.Op, e.Name, e.Text)
}

// check turns the status r of the driver call op into an error: nil for
// CUDA_SUCCESS, otherwise an *Error with the status's name and text as the
// driver reports them (or the number alone when even that fails).
func check(op string, r uintptr) error {
	code := Result(int32(r))
	if code == Success {
		return nil
	}
	e := &Error{Op: op, Code: code, Name: fmt.Sprintf("CUresult(%d)", code), Text: "unknown error"}
	if lib.cuGetErrorName != 0 {
		var p uintptr
		if callRaw(lib.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p))) == 0 && p != 0 {
			e.Name = goString(p)
		}
	}
	if lib.cuGetErrorString != 0 {
		var p uintptr
		if callRaw(lib.cuGetErrorString, uintptr(code), uintptr(unsafe.Pointer(&p))) == 0 && p != 0 {
			e.Text = goString(p)
		}
	}
	return e
}

// IsCode reports whether err is a driver *Error with status code c.
func IsCode(err error, c Result) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// goString copies the NUL-terminated C string at p.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	base := *(*unsafe.Pointer)(unsafe.Pointer(&p)) // C memory, not the Go heap
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(base, i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}
