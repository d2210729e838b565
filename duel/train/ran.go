package train

import (
	"fmt"
	"io"

	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/tensor"
)

// precisioner is implemented by backends whose products and convolutions
// may compute below fp32 (the CUDA backend's TF32 and BF16, the CPU's BF16).
type precisioner interface {
	Precisions() (products, convolutions string)
}

// ranOn returns the Ran of a segment of a run computing on dev with the
// process group comm: fp32 unless dev's backend says otherwise.
func ranOn(dev tensor.Device, comm dist.Comm) *Ran {
	r := &Ran{Device: string(dev), Precision: "fp32", ConvPrecision: "fp32", WorldSize: comm.Size()}
	if be, err := tensor.Lookup(dev.BackendName()); err == nil {
		if p, ok := be.(precisioner); ok {
			r.Precision, r.ConvPrecision = p.Precisions()
		}
	}
	return r
}

// recordKernels writes into c.Ran, and dir's config.json, what dev's
// backend and the memory's policies chose by measuring on the device
// (kernelReporter), and prints it to log (nil: not). Nothing is written
// where nothing was measured (the CPU without a wisdom file).
func recordKernels(dir string, c *Config, dev tensor.Device, policies *builtPolicies, log io.Writer) error {
	var lines []string
	if be, err := tensor.Lookup(dev.BackendName()); err == nil {
		if r, ok := be.(kernelReporter); ok {
			lines = append(lines, r.KernelChoices()...)
		}
	}
	lines = append(lines, policies.kernelChoices()...)
	if len(lines) == 0 || c.Ran == nil {
		return nil
	}
	c.Ran.Kernels = lines
	if log != nil {
		fmt.Fprintf(log, "kernels chosen by measuring on %s (config.json's ran.kernels):\n", dev)
		for _, l := range lines {
			fmt.Fprintf(log, "  %s\n", l)
		}
	}
	return WriteConfig(dir, c)
}
