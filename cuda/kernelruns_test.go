package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
)

// onEmulator runs check on the backend over the CPU emulator (the .cu
// sources on the CPU), at blocks of one and of three warps; it skips
// without g++ or under -short.
func onEmulator(t *testing.T, check func(*testing.T, *Backend)) {
	t.Helper()
	e := cudatest.NewEmulator(t)
	for _, bs := range []int{32, 96} { // 96: a block of three warps
		t.Run(fmt.Sprintf("block%d", bs), func(t *testing.T) {
			b, err := newBackend(e, bs)
			if err != nil {
				t.Fatal(err)
			}
			check(t, b)
		})
	}
}

// onGPU runs check on the GPU at blocks of 32, 256 and 1024 threads,
// waiting for the device after each (a failed launch shows there); it
// skips without a usable GPU.
func onGPU(t *testing.T, check func(*testing.T, *Backend)) {
	t.Helper()
	d := needGPU(t)
	for _, bs := range []int{32, 256, 1024} {
		t.Run(fmt.Sprintf("block%d", bs), func(t *testing.T) {
			b, err := newBackend(d, bs)
			if err != nil {
				t.Fatal(err)
			}
			check(t, b)
			if err := b.Synchronize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// passesOnFakeDriver runs the GPU tests matching run in a child process
// whose driver is the fake libcuda (internal/cudatest.FakeDriver: the
// kernels through Device and the driver bindings, without a GPU), and
// fails unless none skipped and each test in tests passed at 1024 threads.
func passesOnFakeDriver(t *testing.T, run string, tests ...string) {
	t.Helper()
	out := runFake(t, cudatest.FakeDriver(t), run)
	if strings.Contains(out, "--- SKIP") {
		t.Fatalf("skipped with the fake driver:\n%s", out)
	}
	for _, name := range tests {
		if w := "--- PASS: " + name + "/block1024"; !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
