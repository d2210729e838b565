package cudatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/ebitengine/purego"
)

// Emulator implements cuda.GPU with the real kernel sources running on the
// CPU emulator (kernels/cuda/emu, built as a shared library and called
// through purego with cuLaunchKernel's parameter layout). Device memory is
// host memory followed by a canary checked after every launch, so writes
// past an allocation are reported. Its methods are safe for concurrent
// use.
type Emulator struct {
	mu    sync.Mutex
	fns   map[string]uintptr
	mem   map[driver.DevicePtr][]byte
	sizes map[driver.DevicePtr]int
}

const canary = 64 // bytes after each allocation that no kernel may touch

// emuLib is the emulator library and fakeLib the fake driver library
// (linked from the same objects and fakedriver.cpp), each found or built
// once per test process in emuBuild's directory.
var emuLib, fakeLib struct {
	once sync.Once
	path string
	err  error
}

// emuBuild is the emulator's build, once per test process: its directory
// (an entry of the build cache shared by test processes and kept between
// runs, or a temporary directory that Main removes; emucache.go) and the
// compiled kernel sources in it.
var emuBuild struct {
	once sync.Once
	dir  string
	temp bool
	objs []string
	err  error
}

// compile compiles srcs with g++ in parallel into dir (name.cpp into
// name.o), each object unless the cache already holds it, and returns the
// objects. It holds dir's lock, so that processes sharing the cache
// compile each object once.
func compile(gxx, dir string, srcs []string) ([]string, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	objs := make([]string, len(srcs))
	errs := make([]error, len(srcs))
	// As many compilers at once as there are cores: all of them at once
	// take gigabytes on a small machine, and no less time.
	slots := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			name := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src)) + ".o"
			objs[i], errs[i] = produce(dir, name, func(tmp string) error {
				args := append(append([]string(nil), emuFlags...), "-c", "-o", tmp, src)
				if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
					return fmt.Errorf("g++ %s: %v\n%s", src, err, out)
				}
				return nil
			})
		}()
	}
	wg.Wait()
	return objs, errors.Join(errs...)
}

// buildObjs compiles kernels/cuda/emu/lib_*.cpp (each includes one .cu)
// into the build's directory, once per process.
func buildObjs(gxx string, in emuInputs) ([]string, error) {
	emuBuild.once.Do(func() {
		key, err := buildKey(gxx, in.dir, in.files)
		if err != nil {
			emuBuild.err = err
			return
		}
		if emuBuild.dir, emuBuild.temp, emuBuild.err = buildDir(key); emuBuild.err == nil {
			emuBuild.objs, emuBuild.err = compile(gxx, emuBuild.dir, in.srcs)
		}
	})
	return emuBuild.objs, emuBuild.err
}

// link links objs into the shared library name in the build's directory,
// unless the cache already holds it.
func link(gxx, name string, objs []string) (string, error) {
	unlock, err := lockDir(emuBuild.dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	return produce(emuBuild.dir, name, func(tmp string) error {
		if out, err := exec.Command(gxx, append([]string{"-shared", "-o", tmp}, objs...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("g++ -shared -o %s: %v\n%s", name, err, out)
		}
		return nil
	})
}

// SkipWithoutEmulator skips t under -short or when g++ is not on the PATH,
// saying so; otherwise it returns g++'s path.
func SkipWithoutEmulator(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("emulated kernels skipped under -short")
	}
	if !emulatorSupported {
		t.Skip("emulated kernels skipped: the emulator does not run on this system")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found: emulated kernels skipped")
	}
	return gxx
}

// kernelDir returns the directory kernels/cuda of the module holding the
// working directory (go test runs in the package's directory).
func kernelDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "kernels", "cuda"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cudatest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// emuInputs are the emulator's inputs: the kernel directory, the library
// sources to compile (kernels/cuda/emu/lib_*.cpp) and every file they may
// include (kernels/cuda's .cu and .cuh files and emu/*), which name the build.
type emuInputs struct {
	dir   string
	srcs  []string
	files []string
}

// emuSources returns the emulator's inputs (reading every .cu and emu
// file, so that go test's cache sees them).
func emuSources(t testing.TB) emuInputs {
	t.Helper()
	dir, err := kernelDir()
	if err != nil {
		t.Fatal(err)
	}
	in := emuInputs{dir: dir}
	for _, pat := range []string{"*.cu", "*.cuh", "emu/*"} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil { // seen by go test's cache
				t.Fatal(err)
			}
			in.files = append(in.files, f)
			if m, _ := filepath.Match("lib_*.cpp", filepath.Base(f)); m {
				in.srcs = append(in.srcs, f)
			}
		}
	}
	if len(in.srcs) == 0 {
		t.Fatalf("cudatest: no emulator sources (lib_*.cpp) in %s", filepath.Join(dir, "emu"))
	}
	return in
}

// FakeDriver returns the path of a fake CUDA driver library
// (kernels/cuda/emu/fakedriver.cpp linked with the emulated kernels, built
// with g++ on first use in the process), or skips t under -short or
// without g++. Pointing DUEL_CUDA_DRIVER at it in a child process runs
// cuda.Device and the driver bindings with device memory in host memory,
// the work of a stream deferred until something waits for it, and the
// kernels on the CPU emulator; see fakedriver.cpp for its fault injection.
func FakeDriver(t testing.TB) string {
	t.Helper()
	gxx := SkipWithoutEmulator(t)
	in := emuSources(t)
	fakeLib.once.Do(func() {
		objs, err := buildObjs(gxx, in)
		if err != nil {
			fakeLib.err = err
			return
		}
		fake, err := compile(gxx, emuBuild.dir, []string{filepath.Join(in.dir, "emu", "fakedriver.cpp")})
		if err != nil {
			fakeLib.err = err
			return
		}
		fakeLib.path, fakeLib.err = link(gxx, "libcuda_fake.so.1", append(objs, fake...))
	})
	if fakeLib.err != nil {
		t.Fatal(fakeLib.err)
	}
	return fakeLib.path
}

// NewEmulator loads the emulator library (building it with g++ on first
// use in the process), or skips t under -short or without g++.
func NewEmulator(t testing.TB) *Emulator {
	t.Helper()
	gxx := SkipWithoutEmulator(t)
	in := emuSources(t)
	emuLib.once.Do(func() {
		objs, err := buildObjs(gxx, in)
		if err != nil {
			emuLib.err = err
			return
		}
		emuLib.path, emuLib.err = link(gxx, "libduelemu.so", objs)
	})
	if emuLib.err != nil {
		t.Fatal(emuLib.err)
	}
	h, err := openLocal(emuLib.path)
	if err != nil {
		t.Fatal(err)
	}
	e := &Emulator{fns: map[string]uintptr{}, mem: map[driver.DevicePtr][]byte{}, sizes: map[driver.DevicePtr]int{}}
	for _, m := range kc.Modules() {
		for _, k := range m.Kernels {
			fn, err := symbol(h, "emu_"+k)
			if err != nil {
				t.Fatalf("emulator library has no emu_%s: add EMU_EXPORT(%s) to kernels/cuda/emu/lib_%s.cpp", k, k, m.Source[:len(m.Source)-3])
			}
			e.fns[k] = fn
		}
	}
	return e
}

// Main runs the tests of m and removes the emulator's build directory when
// it is the process's own (the build cache is off or unusable); call it
// from TestMain: os.Exit(cudatest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if emuBuild.temp && emuBuild.dir != "" {
		os.RemoveAll(emuBuild.dir)
	}
	return code
}

// Alloc returns n bytes of host memory holding a garbage pattern, with a
// canary after them.
func (e *Emulator) Alloc(n int) (driver.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cudatest: emulator alloc of %d bytes, expected a positive size", n)
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

// Free frees an allocation; it panics when p is not one.
func (e *Emulator) Free(p driver.DevicePtr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.mem[p]; !ok {
		panic(fmt.Sprintf("cudatest: emulator free of %#x, not an allocation", p))
	}
	delete(e.mem, p)
	delete(e.sizes, p)
}

// span returns n bytes at p, checking they lie in one allocation.
func (e *Emulator) span(p driver.DevicePtr, n int) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for base, b := range e.mem {
		if p >= base && int(p-base)+n <= e.sizes[base] {
			return b[p-base : int(p-base)+n], nil
		}
	}
	return nil, fmt.Errorf("cudatest: emulator: %d bytes at %#x are in no allocation", n, p)
}

// Zero sets n bytes at p to 0.
func (e *Emulator) Zero(p driver.DevicePtr, n int) error {
	b, err := e.span(p, n)
	if err == nil {
		clear(b)
	}
	return err
}

// CopyToDevice copies src to dst.
func (e *Emulator) CopyToDevice(dst driver.DevicePtr, src []byte) error {
	b, err := e.span(dst, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}

// CopyFromDevice copies src into dst.
func (e *Emulator) CopyFromDevice(dst []byte, src driver.DevicePtr) error {
	b, err := e.span(src, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

// Synchronize returns nil: the work is done when its call returns.
func (e *Emulator) Synchronize() error { return nil }

// Multiprocessors returns 2.
func (e *Emulator) Multiprocessors() int { return 2 }

// Launch runs kernel on the emulator, then checks every canary.
func (e *Emulator) Launch(m *kc.Module, kernel string, cfg kc.Config, args ...any) error {
	fn := e.fns[kernel]
	if fn == 0 {
		return fmt.Errorf("cudatest: emulator has no kernel %s", kernel)
	}
	keep, params, err := driver.PackParams(args)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	purego.SyscallN(fn, uintptr(cfg.Grid.X), uintptr(cfg.Grid.Y), uintptr(cfg.Grid.Z),
		uintptr(cfg.Block.X), uintptr(cfg.Block.Y), uintptr(cfg.Block.Z), uintptr(cfg.Shared), uintptr(unsafe.Pointer(&params[0])))
	runtime.KeepAlive(keep)
	bases := make([]driver.DevicePtr, 0, len(e.mem))
	for p := range e.mem {
		bases = append(bases, p)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for _, p := range bases {
		for i, c := range e.mem[p][e.sizes[p]:] {
			if c != 0xa5 {
				return fmt.Errorf("cudatest: emulator: kernel %s wrote byte %d past the end of the %d-byte allocation at %#x", kernel, i, e.sizes[p], p)
			}
		}
	}
	return nil
}
