package main

import (
	"fmt"
	"io"

	"github.com/duel-ssl/duel/tensor"
)

// kernelReporter is implemented by what chooses its kernels by measuring:
// the CUDA backend (its products' kernels by shape), the GPU's DUEL policy
// (its steps kernel and move) and the CPU backend (the tuning it takes
// from the wisdom file).
type kernelReporter interface {
	KernelChoices() []string
}

// kernelChoices returns the lines of dev's backend and of the others
// that are kernelReporters, in that order (none on the CPU without a
// wisdom file).
func kernelChoices(dev tensor.Device, others ...any) []string {
	var out []string
	if be, err := tensor.Lookup(dev.BackendName()); err == nil {
		if r, ok := be.(kernelReporter); ok {
			out = append(out, r.KernelChoices()...)
		}
	}
	for _, o := range others {
		if r, ok := o.(kernelReporter); ok {
			out = append(out, r.KernelChoices()...)
		}
	}
	return out
}

// writeKernelChoices prints the lines under a heading (nothing for none).
func writeKernelChoices(w io.Writer, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "kernels chosen by measuring on the device:")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
