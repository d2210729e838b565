package cuda

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
)

// needGPU returns the default device or skips the test, saying why.
func needGPU(t testing.TB) *Device {
	t.Helper()
	d, err := Default()
	if err != nil {
		t.Skipf("cuda: no usable GPU on this machine (%v): CUDA kernels verified by compilation only", err)
	}
	return d
}

// TestAvailableHere runs everywhere: without a GPU, Available must say why
// and end with the advice to use --device cpu, and the backend must not be
// registered. When DUEL_CUDA_DRIVER names a file that does not exist, the
// reason must be the missing driver (TestAvailableNoDriver runs it so).
func TestAvailableHere(t *testing.T) {
	err := Available()
	lib, fromEnv := driver.Library()
	_, statErr := os.Stat(lib)
	missing := fromEnv && errors.Is(statErr, os.ErrNotExist)
	if err == nil {
		if missing {
			t.Fatalf("Available() = nil with %s=%s, a missing file", driver.EnvLibrary, lib)
		}
		d, _ := Default()
		t.Logf("usable: %v", d)
		return
	}
	t.Logf("Available: %v", err)
	msg := err.Error()
	if !strings.HasPrefix(msg, "cuda: ") || !strings.HasSuffix(msg, "use --device cpu") {
		t.Errorf("Available() = %q, want \"cuda: ...: use --device cpu\"", msg)
	}
	if missing && (!errors.Is(err, driver.ErrNoDriver) || !strings.Contains(msg, lib)) {
		t.Errorf("Available() = %q with %s=%s: want the missing driver, named", msg, driver.EnvLibrary, lib)
	}
	if Available() != err {
		t.Error("Available is not memoised")
	}
	if _, err := NewBackend(); err == nil {
		t.Error("NewBackend succeeded without a usable device")
	}
}

// TestAvailableNoDriver runs TestAvailableHere in a child process whose
// DUEL_CUDA_DRIVER names a missing file, so that the no-driver path of
// Available is exercised on every machine, also on one with a GPU.
func TestAvailableNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child test process")
	}
	lib := filepath.Join(t.TempDir(), "no-such-libcuda.so.1")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAvailableHere$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), driver.EnvLibrary+"="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestAvailableHere with %s=%s: %v\n%s", driver.EnvLibrary, lib, err, out)
	}
	if want := driver.EnvLibrary + "=" + lib + " not found"; !strings.Contains(string(out), want) {
		t.Errorf("child output does not mention %q:\n%s", want, out)
	}
}
