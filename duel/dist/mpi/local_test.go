package mpi

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Outputs of <launcher> --version, as the launchers print them.
const (
	// Debian 12's openmpi-bin (mpirun, mpiexec, mpirun.openmpi).
	openMPI414Version = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
	openMPI5Version   = "mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n"
	// The same package's mpiexec, orterun, mpirun.openmpi, mpiexec.openmpi.
	openRTE414Version = "mpiexec.openmpi (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
	// Debian 12's mpich (mpiexec.mpich, mpirun.mpich, mpiexec.hydra), cut.
	hydra402Version = "HYDRA build details:\n" +
		"    Version:                                 4.0.2\n" +
		"    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n" +
		"    Process Manager:                         pmi\n" +
		"    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist\n"
	intelMPIVersion = "Intel(R) MPI Library for Linux* OS, Version 2021.6 Build 20220227 (id: 28877f3f32)\nCopyright 2003-2022, Intel Corporation.\n"
)

// TestLauncherFlags checks the implementation read from sample --version
// outputs and the flags LocalCommand gives each; it needs no MPI.
func TestLauncherFlags(t *testing.T) {
	openMPIFlags := []string{"-np", "2", "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"}
	for _, tc := range []struct {
		name    string
		version string
		root    bool
		kind    string   // "" for an error
		flags   []string // with -np 2
		errHas  string   // for an error
	}{
		{"Open MPI 4.1.4", openMPI414Version, false, "Open MPI", openMPIFlags, ""},
		{"Open MPI 4.1.4 as root", openMPI414Version, true, "Open MPI", append(slices.Clone(openMPIFlags), "--allow-run-as-root"), ""},
		{"Open MPI 5", openMPI5Version, false, "Open MPI", openMPIFlags, ""},
		{"Open MPI 4.1.4 mpiexec (OpenRTE)", openRTE414Version, true, "Open MPI", append(slices.Clone(openMPIFlags), "--allow-run-as-root"), ""},
		{"MPICH Hydra 4.0.2", hydra402Version, false, "MPICH", []string{"-np", "2"}, ""},
		{"MPICH Hydra 4.0.2 as root", hydra402Version, true, "MPICH", []string{"-np", "2"}, ""},
		{"Intel MPI", intelMPIVersion, true, "MPICH", []string{"-np", "2"}, ""},
		{"srun", "slurm 22.05.8\n", false, "", nil, `"slurm 22.05.8"`},
		{"PRRTE", "prterun (PRRTE) 3.0.2\n\nReport bugs to https://github.com/openpmix/prrte\n", false, "", nil, `"prterun (PRRTE) 3.0.2"`},
		{"nothing", "", false, "", nil, "printed nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, err := LauncherKind(tc.version)
			if tc.kind == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("LauncherKind = %q, %v; want an error with %s", kind, err, tc.errHas)
				}
				return
			}
			if err != nil || kind != tc.kind {
				t.Fatalf("LauncherKind = %q, %v; want %q", kind, err, tc.kind)
			}
			if got := launcherFlags(kind, 2, tc.root); !slices.Equal(got, tc.flags) {
				t.Errorf("launcherFlags(%q, 2, root %v) = %q; want %q", kind, tc.root, got, tc.flags)
			}
		})
	}
}

func TestLauncher(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		fromEnv   bool
	}{
		{"", "mpirun", false},
		{"mpiexec.mpich", "mpiexec.mpich", true},
		{"/opt/mpich/bin/mpiexec", "/opt/mpich/bin/mpiexec", true},
	} {
		t.Setenv(EnvLauncher, tc.env)
		if got, fromEnv := Launcher(); got != tc.want || fromEnv != tc.fromEnv {
			t.Errorf("%s=%q: Launcher() = %q, %v; want %q, %v", EnvLauncher, tc.env, got, fromEnv, tc.want, tc.fromEnv)
		}
	}
}

// TestLocalCommandMixed checks that a launcher of another implementation
// than the library's is refused with a message naming both variables. It
// needs Open MPI's mpirun and MPICH's library (skips otherwise).
func TestLocalCommandMixed(t *testing.T) {
	t.Setenv(EnvLauncher, "mpirun")
	for _, p := range []string{"libmpich.so.12", "libmpi.so.12"} {
		t.Setenv(EnvLibrary, p)
		if _, _, err := openLibrary(); err == nil {
			break
		}
		t.Setenv(EnvLibrary, "")
	}
	if _, fromEnv := Library(); !fromEnv {
		t.Skip("skipping: no MPICH library (libmpich.so.12, libmpi.so.12) to pair with mpirun")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("skipping: mpirun is not on PATH")
	}
	if k, err := launcherKindOf(mpirun); err != nil || k != implOpenMPI {
		t.Skipf("skipping: mpirun is not Open MPI's (%q, %v)", k, err)
	}
	cmd, err := LocalCommand(2, "prog")
	if err == nil {
		t.Fatalf("LocalCommand with Open MPI's mpirun and MPICH's library = %v; want an error", cmd.Args)
	}
	for _, want := range []string{"Open MPI", "MPICH", EnvLauncher, EnvLibrary} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	t.Log(err)
}

func TestLauncherRank(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		rank int
		ok   bool
	}{
		{"by hand", nil, 0, false},
		{"Open MPI", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "PMIX_RANK": "1"}, 1, true},
		{"Hydra", map[string]string{"PMI_RANK": "3", "PMI_SIZE": "4"}, 3, true},
		{"PMIx", map[string]string{"PMIX_RANK": "2"}, 2, true},
		{"rank 0", map[string]string{"PMI_RANK": "0"}, 0, true},
		{"not a number", map[string]string{"PMI_RANK": "x"}, 0, false},
		{"negative", map[string]string{"OMPI_COMM_WORLD_RANK": "-1"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range RankVariables {
				t.Setenv(v, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if r, ok := LauncherRank(); r != tc.rank || ok != tc.ok {
				t.Errorf("LauncherRank() = %d, %v with %v; want %d, %v", r, ok, tc.env, tc.rank, tc.ok)
			}
		})
	}
}

// FuzzLauncherKind: any launcher --version output gives a kind or an
// error, never a panic, and a kind is one of the two implementations.
func FuzzLauncherKind(f *testing.F) {
	for _, s := range []string{"mpirun (Open MPI) 4.1.4\n", "HYDRA build details:\n    Version: 4.0.2\n", "", "srun slurm 23.02"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		kind, err := LauncherKind(out)
		if err == nil && kind != "Open MPI" && kind != "MPICH" {
			t.Errorf("LauncherKind(%q) = %q, neither implementation", out, kind)
		}
	})
}
