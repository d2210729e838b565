package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestConvPhases: the phases of a strided input gradient partition the
// input positions of each axis, every position of phase r has (y + P)
// mod S = r, and the phase's taps are the kernel's taps i = r + S*u.
func TestConvPhases(t *testing.T) {
	for k := 1; k <= 7; k++ {
		for s := 2; s <= 4; s++ {
			for p := 0; p <= k; p++ {
				for n := 1; n <= 12; n++ {
					seen := make([]int, n)
					for r := 0; r < s; r++ {
						taps, t0, length := convPhaseLen(r, k, s, p, n)
						want := 0
						for i := r; i < k; i += s {
							want++
						}
						if taps != want {
							t.Fatalf("K %d S %d P %d n %d: residue %d has %d taps, want %d", k, s, p, n, r, taps, want)
						}
						for ti := t0; ti < t0+length; ti++ {
							y := s*ti + r - p
							if y < 0 || y >= n || (y+p)%s != r {
								t.Fatalf("K %d S %d P %d n %d: residue %d, t %d: position %d", k, s, p, n, r, ti, y)
							}
							seen[y]++
						}
					}
					for y, c := range seen {
						if c != 1 {
							t.Fatalf("K %d S %d P %d n %d: position %d in %d phases", k, s, p, n, y, c)
						}
					}
				}
			}
		}
	}
}

// TestConvPhaseChoice: the phase kernels follow the tensor-core kernel
// versions as the other passes do; fp32 has none.
func TestConvPhaseChoice(t *testing.T) {
	for _, tc := range []struct {
		prec Precision
		kind TCKernel
		want string
	}{
		{FP32, TCAuto, ""},
		{TF32, TCAuto, "conv_dgradp_tc_tf32rr"},
		{TF32, TCV2, "conv_dgradp_tc_tf32"},
		{TF32, TCV4, "conv_dgradp_tc_tf32rl"},
		{TF32, TCWG, "conv_dgradp_wg_tf32"},
		{BF16, TCAuto, "conv_dgradp_tc_bf16"},
	} {
		t.Run(fmt.Sprintf("%v/%v", tc.prec, tc.kind), func(t *testing.T) {
			be := &Backend{convPrec: tc.prec}
			be.SetTCKernel(tc.kind)
			k, ok := be.convTCFor("dgradp", 128)
			got := map[bool]string{true: k.name}[ok]
			if got != tc.want {
				t.Fatalf("convTCFor(dgradp) = %q, want %q", got, tc.want)
			}
			if ok && convDgradP[k.name] == nil {
				t.Fatalf("%s has no launcher", k.name)
			}
		})
	}
}

// TestStridedPhasesFromEnv: $DUEL_CUDA_STRIDED_GRAD unset or dcol keeps
// dcol, phases (any case, spaces around) picks the phases, and anything
// else is an error naming the variable, the value and what is expected.
func TestStridedPhasesFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value   string
		set     bool
		phases  bool
		wantErr bool
	}{
		{"", false, false, false},
		{"", true, false, false},
		{"dcol", true, false, false},
		{" Phases ", true, true, false},
		{"PHASES", true, true, false},
		{"phase", true, false, true},
		{"1", true, false, true},
	} {
		t.Run(fmt.Sprintf("%q/%v", tc.value, tc.set), func(t *testing.T) {
			if tc.set {
				t.Setenv(StridedGradEnv, tc.value)
			} else {
				t.Setenv(StridedGradEnv, "")
				os.Unsetenv(StridedGradEnv)
			}
			phases, err := stridedPhasesFromEnv()
			if (err != nil) != tc.wantErr || phases != tc.phases {
				t.Fatalf("stridedPhasesFromEnv() = %v, %v; want %v, error %v", phases, err, tc.phases, tc.wantErr)
			}
			if err != nil {
				for _, w := range []string{StridedGradEnv, tc.value, "dcol or phases"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
			}
		})
	}
}
