package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// EnvLauncher is the environment variable that names the MPI launcher
// LocalCommand uses instead of mpirun from PATH: a path, or a name looked
// up in PATH, e.g. mpiexec.mpich (MPICH's Hydra) next to
// DUEL_MPI_LIBRARY=/usr/lib/x86_64-linux-gnu/libmpich.so.12.
const EnvLauncher = "DUEL_MPIRUN"

// Launcher returns the launcher LocalCommand runs: EnvLauncher's value when
// it is set and not empty, else "mpirun", and whether it came from the
// variable.
func Launcher() (name string, fromEnv bool) {
	if l := os.Getenv(EnvLauncher); l != "" {
		return l, true
	}
	return "mpirun", false
}

// The implementations LauncherKind tells apart; they are also the names of
// the library implementations (Comm.Implementation).
const (
	implOpenMPI = "Open MPI"
	implMPICH   = "MPICH"
)

// LauncherKind tells the implementation of an MPI launcher from the output
// of its --version: "Open MPI" for Open MPI's ("mpirun (Open MPI) 4.1.4";
// its mpiexec, orterun, mpirun.openmpi say "(OpenRTE) 4.1.4"), "MPICH" for
// Hydra ("HYDRA build details:", MPICH's and
// MVAPICH2's mpiexec) and Intel MPI's ("Intel(R) MPI Library"), whose
// ranks use MPICH's ABI. Any other output is an error quoting its first
// line.
func LauncherKind(versionOutput string) (string, error) {
	switch {
	case strings.Contains(versionOutput, "HYDRA build details"), strings.Contains(versionOutput, "Intel(R) MPI Library"):
		return implMPICH, nil
	case strings.Contains(versionOutput, "(Open MPI)"), strings.Contains(versionOutput, "(OpenRTE)"):
		return implOpenMPI, nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(versionOutput), "\n")
	if first == "" {
		return "", errors.New("its --version printed nothing: neither Open MPI's mpirun nor MPICH's Hydra mpiexec")
	}
	return "", fmt.Errorf("its --version says %q: neither Open MPI's mpirun nor MPICH's Hydra mpiexec", first)
}

// launcherFlags are the flags before the program for np ranks on this
// machine under a launcher of implementation kind, run as root or not.
// Open MPI's mpirun: --oversubscribe (more ranks than cores), shared
// memory and loopback only without vader's single-copy mechanisms (CMA and
// KNEM are often refused in containers), and --allow-run-as-root as root.
// Hydra needs none of these: it starts local ranks with fork, allows more
// ranks than cores and runs as root.
func launcherFlags(kind string, np int, root bool) []string {
	flags := []string{"-np", fmt.Sprint(np)}
	if kind == implOpenMPI {
		flags = append(flags, "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none")
		if root {
			flags = append(flags, "--allow-run-as-root")
		}
	}
	return flags
}

// LocalCommand returns the command that starts np ranks of prog (with
// args) on this machine through the launcher (Launcher: DUEL_MPIRUN, else
// mpirun from PATH), with the flags of its implementation, which it reads
// from the launcher's --version (LauncherKind; see launcherFlags): Open
// MPI's mpirun oversubscribed, shared memory and loopback only and, as
// root (containers, CI), with --allow-run-as-root; MPICH's Hydra mpiexec
// as is. The launcher's implementation must be the MPI library's (Library):
// a mix (Open MPI's mpirun with DUEL_MPI_LIBRARY at MPICH's library, or
// the reverse) is an error that says which variable to set. Tests and
// benchmarks use it; on a cluster use your site's mpirun or srun line.
// The error wraps ErrNoMPI when the launcher is not found or the MPI
// library does not load.
func LocalCommand(np int, prog string, args ...string) (*exec.Cmd, error) {
	name, fromEnv := Launcher()
	launcher, err := exec.LookPath(name)
	if err != nil {
		if fromEnv {
			return nil, fmt.Errorf("mpi: %s=%s: not found (%w): point it at an MPI launcher (mpirun, mpiexec.mpich) or unset it", EnvLauncher, name, ErrNoMPI)
		}
		return nil, fmt.Errorf("mpi: mpirun is not on PATH (%w): install openmpi-bin, or set %s to the launcher", ErrNoMPI, EnvLauncher)
	}
	kind, err := launcherKindOf(launcher)
	if err != nil {
		return nil, err
	}
	h, path, err := openLibrary()
	if err != nil {
		return nil, err
	}
	a, err := detectABI(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (%w)", path, err, ErrNoMPI)
	}
	if a.name != kind {
		return nil, fmt.Errorf("mpi: the launcher %s is %s's but the MPI library %s is %s's: its ranks would not form one job; set %s to %s's launcher (e.g. %s) or %s to %s's library (e.g. %s)",
			launcher, kind, path, a.name, EnvLauncher, a.name, exampleLauncher[a.name], EnvLibrary, kind, exampleLibrary[kind])
	}
	flags := launcherFlags(kind, np, os.Geteuid() == 0)
	return exec.Command(launcher, append(append(flags, prog), args...)...), nil
}

// exampleLauncher and exampleLibrary are Debian's names, for messages.
var (
	exampleLauncher = map[string]string{implOpenMPI: "mpirun.openmpi", implMPICH: "mpiexec.mpich"}
	exampleLibrary  = map[string]string{implOpenMPI: "libmpi.so.40", implMPICH: "/usr/lib/x86_64-linux-gnu/libmpich.so.12"}
)

// launcherKindOf runs launcher --version (for at most 10 seconds) and
// returns LauncherKind of its output.
func launcherKindOf(launcher string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, launcher, "--version").CombinedOutput()
	if err != nil && len(out) == 0 {
		return "", fmt.Errorf("mpi: %s --version: %v", launcher, err)
	}
	kind, kerr := LauncherKind(string(out))
	if kerr != nil {
		return "", fmt.Errorf("mpi: launcher %s: %w (set %s to Open MPI's mpirun or MPICH's mpiexec)", launcher, kerr, EnvLauncher)
	}
	return kind, nil
}
