//go:build !windows

package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/duel-ssl/duel/duel/dist"
)

// helperEnv marks a process started by mpirunHelpers: its value is the
// helper's mode, "collectives" or "abort".
const helperEnv = "DUEL_MPI_TEST_HELPER"

// helperTag starts every line the helpers print for the parent.
const helperTag = "duel-mpi-helper"

// mpirunHelpers runs this test binary's TestHelperRank in 2 ranks under
// the launcher of LocalCommand (DUEL_MPIRUN, else mpirun), in mode, with
// env added to the environment, and returns the launcher's combined
// output, the time it took and its error (after at most limit). It skips
// the test where the launcher is not found or the MPI library does not
// load (LocalCommand's error wraps ErrNoMPI), and fails it on any other
// error of LocalCommand (a launcher of another implementation than the
// library's).
func mpirunHelpers(t *testing.T, mode string, limit time.Duration, env ...string) (string, time.Duration, error) {
	t.Helper()
	local, err := LocalCommand(2, os.Args[0], "-test.run=^TestHelperRank$", "-test.count=1", "-test.timeout="+limit.String())
	if errors.Is(err, ErrNoMPI) {
		t.Skipf("skipping: the MPI integration tests need an MPI installation (e.g. apt-get install openmpi-bin): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, local.Path, local.Args[1:]...)
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	// On time-out, SIGTERM lets the launcher take its ranks down; SIGKILL
	// (the default) would leave them behind.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	line := strings.Join(cmd.Args, " ")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("%s did not end within %v:\n%s", line, limit, out)
	}
	t.Logf("%s (%v)", line, took.Round(time.Millisecond))
	return string(out), took, err
}

// TestMPIRun runs the collectives of TestHelperRank in 2 ranks under
// mpirun and checks that both ranks report success.
func TestMPIRun(t *testing.T) {
	out, _, err := mpirunHelpers(t, "collectives", 30*time.Second)
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	checkRanksOK(t, out)
}

// TestMPIAbort checks that Abort in one rank ends the whole job, the other
// rank blocked in a barrier included, with a non-zero exit status: mpirun
// returns within seconds instead of hanging.
func TestMPIAbort(t *testing.T) {
	out, took, err := mpirunHelpers(t, "abort", 30*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("mpirun after MPI_Abort: err %v, want a non-zero exit:\n%s", err, out)
	}
	if took > 15*time.Second {
		t.Errorf("mpirun took %v to end the job after MPI_Abort", took)
	}
	if !strings.Contains(out, helperTag+" rank=1 aborting") || strings.Contains(out, "barrier returned") {
		t.Errorf("unexpected helper output:\n%s", out)
	}
	t.Logf("mpirun exit status %d after %v", ee.ExitCode(), took.Round(time.Millisecond))
}

// TestMPISignals runs 2 ranks with the signal variables of signalEnvs
// set to their libraries' defaults, so that MPI_Init may install handlers
// for Go's signals (UCX does, under Debian's MPICH), and checks that Init
// put Go's back: a nil dereference still panics in both ranks.
func TestMPISignals(t *testing.T) {
	out, _, err := mpirunHelpers(t, "signals", 30*time.Second, "OMPI_MCA_opal_signal=6,7,8,11", "UCX_ERROR_SIGNALS=ILL,SEGV,BUS,FPE")
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	checkRanksOK(t, out)
}

// TestHelperRank is one rank of TestMPIRun, TestMPIAbort and
// TestMPISignals; it runs only under mpirun, with helperEnv set.
func TestHelperRank(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper of TestMPIRun, TestMPIAbort and TestMPISignals: runs only under mpirun with " + helperEnv + " set")
	}
	c, err := Init()
	if err != nil {
		fmt.Printf("%s FAIL: Init: %v\n", helperTag, err)
		t.Fatal(err)
	}
	switch mode {
	case "collectives":
		helperCollectives(t, c)
	case "signals":
		helperSignals(t, c)
	case "abort":
		if c.Rank() == 1 {
			fmt.Printf("%s rank=1 aborting\n", helperTag)
			time.Sleep(200 * time.Millisecond) // rank 0 is in the barrier by now
			err := c.Abort(3)
			fmt.Printf("%s rank=1 FAIL: Abort returned %v\n", helperTag, err)
			os.Exit(4)
		}
		err := c.Barrier() // never completes: rank 1 aborts instead of entering it
		fmt.Printf("%s rank=%d FAIL: barrier returned %v\n", helperTag, c.Rank(), err)
		os.Exit(5)
	default:
		t.Fatalf("unknown %s=%s", helperEnv, mode)
	}
}

// helperCollectives runs every call of c and checks the results; a failed
// check prints a FAIL line and aborts the job (so that the other rank does
// not wait in a collective forever). Success prints "rank=R ok".
func helperCollectives(t *testing.T, c *Comm) {
	r, n := c.Rank(), c.Size()
	fail := func(format string, args ...any) {
		fmt.Printf("%s rank=%d FAIL: %s\n", helperTag, r, fmt.Sprintf(format, args...))
		_ = c.Abort(1)
		t.FailNow()
	}
	if n != 2 || r < 0 || r >= n {
		fail("rank %d of %d, want 2 ranks", r, n)
	}
	if lr, ok := LauncherRank(); !ok || lr != r {
		fail("Rank() = %d, LauncherRank() = %d, %v", r, lr, ok)
	}
	if !Launched() {
		fail("Launched() = false under mpirun")
	}
	for _, env := range signalEnvs {
		if v, set := os.LookupEnv(env); !set || v != "" {
			fail("%s = %q, %v after Init; want it set to \"\"", env, v, set)
		}
	}
	// Go's SIGSEGV handler survived MPI_Init: a nil dereference is still a
	// panic that recover catches, not an Open MPI stack trace and abort.
	if !nilDerefPanics() {
		fail("a nil dereference after Init did not panic")
	}
	if c2, err := Init(); c2 != c || err != nil {
		fail("second Init = %p, %v; want the same Comm %p", c2, err, c)
	}
	if err := c.Barrier(); err != nil {
		fail("Barrier: %v", err)
	}

	// Broadcast from each root, 1000 bytes of a pattern that tells the root.
	for root := range n {
		buf := make([]byte, 1000)
		if r == root {
			for i := range buf {
				buf[i] = byte(i*7 + root)
			}
		}
		if err := c.Broadcast(buf, root); err != nil {
			fail("Broadcast root %d: %v", root, err)
		}
		for i, b := range buf {
			if b != byte(i*7+root) {
				fail("Broadcast root %d: buf[%d] = %d, want %d", root, i, b, byte(i*7+root))
			}
		}
	}

	// AllReduce of float32: 1001 values (an odd count) that give different
	// results for a wrong op (max, product) and garbage for a wrong
	// datatype; with 2 ranks the sum is one exact float32 addition.
	f32 := func(rank, i int) float32 { return float32(i+1)*0.25*float32(rank+1) - 1000*float32(rank) }
	buf32 := make([]float32, 1001)
	for i := range buf32 {
		buf32[i] = f32(r, i)
	}
	if err := c.AllReduce(buf32); err != nil {
		fail("AllReduce: %v", err)
	}
	for i, v := range buf32 {
		if want := f32(0, i) + f32(1, i); v != want {
			fail("AllReduce: buf[%d] = %v, want %v", i, v, want)
		}
	}

	// AllReduceFloat64: differences of 1e-12 that float32 would lose.
	f64 := func(rank, i int) float64 { return 1 + float64(i)*1e-10 + float64(rank+1)*1e-12 }
	buf64 := make([]float64, 777)
	for i := range buf64 {
		buf64[i] = f64(r, i)
	}
	if err := c.AllReduceFloat64(buf64); err != nil {
		fail("AllReduceFloat64: %v", err)
	}
	for i, v := range buf64 {
		if want := f64(0, i) + f64(1, i); v != want {
			fail("AllReduceFloat64: buf[%d] = %v, want %v", i, v, want)
		}
	}

	// AllGather, AllGatherV (rank r sends r+1 bytes) and a wrong length,
	// which is the binding's error, found before MPI is called.
	send := []byte{byte(10 * r), byte(10*r + 1), byte(10*r + 2)}
	recv := make([]byte, 6)
	if err := c.AllGather(send, recv); err != nil {
		fail("AllGather: %v", err)
	}
	if want := []byte{0, 1, 2, 10, 11, 12}; !slices.Equal(recv, want) {
		fail("AllGather: %v, want %v", recv, want)
	}
	if err := c.AllGather(send, make([]byte, 5)); err == nil {
		fail("AllGather with a 5-byte recv: no error")
	}
	sendv := slices.Repeat([]byte{byte(100 + r)}, r+1)
	recvv := make([]byte, 3)
	if err := c.AllGatherV(sendv, recvv, []int{1, 2}); err != nil {
		fail("AllGatherV: %v", err)
	}
	if want := []byte{100, 101, 101}; !slices.Equal(recvv, want) {
		fail("AllGatherV: %v, want %v", recvv, want)
	}

	// IAllReduce completed by Wait; two at once completed in the reverse
	// order; one completed by polling Test; IAllGather.
	ones := func(k int) []float32 { return slices.Repeat([]float32{float32(r + 1)}, k) }
	a, b := ones(513), ones(1<<16)
	ra, err := c.IAllReduce(a)
	if err != nil {
		fail("IAllReduce: %v", err)
	}
	rb, err := c.IAllReduce(b)
	if err != nil {
		fail("IAllReduce: %v", err)
	}
	if err := rb.Wait(); err != nil {
		fail("Wait: %v", err)
	}
	if err := ra.Wait(); err != nil {
		fail("Wait: %v", err)
	}
	if err := ra.Wait(); err != nil {
		fail("second Wait: %v", err)
	}
	for _, s := range [][]float32{a, b} {
		for i, v := range s {
			if v != 3 {
				fail("IAllReduce of %d values: [%d] = %v, want 3", len(s), i, v)
			}
		}
	}
	p := ones(4096)
	rp, err := c.IAllReduce(p)
	if err != nil {
		fail("IAllReduce: %v", err)
	}
	polls := 0
	for deadline := time.Now().Add(10 * time.Second); ; polls++ {
		done, err := rp.Test()
		if err != nil {
			fail("Test: %v", err)
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			fail("Test: not done after 10 s")
		}
	}
	if done, err := rp.Test(); !done || err != nil {
		fail("Test after completion = %v, %v", done, err)
	}
	if err := rp.Wait(); err != nil {
		fail("Wait after Test: %v", err)
	}
	if p[0] != 3 || p[len(p)-1] != 3 {
		fail("IAllReduce polled: %v ... %v, want 3", p[0], p[len(p)-1])
	}
	if len(c.pending) != 0 {
		fail("%d requests still pending after completion", len(c.pending))
	}
	recvg := make([]byte, 6)
	rg, err := c.IAllGather(send, recvg)
	if err != nil {
		fail("IAllGather: %v", err)
	}
	if err := rg.Wait(); err != nil {
		fail("IAllGather's Wait: %v", err)
	}
	if want := []byte{0, 1, 2, 10, 11, 12}; !slices.Equal(recvg, want) {
		fail("IAllGather: %v, want %v", recvg, want)
	}

	// An invalid root is MPI's error, returned (MPI_ERRORS_RETURN) with
	// MPI's text instead of aborting the job; the job goes on.
	for _, root := range []int{n + 97, -5} {
		err := c.Broadcast(make([]byte, 8), root)
		var e *Error
		if !errors.As(err, &e) || e.Func != "MPI_Bcast" || e.Code == 0 || !strings.Contains(strings.ToLower(e.Msg), "root") {
			fail("Broadcast with root %d: %v, want MPI_Bcast's *Error about the root", root, err)
		}
		if r == 0 && root < 0 {
			fmt.Printf("%s rank=0 invalid root gives: %v\n", helperTag, err)
		}
	}
	if err := c.Barrier(); err != nil {
		fail("Barrier after the errors: %v", err)
	}

	// A request left pending is completed by Close.
	last := ones(100)
	if _, err := c.IAllReduce(last); err != nil {
		fail("IAllReduce: %v", err)
	}
	if r == 0 {
		v, err := LibraryVersion()
		fmt.Printf("%s rank=0 %s: %q %v (Test polled %d times)\n", helperTag, c.Implementation(), v, err, polls)
	}
	if err := c.Close(); err != nil {
		fmt.Printf("%s rank=%d FAIL: Close: %v\n", helperTag, r, err)
		t.FailNow()
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"Close completes the pending request", last[0] == 3 && last[99] == 3},
		{"second Close returns nil", c.Close() == nil},
		{"Barrier after Close wraps dist.ErrClosed", errors.Is(c.Barrier(), dist.ErrClosed)},
		{"IAllReduce after Close wraps dist.ErrClosed", func() bool { _, err := c.IAllReduce(a); return errors.Is(err, dist.ErrClosed) }()},
		{"Abort after Close wraps dist.ErrClosed", errors.Is(c.Abort(1), dist.ErrClosed)},
		{"Init after Close fails", func() bool { c, err := Init(); return c == nil && err != nil }()},
	}
	for _, ch := range checks {
		if !ch.ok {
			fmt.Printf("%s rank=%d FAIL: %s\n", helperTag, r, ch.what)
			t.Fail()
		}
	}
	if !t.Failed() {
		fmt.Printf("%s rank=%d ok\n", helperTag, r)
	}
}

// helperSignals is a rank of TestMPISignals: the signal variables are the
// user's (Init must leave them), and Go's SIGSEGV handler works after Init
// whatever MPI_Init installed. Success prints "rank=R ok".
func helperSignals(t *testing.T, c *Comm) {
	r := c.Rank()
	fail := func(format string, args ...any) {
		fmt.Printf("%s rank=%d FAIL: %s\n", helperTag, r, fmt.Sprintf(format, args...))
		_ = c.Abort(1)
		t.FailNow()
	}
	if v := os.Getenv("UCX_ERROR_SIGNALS"); v != "ILL,SEGV,BUS,FPE" {
		fail("UCX_ERROR_SIGNALS = %q after Init; want the user's value", v)
	}
	if !nilDerefPanics() {
		fail("a nil dereference after Init did not panic")
	}
	fmt.Printf("%s rank=%d %s: handlers put back: %v\n", helperTag, r, c.Implementation(), replacedSignals)
	if err := c.Barrier(); err != nil {
		fail("Barrier: %v", err)
	}
	if err := c.Close(); err != nil {
		fail("Close: %v", err)
	}
	fmt.Printf("%s rank=%d ok\n", helperTag, r)
}

// nilDerefPanics reports whether dereferencing a nil pointer panics (with
// a runtime error that recover catches), which needs the Go runtime's
// SIGSEGV handler.
func nilDerefPanics() (panicked bool) {
	defer func() { panicked = recover() != nil }()
	var p *int
	_ = *p
	return false
}

// checkRanksOK fails t unless both ranks of a helper job reported success
// in out, and logs out when t failed or runs verbosely.
func checkRanksOK(t *testing.T, out string) {
	t.Helper()
	for r := range 2 {
		if want := fmt.Sprintf("%s rank=%d ok", helperTag, r); !strings.Contains(out, want) {
			t.Errorf("rank %d did not report %q:\n%s", r, want, out)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("output:\n%s", out)
	}
}
