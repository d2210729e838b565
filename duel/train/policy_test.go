package train

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
)

// countingDUEL is memory.DUEL that counts its arrivals and its Close: an
// Options.DUELPolicy as the GPU's would be, on any machine.
type countingDUEL struct {
	*memory.DUEL
	arrivals, closed int
}

func (c *countingDUEL) Evict(a *memory.Arrival) ([]int, error) {
	c.arrivals++
	return c.DUEL.Evict(a)
}

func (c *countingDUEL) Close() error {
	c.closed++
	return nil
}

// TestTrainDUELPolicy checks Options.DUELPolicy: the memory of a D-MoCo
// run decides with the policy it builds (every arrival, before and after
// a resume, which keeps it), the log says so, the policy is closed when
// Train returns, and the run is the one memory.NewDUEL gives (the same
// decisions: the same losses, bit for bit). A hook that declines the
// admission leaves memory.NewDUEL deciding, and the log says that too.
func TestTrainDUELPolicy(t *testing.T) {
	c := tinyConfig(t, "dmoco")
	c.MemorySize, c.Steps, c.CheckpointEvery = 16, 4, 2 // the policy decides from the second step
	plainDir := t.TempDir()
	if _, err := Train(context.Background(), c, tinyOptions(plainDir)); err != nil {
		t.Fatal(err)
	}
	plain, err := ReadMetrics(plainDir)
	if err != nil {
		t.Fatal(err)
	}

	var built []*countingDUEL
	var admissions []memory.Admission
	hook := func(adm memory.Admission) memory.Policy {
		admissions = append(admissions, adm)
		p := &countingDUEL{DUEL: memory.NewDUEL(adm)}
		built = append(built, p)
		return p
	}
	dir := t.TempDir()
	var log bytes.Buffer
	half := *c
	half.Steps = 2
	opts := tinyOptions(dir)
	opts.DUELPolicy, opts.Log = hook, &log
	if _, err := Train(context.Background(), &half, opts); err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatal(err)
	}
	hooked, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 2 || admissions[0] != memory.Protected || admissions[1] != memory.Protected {
		t.Fatalf("hook called for %v, expected protected once a run", admissions)
	}
	for i, p := range built {
		if p.arrivals == 0 || p.closed != 1 {
			t.Errorf("run %d: the hook's policy saw %d arrivals and was closed %d times, expected some and once", i, p.arrivals, p.closed)
		}
	}
	if n := strings.Count(log.String(), "memory: duel (protected) decides on cpu"); n != 2 {
		t.Errorf("the log names the policy's device %d times, expected once a run:\n%s", n, log.String())
	}
	if len(hooked) != len(plain) {
		t.Fatalf("%d metric lines with the hook, %d without", len(hooked), len(plain))
	}
	for i := range plain {
		if hooked[i].Loss != plain[i].Loss {
			t.Errorf("step %d: loss %v with the hook's policy, %v with memory.NewDUEL", plain[i].Step, hooked[i].Loss, plain[i].Loss)
		}
	}

	log.Reset()
	opts = tinyOptions(t.TempDir())
	opts.DUELPolicy = func(memory.Admission) memory.Policy { return nil }
	opts.Log = &log
	declined, err := Train(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if declined.Loss != plain[len(plain)-1].Loss || !strings.Contains(log.String(), "memory: duel (protected) decides on the host") {
		t.Errorf("a declining hook: loss %v (expected %v), log:\n%s", declined.Loss, plain[len(plain)-1].Loss, log.String())
	}
}
