package par

import "syscall"

// osYield gives the processor back to the operating system (sched_yield).
func osYield() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
