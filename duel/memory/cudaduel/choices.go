package cudaduel

import "fmt"

// KernelChoices describes what the memory chose by measuring on its own
// updates (SelectAuto's steps kernel, MoveAuto's move), one line each,
// e.g. "duel steps: duel_select_lean512 with the prefetch (medians: lean
// 0.210 ms, lean with the prefetch 0.190 ms, one-block 0.515 ms)"; none
// before a measurement ends. A training run records them (config.json's
// ran.kernels).
func (m *Memory) KernelChoices() []string {
	var out []string
	switch a := m.AutoTune(); {
	case a.Decided:
		kernel, pf := a.Kernel, ""
		if a.Prefetch {
			kernel += " with the prefetch"
		}
		if a.LeanPrefetch > 0 {
			pf = fmt.Sprintf(", lean with the prefetch %.3f ms", a.LeanPrefetch.Seconds()*1e3)
		}
		out = append(out, fmt.Sprintf("duel steps: %s (medians: lean %.3f ms%s, one-block %.3f ms)", kernel, a.Lean.Seconds()*1e3, pf, a.Block.Seconds()*1e3))
	case a.LeanOff != nil:
		out = append(out, fmt.Sprintf("duel steps: %s (the lean kernel is off: %v)", m.SelectionKernel(), a.LeanOff))
	}
	if mt := m.MoveTune(); mt.Decided {
		line := fmt.Sprintf("duel move: %v (medians: scatter %.3f ms, gather %.3f ms)", mt.Move, mt.Scatter.Seconds()*1e3, mt.Gather.Seconds()*1e3)
		if mt.GatherOff != nil {
			line = fmt.Sprintf("duel move: %v (gather is off: %v)", mt.Move, mt.GatherOff)
		}
		out = append(out, line)
	}
	return out
}

// KernelChoices is the policy's memory's (Memory.KernelChoices); none
// before its first update.
func (p *Policy) KernelChoices() []string {
	if p.mem == nil {
		return nil
	}
	return p.mem.KernelChoices()
}
