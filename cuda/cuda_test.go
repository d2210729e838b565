package cuda

import (
	"strings"
	"testing"
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
// and point to --device cpu, and the backend must not be registered.
func TestAvailableHere(t *testing.T) {
	err := Available()
	if err == nil {
		d, _ := Default()
		t.Logf("usable: %v", d)
		return
	}
	t.Logf("Available: %v", err)
	msg := err.Error()
	if !strings.HasPrefix(msg, "cuda: ") || !strings.HasSuffix(msg, "use --device cpu") {
		t.Errorf("Available() = %q, want \"cuda: ...: use --device cpu\"", msg)
	}
	if Available() != err {
		t.Error("Available is not memoised")
	}
	if _, err := NewBackend(); err == nil {
		t.Error("NewBackend succeeded without a usable device")
	}
}
