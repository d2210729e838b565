package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/dist"
	"github.com/duel-ssl/duel/duel/dist/mpi"
)

// distFlag selects data-parallel training: under an MPI launcher (mpirun,
// mpiexec, srun with PMI/PMIx) every process is one rank.
var distFlag = &cli.StringFlag{
	Name:  "dist",
	Value: "auto",
	Usage: "data parallelism: auto (MPI when started by mpirun/mpiexec/srun, else one process), mpi (always initialise MPI), none (one process, even under a launcher)",
}

// distCheckFlag sets how often the ranks compare their model and memory.
var distCheckFlag = &cli.IntFlag{
	Name:  "dist-check-every",
	Value: 100,
	Usage: "with several ranks: compare a hash of every rank's model and memory every N steps (and at the end); a difference stops training",
}

// openGroup returns the process group --dist selects, and the function
// that leaves it (MPI_Finalize). Without a launcher --dist auto is one
// process (dist.Single) and needs no MPI library.
func openGroup(c *cli.Context) (dist.Comm, error) {
	switch mode := c.String(distFlag.Name); mode {
	case "none":
		return dist.Single{}, nil
	case "auto", "mpi":
		if mode == "auto" && !mpi.Launched() {
			return dist.Single{}, nil
		}
		comm, err := mpi.Init()
		if err != nil {
			return nil, fmt.Errorf("--dist %s: %w", mode, err)
		}
		return comm, nil
	default:
		return nil, flagError(distFlag.Name, fmt.Sprintf("%q", mode), "auto, mpi or none")
	}
}

// rankWriter returns w on rank 0 and io.Discard on the others: logs,
// progress bars and JSON answers come from rank 0 only.
func rankWriter(comm dist.Comm, w io.Writer) io.Writer {
	if comm.Rank() == 0 {
		return w
	}
	return io.Discard
}

// failGroup ends a failed data-parallel run: the error is printed here,
// with its rank, and the whole job is aborted so that no rank is left
// waiting in a collective for the failed one. On one process it does
// nothing (the error is printed by run).
func failGroup(comm dist.Comm, err error) {
	if comm.Size() == 1 {
		return
	}
	fmt.Fprintf(os.Stderr, "duelctl: rank %d of %d: %v (aborting every rank)\n", comm.Rank(), comm.Size(), err)
	comm.Abort(1)
}

// broadcastString returns rank 0's s on every rank (the run directory
// named from rank 0's clock).
func broadcastString(comm dist.Comm, s string) (string, error) {
	if comm.Size() == 1 {
		return s, nil
	}
	n := []byte{byte(len(s) >> 24), byte(len(s) >> 16), byte(len(s) >> 8), byte(len(s))}
	if err := comm.Broadcast(n, 0); err != nil {
		return "", err
	}
	buf := make([]byte, int(n[0])<<24|int(n[1])<<16|int(n[2])<<8|int(n[3]))
	copy(buf, s)
	if err := comm.Broadcast(buf, 0); err != nil {
		return "", err
	}
	return string(buf), nil
}
