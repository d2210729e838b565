package mpi

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestLibrary(t *testing.T) {
	for _, tc := range []struct {
		env         string
		wantPaths   []string
		wantFromEnv bool
	}{
		{"", DefaultLibraries, false},
		{"/opt/mpich/lib/libmpi.so.12", []string{"/opt/mpich/lib/libmpi.so.12"}, true},
	} {
		t.Setenv(EnvLibrary, tc.env)
		paths, fromEnv := Library()
		if !slices.Equal(paths, tc.wantPaths) || fromEnv != tc.wantFromEnv {
			t.Errorf("%s=%q: Library() = %q, %v; want %q, %v", EnvLibrary, tc.env, paths, fromEnv, tc.wantPaths, tc.wantFromEnv)
		}
	}
}

// TestInitWithoutMPI checks that a missing library is an error value
// wrapping ErrNoMPI that names the file and says what to do, from Init
// and LibraryVersion alike.
func TestInitWithoutMPI(t *testing.T) {
	if lib.ok {
		t.Fatal("the MPI library was loaded by an earlier test of this process; this test needs it unloaded")
	}
	for _, path := range []string{"/nonexistent/libmpi.so", "libduel-no-such-mpi.so.99"} {
		t.Setenv(EnvLibrary, path)
		c, err := Init()
		if c != nil || err == nil {
			t.Fatalf("%s=%s: Init() = %v, %v; want an error", EnvLibrary, path, c, err)
		}
		if !errors.Is(err, ErrNoMPI) {
			t.Errorf("%s=%s: Init's error %q does not wrap ErrNoMPI", EnvLibrary, path, err)
		}
		for _, want := range []string{path, EnvLibrary, "libmpi.so.40"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%s: Init's error %q does not mention %q", EnvLibrary, path, err, want)
			}
		}
		if _, err := LibraryVersion(); !errors.Is(err, ErrNoMPI) {
			t.Errorf("%s=%s: LibraryVersion's error %v does not wrap ErrNoMPI", EnvLibrary, path, err)
		}
	}
	if lib.ok {
		t.Error("a failed load left the library marked loaded")
	}
}

func TestLaunched(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"by hand", nil, false},
		{"Open MPI mpirun", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}, true},
		{"Hydra (PMI size)", map[string]string{"PMI_SIZE": "4"}, true},
		{"Hydra (PMI rank)", map[string]string{"PMI_RANK": "0"}, true},
		{"PMIx", map[string]string{"PMIX_RANK": "3"}, true},
		{"srun --mpi=pmix", map[string]string{"SLURM_PROCID": "0", "PMIX_RANK": "0"}, true},
		{"srun --mpi=pmi2", map[string]string{"SLURM_PROCID": "1", "PMI_RANK": "1", "PMI_SIZE": "2"}, true},
		{"srun without MPI", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, false},
		{"only the rank of Open MPI", map[string]string{"OMPI_COMM_WORLD_RANK": "0"}, false},
		{"empty values", map[string]string{"OMPI_COMM_WORLD_SIZE": "", "PMI_SIZE": "", "PMI_RANK": "", "PMIX_RANK": ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// t.Setenv to "" first: the test may itself run under a launcher.
			for _, v := range append(slices.Clone(LauncherVariables), "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "SLURM_NTASKS") {
				t.Setenv(v, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if got := Launched(); got != tc.want {
				t.Errorf("Launched() = %v with %v; want %v", got, tc.env, tc.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	var err error = &Error{Func: "MPI_Bcast", Code: 8, Msg: "MPI_ERR_ROOT: invalid root"}
	const want = "mpi: MPI_Bcast: MPI_ERR_ROOT: invalid root (error code 8)"
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	var e *Error
	if !errors.As(errors.Join(errors.New("context"), err), &e) || e.Code != 8 {
		t.Errorf("errors.As of a joined *Error = %v", e)
	}
}

func TestThreadLevelName(t *testing.T) {
	for l, want := range map[int]string{
		threadSingle:     "MPI_THREAD_SINGLE",
		threadFunneled:   "MPI_THREAD_FUNNELED",
		threadSerialized: "MPI_THREAD_SERIALIZED",
		threadMultiple:   "MPI_THREAD_MULTIPLE",
		7:                "thread level 7",
	} {
		if got := threadLevelName(l); got != want {
			t.Errorf("threadLevelName(%d) = %q; want %q", l, got, want)
		}
	}
}
