package driver

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Module is a loaded CUDA module (PTX JIT-compiled for the device, or a
// cubin/fatbin).
type Module struct {
	h   uintptr
	ctx *Context
}

// Function is a kernel of a loaded module.
type Function struct {
	h    uintptr
	name string
	ctx  *Context
}

// LoadModule loads a PTX text or a cubin/fatbin image into c. A PTX whose
// target is newer than the device fails with CUDA_ERROR_INVALID_PTX or
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION; callers try older targets then.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: cuModuleLoadData: empty image")
	}
	img := make([]byte, len(image)+1) // PTX must be NUL-terminated
	copy(img, image)
	var h uintptr
	err := c.Do(func() error {
		return check("cuModuleLoadData", callRaw(lib.cuModuleLoadData, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&img[0]))))
	})
	if err != nil {
		return nil, err
	}
	return &Module{h: h, ctx: c}, nil
}

// Function returns the kernel called name (its extern "C" name).
func (m *Module) Function(name string) (*Function, error) {
	cname := append([]byte(name), 0)
	var h uintptr
	err := m.ctx.Do(func() error {
		return check("cuModuleGetFunction", callRaw(lib.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0]))))
	})
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	return &Function{h: h, name: name, ctx: m.ctx}, nil
}

// funcAttrMaxDynamicShared is CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
const funcAttrMaxDynamicShared = 8

// SetMaxDynamicShared lets launches of f use up to bytes of dynamic shared
// memory (cuFuncSetAttribute with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES):
// beyond 48 KiB a kernel must opt in, up to the device's
// AttrMaxSharedMemoryPerBlockOptin less its static shared memory.
func (f *Function) SetMaxDynamicShared(bytes int) error {
	if bytes < 0 || bytes > math.MaxInt32 {
		return fmt.Errorf("cuda: kernel %s: %d bytes of dynamic shared memory, expected 0..%d", f.name, bytes, math.MaxInt32)
	}
	err := f.ctx.Do(func() error {
		return check("cuFuncSetAttribute", callRaw(lib.cuFuncSetAttribute, f.h, funcAttrMaxDynamicShared, uintptr(bytes)))
	})
	if err != nil {
		return fmt.Errorf("kernel %s: %w", f.name, err)
	}
	return nil
}

// Unload unloads the module.
func (m *Module) Unload() error {
	return m.ctx.Do(func() error { return check("cuModuleUnload", callRaw(lib.cuModuleUnload, m.h)) })
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z int }

// Launch runs f on grid x block threads with shared bytes of dynamic shared
// memory on the default stream, then waits for it (cuStreamSynchronize), so
// that a failing kernel is reported by the launch that ran it. args are the
// kernel's parameters in order: DevicePtr, int32, uint32, int64, uint64,
// float32, float64, or a []byte holding a struct passed by value.
func (f *Function) Launch(grid, block Dim3, shared int, args ...any) error {
	for _, d := range []struct {
		what string
		v    Dim3
	}{{"grid", grid}, {"block", block}} {
		if d.v.X <= 0 || d.v.Y <= 0 || d.v.Z <= 0 || d.v.X > math.MaxInt32 || d.v.Y > 65535 || d.v.Z > 65535 {
			return fmt.Errorf("cuda: launch %s: bad %s size %v", f.name, d.what, d.v)
		}
	}
	keep, params, err := PackParams(args)
	if err != nil {
		return fmt.Errorf("cuda: launch %s: %w", f.name, err)
	}
	err = f.ctx.Do(func() error {
		err := check("cuLaunchKernel", callRaw(lib.cuLaunchKernel, f.h,
			uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
			uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
			uintptr(shared), 0, uintptr(unsafe.Pointer(&params[0])), 0))
		if err != nil {
			return err
		}
		return check("cuStreamSynchronize", callRaw(lib.cuStreamSynchronize, 0))
	})
	runtime.KeepAlive(keep)
	if err != nil {
		return fmt.Errorf("kernel %s (grid %v, block %v): %w", f.name, grid, block, err)
	}
	return nil
}

// PackParams lays out kernel parameters as cuLaunchKernel's kernelParams:
// each value in a heap block of its own (8-byte aligned, the largest
// alignment a parameter needs), params[i] the address of block i, and a
// final 0. Go's heap does not move; the blocks stay alive as long as keep
// does. Launch uses it; so does the CPU emulator of the tests.
func PackParams(args []any) (keep [][]uint64, params []uintptr, err error) {
	keep = make([][]uint64, len(args))
	params = make([]uintptr, len(args)+1)
	for i, a := range args {
		var b []uint64
		switch v := a.(type) {
		case DevicePtr:
			b = []uint64{uint64(v)}
		case int32:
			b = []uint64{uint64(uint32(v))}
		case uint32:
			b = []uint64{uint64(v)}
		case int64:
			b = []uint64{uint64(v)}
		case uint64:
			b = []uint64{v}
		case float32:
			b = []uint64{uint64(math.Float32bits(v))}
		case float64:
			b = []uint64{math.Float64bits(v)}
		case []byte:
			b = make([]uint64, (len(v)+7)/8+1)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b)*8), v)
		default:
			return nil, nil, fmt.Errorf("parameter %d has unsupported type %T", i, a)
		}
		keep[i] = b
		params[i] = uintptr(unsafe.Pointer(&b[0]))
	}
	return keep, params, nil
}
