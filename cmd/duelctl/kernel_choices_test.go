package main

import (
	"bytes"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// fakeReporter reports fixed kernel choices.
type fakeReporter []string

func (f fakeReporter) KernelChoices() []string { return f }

// TestKernelChoices checks that bench step gathers the lines of what
// reports kernels (the CPU's backend: the tuning of this machine's wisdom
// file, none in CI; nothing from others) and prints them under one
// heading, or nothing.
func TestKernelChoices(t *testing.T) {
	be, err := tensor.Lookup(tensor.CPU.BackendName())
	if err != nil {
		t.Fatal(err)
	}
	cpuLines := be.(kernelReporter).KernelChoices()
	got := kernelChoices(tensor.CPU, fakeReporter{"duel steps: a"}, 3, fakeReporter{"duel move: b", "c"})
	if want := append(slices.Clone(cpuLines), "duel steps: a", "duel move: b", "c"); !slices.Equal(got, want) {
		t.Errorf("kernelChoices = %q, want %q", got, want)
	}
	var w bytes.Buffer
	writeKernelChoices(&w, []string{"duel steps: a", "duel move: b", "c"})
	if want := "kernels chosen by measuring on the device:\n  duel steps: a\n  duel move: b\n  c\n"; w.String() != want {
		t.Errorf("printed %q, want %q", w.String(), want)
	}
	w.Reset()
	writeKernelChoices(&w, nil)
	if w.Len() != 0 {
		t.Errorf("printed %q for no choices", w.String())
	}
}
