package train

import (
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/ssl"
)

// TestCheckApplies refuses settings the method (or policy) never reads
// once they differ from its preset, and passes every preset as it is.
func TestCheckApplies(t *testing.T) {
	for _, tc := range []struct {
		method string
		flags  map[string]string
		want   string // "" passes
	}{
		{"simclr", map[string]string{"policy": "fifo"}, `--policy: got "fifo", expected nothing (simclr has no memory)`},
		{"byol", map[string]string{"memory-size": "10"}, "--memory-size: got 10, expected nothing (byol has no memory)"},
		{"barlow", map[string]string{"mem-refresh": "4"}, "--mem-refresh: got 4, expected nothing (barlow has no memory)"},
		{"moco", map[string]string{"admission": "compete"}, `--admission: got "compete", expected nothing (--policy fifo is not duel)`},
		{"dmoco", map[string]string{"policy": "fifo", "safe-update": "true"}, "--safe-update: got true, expected nothing (--policy fifo is not duel)"},
		{"simclr", map[string]string{"ema": "0.9"}, "--ema: got 0.9, expected nothing (simclr has no momentum encoder)"},
		{"barlow", map[string]string{"tau": "0.2"}, "--tau: got 0.2, expected nothing (barlow has no contrastive loss)"},
		{"dmoco", map[string]string{"mem-view": "plain"}, `--mem-view: got "plain", expected nothing (dsimclr only)`},
		{"moco", map[string]string{"pred-hidden": "64"}, "--pred-hidden: got 64, expected nothing (moco has no predictor)"},
		{"simclr", map[string]string{"shuffle-bn": "true"}, "--shuffle-bn: got true, expected nothing (moco and dmoco only)"},
		{"dmoco", map[string]string{"barlow-lambda": "0.1"}, "--barlow-lambda: got 0.1, expected nothing (barlow only)"},
		// Settings the run reads, and inapplicable ones at the preset's value.
		{"dmoco", map[string]string{"memory-size": "64", "admission": "compete", "safe-update": "true", "ema": "0.9"}, ""},
		{"moco", map[string]string{"policy": "duel", "admission": "compete"}, ""},
		{"dsimclr", map[string]string{"mem-view": "plain", "tau": "0.2"}, ""},
		{"byol", map[string]string{"pred-hidden": "64", "head-bn": "false", "ema": "0.9"}, ""},
		{"simclr", map[string]string{"policy": "duel"}, ""},
	} {
		c := tinyConfig(t, tc.method)
		for k, v := range tc.flags {
			if err := SetFlag(c, k, v); err != nil {
				t.Fatal(err)
			}
		}
		err := CheckApplies(c)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%s %v: %v, want %q", tc.method, tc.flags, err, tc.want)
		}
	}
	for _, preset := range PresetNames {
		for _, method := range ssl.Names() {
			c, err := Preset(preset, method)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckApplies(&c); err != nil {
				t.Errorf("preset %s, %s: %v", preset, method, err)
			}
		}
	}
}

// TestPredictorSettingsFollowInfo: --pred-hidden and --head-bn apply to
// any method whose Info has a predictor, whatever its name, so a new
// method with one is configurable without editing this package.
func TestPredictorSettingsFollowInfo(t *testing.T) {
	for _, a := range applicabilities {
		if a.flag != "pred-hidden" && a.flag != "head-bn" {
			continue
		}
		c := &Config{Method: "simsiam"}
		if why := a.needs(c, ssl.Info{Predictor: true}); why != "" {
			t.Errorf("--%s refused for a method with a predictor: %s", a.flag, why)
		}
		if why := a.needs(c, ssl.Info{}); why != "simsiam has no predictor" {
			t.Errorf("--%s for a method without a predictor: %q", a.flag, why)
		}
	}
}
