package main

import (
	"bufio"
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heldAtPeak is what holdPeak allocates: large enough to be sampled for
// certain (the profile samples one allocation in 512 KiB on average).
const heldAtPeak = 64 << 20

// holdPeak allocates the test's peak, under a name its profile can show.
//
//go:noinline
func holdPeak() []byte { return make([]byte, heldAtPeak) }

// TestHeapPeak: the profile heapPeak writes is the one of the largest
// live heap, with the allocation that made it in use, not the profile at
// the end, after it was freed.
func TestHeapPeak(t *testing.T) {
	p := watchHeapPeak(1)
	held := holdPeak()
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // the finalizer goroutine's turn
		p.mu.Lock()
		done := p.peak >= heldAtPeak && p.retake == 0
		p.mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	var buf bytes.Buffer
	if err := p.stop(&buf); err != nil {
		t.Fatal(err)
	}
	if p.peak < heldAtPeak {
		t.Fatalf("peak %d bytes, below the %d held", p.peak, heldAtPeak)
	}
	if inUse := inUseBy(t, buf.String(), "holdPeak"); inUse < heldAtPeak {
		t.Errorf("the profile at the peak has %d bytes in use by holdPeak, want %d:\n%s", inUse, heldAtPeak, buf.String())
	}
	// Stopped: later collections leave the profile alone.
	p.prof.Reset()
	runtime.GC()
	time.Sleep(5 * time.Millisecond)
	if p.note() || p.prof.Len() != 0 {
		t.Error("the watch went on after stop")
	}
}

// inUseBy returns the bytes in use in a text heap profile (pprof's debug
// level 1) by the records whose stacks hold fn.
func inUseBy(t *testing.T, prof, fn string) int {
	t.Helper()
	total, cur := 0, 0
	sc := bufio.NewScanner(strings.NewReader(prof))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#") && strings.Contains(line, "."+fn+"+"):
			total += cur
			cur = 0 // a record counts once
		case line != "" && line[0] >= '0' && line[0] <= '9':
			// "objects: bytes [objects: bytes] @ addresses"
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("profile line %q: %v", line, err)
			}
			cur = n
		}
	}
	return total
}
