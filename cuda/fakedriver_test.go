package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// envFake is set in the child processes of TestFakeDriver, whose driver is
// the fake libcuda (the tests that need it run only there).
const envFake = "DUEL_TEST_FAKE_CUDA"

// runFake runs the tests matching run in a child process with the fake
// driver and env added to the environment, and returns its output; it
// fails t when the child fails.
func runFake(t *testing.T, lib, run string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{driver.EnvLibrary + "=" + lib, envFake + "=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s with the fake driver: %v\n%s", run, err, out)
	}
	return string(out)
}

// TestFakeDriver runs this package's GPU path without a GPU: in child
// processes whose driver library is the fake libcuda of internal/cudatest
// (device memory in host memory, a stream's work deferred until something
// waits for it, the kernels on the CPU emulator), it runs the conformance
// suite through Device and the driver bindings (streams, asynchronous
// copies and launches), the events, the allocator's out-of-memory retry
// against the driver's CUDA_ERROR_OUT_OF_MEMORY, and the report of a
// kernel that fails after its launch returned.
func TestFakeDriver(t *testing.T) {
	lib := cudatest.FakeDriver(t)
	for _, tc := range []struct {
		run  string
		env  []string
		want []string
	}{
		{"^(TestAvailableHere|TestRegistered|TestConformance|TestFakeDevice|TestFakeDeviceStaging|TestFakeDeviceSlowLoads|TestFakeDeviceReadback)$", nil,
			[]string{"--- PASS: TestConformance/block64", "usable: cuda:0 (duel fake CUDA device", "--- PASS: TestFakeDevice ", "--- PASS: TestFakeDeviceStaging",
				"--- PASS: TestRegistered", "--- PASS: TestFakeDeviceSlowLoads", "--- PASS: TestFakeDeviceReadback"}},
		{"^TestFakeDeviceFault$", []string{"DUEL_FAKE_CUDA_FAIL=sgemm_f32"}, []string{"--- PASS: TestFakeDeviceFault"}},
		{"^TestJITWarm$", []string{envJITWarm + "=duel.cu"}, []string{"jit duel.cu ", "--- PASS: TestJITWarm"}},
		{"^TestFakeDeviceOutOfMemory$", []string{"DUEL_FAKE_CUDA_MEMORY=4194304"}, []string{"--- PASS: TestFakeDeviceOutOfMemory"}},
	} {
		out := runFake(t, lib, tc.run, tc.env...)
		if strings.Contains(out, "--- SKIP") {
			t.Errorf("%s skipped with the fake driver:\n%s", tc.run, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s with the fake driver: output lacks %q:\n%s", tc.run, w, out)
			}
		}
	}
}

// needFake returns the default device when the driver is the fake one
// (TestFakeDriver's children), and skips otherwise.
func needFake(t *testing.T) *Device {
	t.Helper()
	if os.Getenv(envFake) == "" {
		t.Skip("runs in TestFakeDriver's child processes, with the fake driver")
	}
	return needGPU(t)
}

// TestFakeDevice checks, on the fake driver, what the conformance suite
// does not: reading the device waits for the queued work (a launch's
// result is there when CopyOut returns), events time the queued work, and
// Release and EmptyCache return memory to the cache and the device.
func TestFakeDevice(t *testing.T) {
	d := needFake(t)
	be, err := newBackend(d, 64)
	if err != nil {
		t.Fatal(err)
	}
	start, err := d.Record()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Close()
	x := tensor.Operand{Buf: be.Alloc(1 << 16), Shape: []int{1 << 16}, Strides: []int{1}}
	be.Fill(x, 2)
	be.Binary(tensor.OpMul, x, x, x)
	end, err := d.Record()
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	got := make([]float32, 3)
	be.CopyOut(got, x.Buf, 1<<16-3)
	if got[0] != 4 || got[1] != 4 || got[2] != 4 {
		t.Errorf("CopyOut after Fill and Mul = %v, want 4s", got)
	}
	el, err := d.Elapsed(start, end)
	if err != nil || el <= 0 || el > time.Minute {
		t.Errorf("Elapsed = %v, %v; want a positive time", el, err)
	}
	be.Release(x.Buf)
	if s := be.MemoryStats(); s.InUse != 0 || s.Cached != 1<<18 {
		t.Errorf("after Release: %+v, want 256 KiB cached and nothing in use", s)
	}
	if err := be.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if s := be.MemoryStats(); s.Cached != 0 || s.DeviceFrees != 1 {
		t.Errorf("after EmptyCache: %+v, want nothing cached, 1 device free", s)
	}
}

// TestFakeDeviceSlowLoads checks, on the fake driver, that LogSlowLoads
// tells a module's load that reaches its threshold (here 0: every load;
// duel.cu's module is dropped first so that it loads again) by the
// module, the device and the PTX target, and that a nil writer stops it.
func TestFakeDeviceSlowLoads(t *testing.T) {
	d := needFake(t)
	var log strings.Builder
	d.LogSlowLoads(&log)
	load := func() {
		t.Helper()
		d.mu.Lock()
		delete(d.mods, kc.DuelModule)
		d.slowLoad = 0
		d.mu.Unlock()
		if _, err := d.function(kc.DuelModule, "duel_grid"); err != nil {
			t.Fatal(err)
		}
	}
	load()
	want := fmt.Sprintf("cuda: loading duel.cu on %v took ", d)
	if got := log.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, "compiled its sm_") || strings.Count(got, "\n") != 1 {
		t.Errorf("LogSlowLoads wrote %q, want one line starting %q", got, want)
	}
	d.LogSlowLoads(nil)
	log.Reset()
	load()
	if log.Len() != 0 {
		t.Errorf("after LogSlowLoads(nil): %q written", log.String())
	}
}

// TestFakeDeviceReadback checks, on the fake driver (which copies into
// pinned memory when the stream gets there), that a Readback's copy holds
// the device memory as the work queued before Start left it, not as the
// work queued after it changes it, and its bad uses.
func TestFakeDeviceReadback(t *testing.T) {
	d := needFake(t)
	be, err := newBackend(d, 64)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.Operand{Buf: be.Alloc(1000), Shape: []int{1000}, Strides: []int{1}}
	defer be.Release(x.Buf)
	r, err := d.NewReadback(4 * 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float32{3, -5} {
		be.Fill(x, v)
		if err := r.Start(be.ptr("Readback", x.Buf, 0), 4*999); err != nil {
			t.Fatal(err)
		}
		be.Fill(x, 7) // queued after the copy
		got, err := r.Wait()
		if err != nil {
			t.Fatal(err)
		}
		f := unsafe.Slice((*float32)(unsafe.Pointer(&got[0])), len(got)/4)
		if len(f) != 999 || f[0] != v || f[998] != v {
			t.Errorf("readback %d: %d values, first %v, last %v; want 999 of %v (the fill after Start not seen)", i, len(f), f[0], f[len(f)-1], v)
		}
	}
	if _, err := r.Wait(); err == nil {
		t.Error("Wait without a copy started: no error")
	}
	if err := r.Start(be.ptr("Readback", x.Buf, 0), 4*1001); err == nil {
		t.Error("Start of 4004 bytes into 4000: no error")
	}
	if _, err := d.NewReadback(0); err == nil {
		t.Error("NewReadback(0): no error")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestFakeDeviceFault checks, on the fake driver with sgemm_f32 failing
// when it runs (DUEL_FAKE_CUDA_FAIL), that the failure is reported by the
// next operation that waits, as its *tensor.DeviceError naming Gemm.
func TestFakeDeviceFault(t *testing.T) {
	d := needFake(t)
	be, err := newBackend(d, 64)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.Operand{Buf: be.Alloc(4), Shape: []int{2, 2}, Strides: []int{2, 1}}
	if err := tensor.CatchDeviceError(func() {
		be.Gemm(tensor.GemmArgs{M: 2, N: 2, K: 2, Alpha: 1, A: x.Buf, B: x.Buf, C: x.Buf, LDA: 2, LDB: 2, LDC: 2, Batch: 1})
	}); err != nil {
		t.Fatalf("Gemm reported %v at its launch, want the failure at the next wait", err)
	}
	err = tensor.CatchDeviceError(func() { be.CopyOut(make([]float32, 4), x.Buf, 0) })
	var de *tensor.DeviceError
	if !errors.As(err, &de) || de.Op != "CopyOut" || !driver.IsCode(err, 700) || !strings.Contains(err.Error(), "Gemm") {
		t.Fatalf("CopyOut after a failed sgemm_f32: %v, want a *tensor.DeviceError of CopyOut wrapping CUDA_ERROR_ILLEGAL_ADDRESS and naming Gemm", err)
	}
	t.Log(err)
}

// TestFakeDeviceOutOfMemory checks, on a fake device of 4 MiB
// (DUEL_FAKE_CUDA_MEMORY), that the allocator returns its cache to the
// driver when an allocation fails, and then reports an *OutOfMemoryError
// wrapping the driver's CUDA_ERROR_OUT_OF_MEMORY.
func TestFakeDeviceOutOfMemory(t *testing.T) {
	d := needFake(t)
	be, err := newBackend(d, 64)
	if err != nil {
		t.Fatal(err)
	}
	a := be.Alloc(1 << 19) // 2 MiB
	be.Release(be.Alloc(1 << 18))
	b := be.Alloc(1<<18 + 1<<17) // 1.5 MiB: only with the cached 1 MiB returned
	if s := be.MemoryStats(); s.DeviceFrees != 1 || s.Cached != 0 {
		t.Errorf("after an allocation that needed the cache: %+v, want the cache returned (1 device free)", s)
	}
	err = tensor.CatchDeviceError(func() { be.Alloc(1 << 20) })
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || !driver.IsCode(err, 2) || oom.InUse != 2<<20+3<<19 {
		t.Fatalf("Alloc of 4 MiB with 3.5 MiB in use: %v, want an *OutOfMemoryError wrapping CUDA_ERROR_OUT_OF_MEMORY with 3.5 MiB in use", err)
	}
	t.Log(err)
	be.Release(a)
	be.Release(b)
}

// TestFakeDeviceStaging checks, on the fake driver (which reads a pinned
// source only when the stream reaches the copy), that copies through the
// pinned staging buffers wait before reusing a buffer: two copies of
// several staging buffers' worth, then both read back intact.
func TestFakeDeviceStaging(t *testing.T) {
	d := needFake(t)
	be, err := newBackend(d, 64)
	if err != nil {
		t.Fatal(err)
	}
	n := (3*stageBytes + 4*1000 + 4) / 4 // three and a bit staging buffers of floats
	var bufs []tensor.Buffer
	var want [][]float32
	for k := range 3 {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(k*n + i)
		}
		b := be.Alloc(n)
		be.CopyIn(b, 0, src)
		bufs, want = append(bufs, b), append(want, src)
	}
	small := []float32{-1, -2, -3}
	be.CopyIn(bufs[0], 5, small) // at most inlineMax: not staged, ordered after the staged copies
	want[0][5], want[0][6], want[0][7] = -1, -2, -3
	for k, b := range bufs {
		got := make([]float32, n)
		be.CopyOut(got, b, 0)
		for i := range got {
			if got[i] != want[k][i] {
				t.Fatalf("copy %d: element %d = %v after the staged copies, want %v", k, i, got[i], want[k][i])
			}
		}
	}
}
