package mpi

import (
	"fmt"
	"os"
	"os/exec"
)

// LocalCommand returns the command that starts np ranks of prog (with
// args) on this machine through the mpirun on PATH: oversubscribed (more
// ranks than cores is allowed), shared memory and loopback only, and, for
// Open MPI run as root (containers, CI), with --allow-run-as-root. Tests
// and benchmarks use it; on a cluster use your site's mpirun or srun line.
// The error wraps ErrNoMPI when mpirun is not on PATH or the MPI library
// does not load.
func LocalCommand(np int, prog string, args ...string) (*exec.Cmd, error) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		return nil, fmt.Errorf("mpirun is not on PATH (%w): install openmpi-bin", ErrNoMPI)
	}
	h, path, err := openLibrary()
	if err != nil {
		return nil, err
	}
	a, err := detectABI(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (%w)", path, err, ErrNoMPI)
	}
	flags := []string{"-np", fmt.Sprint(np)}
	if a.name == "Open MPI" {
		// vader's single-copy mechanisms (CMA, KNEM) are often refused in
		// containers; copying through shared memory always works.
		flags = append(flags, "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none")
		if os.Geteuid() == 0 {
			flags = append(flags, "--allow-run-as-root")
		}
	}
	return exec.Command(mpirun, append(append(flags, prog), args...)...), nil
}
