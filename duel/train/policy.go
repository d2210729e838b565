package train

import (
	"fmt"
	"io"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/tensor"
)

// kernelReporter is implemented by backends and policies that choose
// their kernels by measuring on the device (the CUDA backend's products,
// cudaduel's steps and move): one line a choice.
type kernelReporter interface {
	KernelChoices() []string
}

// builtPolicies are the policies a policyHook built.
type builtPolicies []memory.Policy

// kernelChoices returns the policies' kernelReporter lines.
func (b *builtPolicies) kernelChoices() []string {
	var out []string
	for _, p := range *b {
		if r, ok := p.(kernelReporter); ok {
			out = append(out, r.KernelChoices()...)
		}
	}
	return out
}

// policyHook wraps build (Options.DUELPolicy; nil: none) so that each
// policy it builds is logged to log (nil: not) as deciding on dev, and
// returns it with a function that closes those that are io.Closers (the
// GPU's device memory), to be called when the run ends, and the policies
// built.
func policyHook(build func(memory.Admission) memory.Policy, log io.Writer, dev tensor.Device) (func(memory.Admission) memory.Policy, func(), *builtPolicies) {
	built := &builtPolicies{}
	if build == nil {
		return nil, func() {}, built
	}
	hook := func(adm memory.Admission) memory.Policy {
		p := build(adm)
		if p == nil {
			if log != nil {
				fmt.Fprintf(log, "memory: duel (%v) decides on the host (%s runs protected and compete)\n", adm, dev)
			}
			return nil
		}
		*built = append(*built, p)
		if log != nil {
			fmt.Fprintf(log, "memory: duel (%v) decides on %s\n", adm, dev)
		}
		return p
	}
	return hook, func() {
		for _, p := range *built {
			if c, ok := p.(io.Closer); ok {
				if err := c.Close(); err != nil && log != nil {
					fmt.Fprintf(log, "memory: freeing the duel policy on %s: %v\n", dev, err)
				}
			}
		}
	}, built
}
