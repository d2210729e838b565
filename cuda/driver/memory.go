package driver

import (
	"fmt"
	"unsafe"
)

// DevicePtr is an address in device memory (a CUdeviceptr).
type DevicePtr uintptr

// Add returns p advanced by n bytes.
func (p DevicePtr) Add(n int) DevicePtr { return p + DevicePtr(n) }

// MemAlloc allocates n bytes of device memory (n > 0).
func (c *Context) MemAlloc(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: cuMemAlloc of %d bytes, expected a positive size", n)
	}
	var p DevicePtr
	err := c.Do(func() error {
		return check("cuMemAlloc", callRaw(lib.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n)))
	})
	if err != nil {
		return 0, fmt.Errorf("%w (allocating %d bytes)", err, n)
	}
	return p, nil
}

// MemFree frees memory returned by MemAlloc.
func (c *Context) MemFree(p DevicePtr) error {
	return c.Do(func() error { return check("cuMemFree", callRaw(lib.cuMemFree, uintptr(p))) })
}

// Memset8 sets n bytes at p to v.
func (c *Context) Memset8(p DevicePtr, v byte, n int) error {
	if n == 0 {
		return nil
	}
	return c.Do(func() error { return check("cuMemsetD8", callRaw(lib.cuMemsetD8, uintptr(p), uintptr(v), uintptr(n))) })
}

// CopyHtoD copies the host slice src to device memory at dst.
func CopyHtoD[T any](c *Context, dst DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	n := len(src) * int(unsafe.Sizeof(src[0]))
	return c.Do(func() error {
		return check("cuMemcpyHtoD", callRaw(lib.cuMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(n)))
	})
}

// CopyDtoH copies device memory at src into the host slice dst.
func CopyDtoH[T any](c *Context, dst []T, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	n := len(dst) * int(unsafe.Sizeof(dst[0]))
	return c.Do(func() error {
		return check("cuMemcpyDtoH", callRaw(lib.cuMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(n)))
	})
}

// CopyDtoD copies n bytes of device memory from src to dst.
func (c *Context) CopyDtoD(dst, src DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	return c.Do(func() error {
		return check("cuMemcpyDtoD", callRaw(lib.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(n)))
	})
}
