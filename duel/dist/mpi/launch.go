package mpi

import (
	"os"
	"strconv"
)

// LauncherVariables are the environment variables, any one of which set to
// a non-empty value tells Launched that an MPI launcher started the
// process:
//
//   - OMPI_COMM_WORLD_SIZE: Open MPI's mpirun/mpiexec (orterun in 1.x to
//     4.x, prterun in 5.x) sets it, with OMPI_COMM_WORLD_RANK, in every
//     rank.
//   - PMI_SIZE, PMI_RANK: the PMI-1/PMI-2 wire protocol, set by MPICH's
//     Hydra mpiexec (also Intel MPI's and MVAPICH2's) and by Slurm's
//     srun --mpi=pmi2.
//   - PMIX_RANK: PMIx servers, set by Open MPI 4/5's launchers, PRRTE and
//     Slurm's srun --mpi=pmix.
//
// Slurm's own SLURM_PROCID is not among them: srun sets it for any program,
// with or without MPI; srun starts MPI ranks with one of the PMI variables
// above as well (plain srun --mpi=none with an MPI built on Slurm's PMI-1
// library is the one launch this misses).
var LauncherVariables = []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"}

// Launched reports whether an MPI launcher started this process, by the
// environment (LauncherVariables). A program uses it to choose between
// Init and a group of one (dist's Single) without loading MPI: a process
// started by hand is not launched, even where MPI is installed.
func Launched() bool {
	for _, v := range LauncherVariables {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// RankVariables are the environment variables in which launchers give each
// process its rank in MPI_COMM_WORLD: OMPI_COMM_WORLD_RANK (Open MPI's
// mpirun), PMI_RANK (MPICH's Hydra, Intel MPI, srun --mpi=pmi2) and
// PMIX_RANK (PMIx: Open MPI 4/5, PRRTE, srun --mpi=pmix).
var RankVariables = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}

// LauncherRank returns the rank the launcher gave this process, read from
// the first of RankVariables that holds a non-negative integer, without
// loading MPI; ok is false when none does. Under a launcher it is the rank
// Init's Comm reports; a process that needs its rank before Init (a test
// that makes one rank fail, say) reads it here instead of from one
// implementation's variable.
func LauncherRank() (rank int, ok bool) {
	for _, v := range RankVariables {
		if r, err := strconv.Atoi(os.Getenv(v)); err == nil && r >= 0 {
			return r, true
		}
	}
	return 0, false
}
