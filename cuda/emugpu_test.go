package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor/backendtest"
	"github.com/ebitengine/purego"
)

// emuGPU implements gpu with the real kernel sources running on the CPU
// emulator (kernels/cuda/emu, built as a shared library and called through
// purego with cuLaunchKernel's parameter layout). Device memory is host
// memory followed by a canary checked after every launch, so writes past
// an allocation are reported.
type emuGPU struct {
	mu    sync.Mutex
	fns   map[string]uintptr
	mem   map[driver.DevicePtr][]byte
	sizes map[driver.DevicePtr]int
}

const canary = 64 // bytes after each allocation that no kernel may touch

// emuLib is the emulator library, built once per test process by
// buildEmuLib (in a directory TestMain removes).
var emuLib struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// buildEmuLib compiles kernels/cuda/emu/lib_*.cpp (each includes one .cu)
// in parallel and links them into a shared library.
func buildEmuLib(gxx string, srcs []string) (string, error) {
	dir, err := os.MkdirTemp("", "duel-cuda-emu")
	if err != nil {
		return "", err
	}
	emuLib.dir = dir
	objs := make([]string, len(srcs))
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		objs[i] = filepath.Join(dir, fmt.Sprintf("%d.o", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := exec.Command(gxx, "-std=c++20", "-O1", "-fPIC", "-c", "-o", objs[i], src).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("g++ %s: %v\n%s", src, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", err
		}
	}
	lib := filepath.Join(dir, "libduelemu.so")
	if out, err := exec.Command(gxx, append([]string{"-shared", "-o", lib}, objs...)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("g++ -shared: %v\n%s", err, out)
	}
	return lib, nil
}

// newEmuGPU loads the emulator library (building it on first use), or
// skips the test without g++ or under -short.
func newEmuGPU(t *testing.T) *emuGPU {
	t.Helper()
	if testing.Short() {
		t.Skip("emulated kernels skipped under -short")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found: emulated kernels skipped")
	}
	dir := filepath.Join("..", "kernels", "cuda")
	var srcs []string
	for _, pat := range []string{"*.cu", "emu/*"} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil { // seen by go test's cache
				t.Fatal(err)
			}
			if m, _ := filepath.Match("lib_*.cpp", filepath.Base(f)); m {
				srcs = append(srcs, f)
			}
		}
	}
	emuLib.once.Do(func() { emuLib.path, emuLib.err = buildEmuLib(gxx, srcs) })
	if emuLib.err != nil {
		t.Fatal(emuLib.err)
	}
	h, err := purego.Dlopen(emuLib.path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	e := &emuGPU{fns: map[string]uintptr{}, mem: map[driver.DevicePtr][]byte{}, sizes: map[driver.DevicePtr]int{}}
	for _, m := range kc.Modules() {
		for _, k := range m.Kernels {
			fn, err := purego.Dlsym(h, "emu_"+k)
			if err != nil {
				t.Fatalf("emulator library has no emu_%s: add EMU_EXPORT(%s) to kernels/cuda/emu/lib_%s.cpp", k, k, m.Source[:len(m.Source)-3])
			}
			e.fns[k] = fn
		}
	}
	return e
}

// TestMain removes the emulator library's directory after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if emuLib.dir != "" {
		os.RemoveAll(emuLib.dir)
	}
	os.Exit(code)
}

func (e *emuGPU) alloc(n int) (driver.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("emuGPU: alloc of %d bytes", n)
	}
	words := make([]uint64, (n+canary+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	for i := range b {
		b[i] = 0xa5 // garbage (a NaN-free pattern) in the data, the canary after it
	}
	p := driver.DevicePtr(uintptr(unsafe.Pointer(&b[0])))
	e.mu.Lock()
	e.mem[p], e.sizes[p] = b, n
	e.mu.Unlock()
	return p, nil
}

func (e *emuGPU) free(p driver.DevicePtr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.mem[p]; !ok {
		panic(fmt.Sprintf("emuGPU: free of %#x, not an allocation", p))
	}
	delete(e.mem, p)
	delete(e.sizes, p)
}

// span returns n bytes at p, checking they lie in one allocation.
func (e *emuGPU) span(p driver.DevicePtr, n int) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for base, b := range e.mem {
		if p >= base && int(p-base)+n <= e.sizes[base] {
			return b[p-base : int(p-base)+n], nil
		}
	}
	return nil, fmt.Errorf("emuGPU: %d bytes at %#x are in no allocation", n, p)
}

func (e *emuGPU) zero(p driver.DevicePtr, n int) error {
	b, err := e.span(p, n)
	if err == nil {
		clear(b)
	}
	return err
}

func (e *emuGPU) htod(dst driver.DevicePtr, src []byte) error {
	b, err := e.span(dst, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (e *emuGPU) dtoh(dst []byte, src driver.DevicePtr) error {
	b, err := e.span(src, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (e *emuGPU) multiprocessors() int { return 2 }

// Launch runs kernel on the emulator, then checks every canary.
func (e *emuGPU) Launch(m *kc.Module, kernel string, cfg kc.Config, args ...any) error {
	fn := e.fns[kernel]
	if fn == 0 {
		return fmt.Errorf("emuGPU: no kernel %s", kernel)
	}
	keep, params, err := driver.PackParams(args)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	purego.SyscallN(fn, uintptr(cfg.Grid.X), uintptr(cfg.Grid.Y), uintptr(cfg.Grid.Z),
		uintptr(cfg.Block.X), uintptr(cfg.Block.Y), uintptr(cfg.Block.Z), uintptr(cfg.Shared), uintptr(unsafe.Pointer(&params[0])))
	_ = keep
	bases := make([]driver.DevicePtr, 0, len(e.mem))
	for p := range e.mem {
		bases = append(bases, p)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for _, p := range bases {
		for i, c := range e.mem[p][e.sizes[p]:] {
			if c != 0xa5 {
				return fmt.Errorf("emuGPU: kernel %s wrote byte %d past the end of the %d-byte allocation at %#x", kernel, i, e.sizes[p], p)
			}
		}
	}
	return nil
}

// TestConformanceEmulated runs tensor's conformance suite through the CUDA
// backend with the real kernels on the CPU emulator: the whole path of a
// GPU run except the driver itself.
func TestConformanceEmulated(t *testing.T) {
	e := newEmuGPU(t)
	for _, bs := range []int{64} { // one size: TestDUELEmulated and emu/*_emu.cpp vary it
		t.Run(fmt.Sprintf("block%d", bs), func(t *testing.T) {
			b, err := newBackend(e, bs)
			if err != nil {
				t.Fatal(err)
			}
			backendtest.Run(t, b)
		})
	}
}
