package cuda

import (
	"fmt"
	"runtime"

	"github.com/duel-ssl/duel/cuda/driver"
)

// devBuf is the device storage behind a tensor.Buffer's Dev handle: n
// float32 elements at ptr (ptr is 0 when n is 0). The memory is freed when
// the handle becomes unreachable.
type devBuf struct {
	ptr driver.DevicePtr
	n   int
	dev *Device
}

// at returns the address of element off.
func (b *devBuf) at(off int) driver.DevicePtr { return b.ptr.Add(4 * off) }

// allocFloats returns zeroed device storage for n float32 values, freed by
// a cleanup when the returned handle is unreachable.
func (d *Device) allocFloats(n int) (*devBuf, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: allocating %d elements", n)
	}
	b := &devBuf{n: n, dev: d}
	if n == 0 {
		return b, nil
	}
	p, err := d.ctx.MemAlloc(4 * n)
	if err != nil {
		return nil, err
	}
	if err := d.ctx.Memset8(p, 0, 4*n); err != nil {
		d.ctx.MemFree(p)
		return nil, err
	}
	b.ptr = p
	runtime.AddCleanup(b, func(p driver.DevicePtr) { d.ctx.MemFree(p) }, p)
	return b, nil
}

// scratch is device memory for the duration of one call; free releases it.
type scratch struct {
	d    *Device
	ptrs []driver.DevicePtr
}

// alloc returns n bytes (at least 1) of scratch memory.
func (s *scratch) alloc(n int) (driver.DevicePtr, error) {
	p, err := s.d.ctx.MemAlloc(max(n, 1))
	if err != nil {
		return 0, err
	}
	s.ptrs = append(s.ptrs, p)
	return p, nil
}

// free releases every allocation.
func (s *scratch) free() {
	for _, p := range s.ptrs {
		s.d.ctx.MemFree(p)
	}
	s.ptrs = nil
}
