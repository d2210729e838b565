package reproduce

import (
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/ssl"
)

func TestParseVariant(t *testing.T) {
	for _, tc := range []struct {
		spec, canonical, dir string
	}{
		{"dmoco", "dmoco", "dmoco"},
		{" moco ", "moco", "moco"},
		{"dsimclr:negatives=memory,eps=0", "dsimclr:negatives=memory,eps=0", "dsimclr_negatives-memory_eps-0"},
		{"dmoco:mem-refresh=64", "dmoco:mem-refresh=64", "dmoco_mem-refresh-64"},
		{"dmoco:--policy=fifo", "dmoco:policy=fifo", "dmoco_policy-fifo"},
		{"dsimclr:eps=0.5", "dsimclr:eps=0.5", "dsimclr_eps-0.5"},
		{"moco:data=/tmp/my data", "moco:data=/tmp/my data", "moco_data--tmp-my-data"},
	} {
		v, err := ParseVariant(tc.spec)
		if err != nil {
			t.Errorf("ParseVariant(%q): %v", tc.spec, err)
			continue
		}
		if v.String() != tc.canonical || v.DirName() != tc.dir {
			t.Errorf("ParseVariant(%q) = %q, dir %q; want %q, %q", tc.spec, v, v.DirName(), tc.canonical, tc.dir)
		}
	}
}

func TestParseVariantErrors(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{"mocoo", `--method: got "mocoo", expected ` + strings.Join(ssl.Names(), ", ")},
		{"", `--method: got ""`},
		{"dmoco:", `nothing after "dmoco:"`},
		{"dmoco:mem-refresh", `"mem-refresh" is not key=value`},
		{"dmoco:refresh=64", "unknown training flag --refresh (expected one of "},
		{"dmoco:mem-refresh=many", `--mem-refresh: got "many", expected an integer`},
		{"dmoco:seed=3", "seed is set by the grid's seeds (--seeds)"},
		{"dmoco:rho-max=0.5", "rho-max is set by the grid's rho_max values (--rho)"},
		{"dmoco:method=moco", "unknown training flag --method"},
		{"dsimclr:eps=0,eps=1", "eps given twice"},
	} {
		_, err := ParseVariant(tc.spec)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseVariant(%q) = %v, want an error starting with %q", tc.spec, err, tc.want)
		}
	}
}

func TestParseVariantList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "moco,dmoco", want: []string{"moco", "dmoco"}},
		{in: "simclr, dsimclr:negatives=memory,eps=0 ,dsimclr", want: []string{"simclr", "dsimclr:negatives=memory,eps=0", "dsimclr"}},
		{in: "dmoco:mem-refresh=64,moco", want: []string{"dmoco:mem-refresh=64", "moco"}},
		{in: "eps=0,dsimclr", err: `setting "eps=0" before any method`},
		{in: "dsimclr,eps=0", err: `setting "eps=0" after method "dsimclr" without a colon: expected dsimclr:eps=0`},
		{in: "moco,mocoo", err: `variant "mocoo": --method: got "mocoo"`},
	} {
		got, err := ParseVariantList(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("ParseVariantList(%q) = %v, %v; want an error starting with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("ParseVariantList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestRunName(t *testing.T) {
	for _, tc := range []struct {
		spec string
		rho  float64
		seed int
		want string
	}{
		{"dmoco", 0.75, 0, "dmoco-rho0.75-seed0"},
		{"moco", 0.1, 2, "moco-rho0.1-seed2"},
		{"dsimclr:negatives=memory,eps=0", 0.75, 1, "dsimclr_negatives-memory_eps-0-rho0.75-seed1"},
	} {
		v, err := ParseVariant(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := runName(v, tc.rho, tc.seed); got != tc.want {
			t.Errorf("runName(%s, %g, %d) = %q, want %q", tc.spec, tc.rho, tc.seed, got, tc.want)
		}
	}
}

func TestParseVariantsDistinctDirs(t *testing.T) {
	if _, err := parseVariants([]string{"moco:data=a b", "moco:data=a/b"}); err == nil || !strings.Contains(err.Error(), "share the run name") {
		t.Errorf("got %v, want an error about a shared run name", err)
	}
}
