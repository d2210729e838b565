package cudatest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
)

// EnvFake is set to "1" in the child processes RunOnFakeDriver starts,
// whose CUDA driver is the fake libcuda: the tests meant to run only there
// check it (InFakeChild).
const EnvFake = "DUEL_TEST_FAKE_CUDA"

// InFakeChild reports whether this test process is a child started by
// RunOnFakeDriver.
func InFakeChild() bool { return os.Getenv(EnvFake) != "" }

// RunOnFakeDriver runs the tests of the calling test binary that match the
// -test.run pattern run, verbosely, in a child process whose CUDA driver is
// the fake libcuda (FakeDriver, which skips t without g++ or under -short),
// with EnvFake and env added to the environment. It returns the child's
// combined output and its error (non-nil when a test failed).
func RunOnFakeDriver(t testing.TB, run string, env ...string) (string, error) {
	t.Helper()
	lib := FakeDriver(t)
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{driver.EnvLibrary + "=" + lib, EnvFake + "=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// PassOnFakeDriver runs the test named test of the calling test binary on
// the fake libcuda (RunOnFakeDriver) and fails t unless it passed without
// skipping. It returns the child's output.
func PassOnFakeDriver(t testing.TB, test string) string {
	t.Helper()
	out, err := RunOnFakeDriver(t, "^"+test+"$")
	if err != nil || !strings.Contains(out, "--- PASS: "+test) || strings.Contains(out, "--- SKIP") {
		t.Fatalf("%s with the fake driver: %v\n%s", test, err, out)
	}
	return out
}
