package driver

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestLoadMissingLibrary runs the no-driver path on every machine, also on
// one with a driver: DUEL_CUDA_DRIVER names a missing file, or the default
// name is replaced by a missing one. The error wraps ErrNoDriver, names
// what it tried to open and ends with the advice.
func TestLoadMissingLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	for _, tc := range []struct {
		name    string
		env     string // DUEL_CUDA_DRIVER
		path    string // the library Load would open; "" for Library's choice
		want    []string
		wantEnd string
	}{
		{"env", missing, "", []string{"cuda: DUEL_CUDA_DRIVER=" + missing + " not found", "no NVIDIA driver", "[dlopen: "},
			"point DUEL_CUDA_DRIVER at libcuda.so.1 or unset it, or use --device cpu"},
		{"default name", "", "libcuda-does-not-exist.so.1", []string{"cuda: libcuda-does-not-exist.so.1 not found", "no NVIDIA driver", "[dlopen: "},
			": use --device cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvLibrary, tc.env)
			path, fromEnv := Library()
			if tc.path != "" {
				path = tc.path
			} else if path != tc.env || !fromEnv {
				t.Fatalf("Library() = %q, %v with %s=%q", path, fromEnv, EnvLibrary, tc.env)
			}
			err := load(path, fromEnv)
			if err == nil {
				t.Fatalf("load(%q) succeeded", path)
			}
			if !errors.Is(err, ErrNoDriver) {
				t.Errorf("error %q does not wrap ErrNoDriver", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if !strings.HasSuffix(err.Error(), tc.wantEnd) {
				t.Errorf("error %q does not end with %q", err, tc.wantEnd)
			}
		})
	}
}

// TestLibrary checks where the library name comes from.
func TestLibrary(t *testing.T) {
	for _, tc := range []struct {
		env     string
		path    string
		fromEnv bool
	}{
		{"", DefaultLibrary, false},
		{"/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1", true},
		{"libcuda.so", "libcuda.so", true},
	} {
		t.Setenv(EnvLibrary, tc.env)
		if path, fromEnv := Library(); path != tc.path || fromEnv != tc.fromEnv {
			t.Errorf("%s=%q: Library() = %q, %v; want %q, %v", EnvLibrary, tc.env, path, fromEnv, tc.path, tc.fromEnv)
		}
	}
}

// TestLoadHere checks that Load on this machine either works or says why,
// without crashing: the machines duel is developed on have no GPU.
func TestLoadHere(t *testing.T) {
	err := Load()
	if err == nil {
		n, err := DeviceCount()
		t.Logf("CUDA driver loaded: %d device(s), err %v", n, err)
		return
	}
	t.Logf("Load: %v", err)
	if !errors.Is(err, ErrNoDriver) && !strings.HasPrefix(err.Error(), "cuda: ") {
		t.Errorf("Load error %q neither wraps ErrNoDriver nor names the driver call", err)
	}
	if errors.Is(err, ErrNoDriver) && !strings.HasSuffix(err.Error(), "use --device cpu") {
		t.Errorf("Load error %q does not end with the advice", err)
	}
	if _, err2 := DeviceCount(); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("DeviceCount after failed Load: %v, want the Load error %v", err2, err)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Op: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"}
	if got, want := e.Error(), "cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !IsCode(e, 2) || IsCode(e, 3) || IsCode(errors.New("x"), 2) {
		t.Error("IsCode disagrees with the code")
	}
	if check("cuInit", 0) != nil {
		t.Error("check(CUDA_SUCCESS) != nil")
	}
	// Without a loaded library the name and text fall back to the number.
	if err := check("cuInit", 100); err == nil || !IsCode(err, ErrNoDevice) {
		t.Errorf("check(100) = %v, want an *Error with code 100", err)
	}
}

func TestLaunchChecksSizes(t *testing.T) {
	f := &Function{name: "k"}
	for _, tc := range []struct{ grid, block Dim3 }{
		{Dim3{0, 1, 1}, Dim3{1, 1, 1}},
		{Dim3{1, 1, 1}, Dim3{1, 0, 1}},
		{Dim3{1, 70000, 1}, Dim3{1, 1, 1}},
	} {
		if err := f.Launch(tc.grid, tc.block, 0); err == nil || !strings.Contains(err.Error(), "bad") {
			t.Errorf("Launch(%v, %v) = %v, want a size error", tc.grid, tc.block, err)
		}
	}
	if err := f.Launch(Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, "str"); err == nil || !strings.Contains(err.Error(), "unsupported type") {
		t.Errorf("Launch with a string parameter = %v, want a type error", err)
	}
}

func TestPackParams(t *testing.T) {
	layout := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	keep, params, err := PackParams([]any{DevicePtr(0xdead0000), int32(-2), float32(1.5), int64(-3), float64(0.25), uint32(7), layout})
	if err != nil {
		t.Fatal(err)
	}
	if len(params) != 8 || params[7] != 0 {
		t.Fatalf("params %v, want 7 addresses and a terminating 0", params)
	}
	want := [][]uint64{{0xdead0000}, {0xfffffffe}, {0x3fc00000}, {0xfffffffffffffffd}, {0x3fd0000000000000}, {7}}
	for i, w := range want {
		if keep[i][0] != w[0] {
			t.Errorf("parameter %d: %#x, want %#x", i, keep[i][0], w[0])
		}
		if params[i] != uintptr(unsafe.Pointer(&keep[i][0])) {
			t.Errorf("parameter %d: address does not point at its block", i)
		}
	}
	got := unsafe.Slice((*byte)(unsafe.Pointer(&keep[6][0])), len(layout))
	if string(got) != string(layout) {
		t.Errorf("struct parameter bytes %v, want %v", got, layout)
	}
	if _, _, err := PackParams([]any{int(1)}); err == nil || !strings.Contains(err.Error(), "parameter 0 has unsupported type int") {
		t.Errorf("PackParams(int): %v", err)
	}
}
