package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/ssl"
)

// TestValidateBounds: the size settings have upper bounds, and settings
// whose memory exceeds any machine's are refused naming the flag, before
// anything is allocated.
func TestValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name, method, flag string
		edit               func(*Config)
		memory             bool // a *MemoryError rather than a *ConfigError
	}{
		{"batch cap", "dmoco", "batch", func(c *Config) { c.Batch = 100000000 }, false},
		{"proj-dim cap", "dmoco", "proj-dim", func(c *Config) { c.ProjDim = 100000000000 }, false},
		{"proj-hidden cap", "byol", "proj-hidden", func(c *Config) { c.ProjHidden = 1000000000 }, false},
		{"pred-hidden cap", "byol", "pred-hidden", func(c *Config) { c.PredHidden = MaxWidth + 1 }, false},
		{"memory-size cap", "dmoco", "memory-size", func(c *Config) { c.MemorySize = MaxMemorySize + 1 }, false},
		{"mem-negatives cap", "dsimclr", "mem-negatives", func(c *Config) { c.MemNegatives = MaxMemorySize + 1 }, false},
		{"mem-refresh cap", "dmoco", "mem-refresh", func(c *Config) { c.MemRefresh = MaxMemorySize + 1 }, false},
		{"workers cap", "simclr", "workers", func(c *Config) { c.Workers = 100000 }, false},
		{"imbalance-ratio", "simclr", "imbalance-ratio", func(c *Config) { c.ImbalanceRatio = 0 }, false},
		// Within the caps, but beyond any machine: 2^20 images of 96x96
		// through a ResNet-50 of width 4096 (the largest width ParseName
		// takes), a memory of 2^24 rows of 2^20 values.
		{"batch memory", "simclr", "batch", func(c *Config) {
			c.Dataset, c.Arch, c.Batch, c.BNSplits = "stl10", "resnet50-w4096", MaxBatch, 1
		}, true},
		{"memory-size memory", "dmoco", "memory-size", func(c *Config) { c.MemorySize, c.ProjDim = MaxMemorySize, MaxWidth }, true},
		{"barlow memory", "barlow", "proj-dim", func(c *Config) { c.ProjDim, c.ProjHidden = MaxWidth, 0 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Preset("tiny", tc.method)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&c)
			var err2 error
			if tc.memory {
				// A machine of 1 TiB: the estimate does not depend on this one's.
				if err := c.ValidateSettings(); err != nil {
					t.Fatalf("settings: %v", err)
				}
				err2 = checkMemoryOn(1<<40, c.MemoryNeeds())
				var me *MemoryError
				if !errors.As(err2, &me) || !strings.Contains(err2.Error(), "this machine has 1.0 TiB") {
					t.Fatalf("error %v, expected a *MemoryError", err2)
				}
			} else {
				err2 = c.Validate()
				var ce *ConfigError
				if !errors.As(err2, &ce) {
					t.Fatalf("error %v, expected a *ConfigError", err2)
				}
			}
			if msg := err2.Error(); !strings.HasPrefix(msg, "--"+tc.flag+": got ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q, expected one line --%s: got ...", msg, tc.flag)
			}
		})
	}
}

// TestPresetsFitSmallMachines: every preset and method fits the machine it
// is meant for by the estimate, so that the check never refuses a normal
// run: cpu-small and tiny a machine of 2 GiB; the paper's presets (a
// ResNet-50 on batches of 256: some 14 GiB of activations on the CPU,
// 20 for BYOL's four passes) one of 24 GiB, and a host of 2 GiB with the
// model on a GPU.
func TestPresetsFitSmallMachines(t *testing.T) {
	for _, p := range PresetNames {
		for _, m := range ssl.Names() {
			c, err := Preset(p, m)
			if err != nil {
				t.Fatal(err)
			}
			have := int64(2 << 30)
			if strings.HasPrefix(p, "paper-") {
				have = 24 << 30
			}
			if err := checkMemoryOn(have, c.MemoryNeeds()); err != nil {
				t.Errorf("preset %s, method %s: %v", p, m, err)
			}
			if err := checkMemoryOn(2<<30, c.MemoryNeedsOn("cuda:0", 1)); err != nil {
				t.Errorf("preset %s, method %s on a GPU: %v", p, m, err)
			}
		}
	}
}

func TestMemoryError(t *testing.T) {
	err := checkMemoryOn(24<<30, []MemoryNeed{{"batch", 100000000, 2.4e12, "for the views"}})
	if got, want := err.Error(), "--batch: got 100000000, needs about 2.2 TiB for the views, this machine has 24 GiB"; got != want {
		t.Errorf("error %q, expected %q", got, want)
	}
	err = checkMemoryOn(1<<30, []MemoryNeed{{"size", 10, 1 << 29, "for the rows"}, {"updates", 20, 1 << 30, "for the batches"}})
	if got, want := err.Error(), "--updates: got 20, needs about 1.5 GiB (1.0 GiB for the batches), this machine has 1.0 GiB"; got != want {
		t.Errorf("error %q, expected %q", got, want)
	}
	if err := checkMemoryOn(0, []MemoryNeed{{"batch", 1, 1e30, "for everything"}}); err != nil {
		t.Errorf("unknown machine memory: %v, expected no check", err)
	}
	if err := checkMemoryOn(1<<30, []MemoryNeed{{"batch", 1, 1 << 30, "for everything"}}); err != nil {
		t.Errorf("exactly the machine's memory: %v", err)
	}
}

func TestParseMemTotal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"MemTotal:       24684084 kB\nMemFree:        21912272 kB\n", 24684084 * 1024},
		{"MemFree: 1 kB\n", 0},
		{"MemTotal: lots kB\n", 0},
		{"MemTotal: 99999999999999999999 kB\n", 0},
		{"MemTotal:\n", 0},
		{"", 0},
	} {
		if got := parseMemTotal(tc.in); got != tc.want {
			t.Errorf("parseMemTotal(%q) = %d, expected %d", tc.in, got, tc.want)
		}
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil && MachineMemory() <= 0 {
		t.Errorf("MachineMemory() = %d with a /proc/meminfo", MachineMemory())
	}
}

func TestFormatBytes(t *testing.T) {
	for b, want := range map[float64]string{512: "512 B", 3.5 * (1 << 20): "3.5 MiB", 24 << 30: "24 GiB", 2.4e12: "2.2 TiB", 1e30: "827181 YiB"} {
		if got := FormatBytes(b); got != want {
			t.Errorf("FormatBytes(%g) = %q, expected %q", b, got, want)
		}
	}
}

// TestTrainRefusesBeforeTheRunDirectory: a batch beyond the bounds is
// refused before the run directory (and its step-0 checkpoint) exists, so
// that a corrected command can start the run in the same --out.
func TestTrainRefusesBeforeTheRunDirectory(t *testing.T) {
	c, err := Preset("tiny", "simclr")
	if err != nil {
		t.Fatal(err)
	}
	c.Steps, c.Batch = 1, 100000000
	out := filepath.Join(t.TempDir(), "run")
	_, err = Train(context.Background(), &c, Options{Out: out})
	if err == nil || !strings.HasPrefix(err.Error(), "--batch: got 100000000") {
		t.Fatalf("error %v, expected --batch: got 100000000 ...", err)
	}
	if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the run directory exists after the refusal: %v", serr)
	}
}

// TestReadConfigIgnoresTheMachine: a run's config.json is read on any
// machine (ValidateSettings), the memory being checked when it trains.
func TestReadConfigIgnoresTheMachine(t *testing.T) {
	c, err := Preset("tiny", "dmoco")
	if err != nil {
		t.Fatal(err)
	}
	c.MemorySize, c.ProjDim = MaxMemorySize, MaxWidth // 64 TiB of memory rows
	dir := t.TempDir()
	if err := WriteConfig(dir, &c); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(dir); err != nil {
		t.Errorf("ReadConfig: %v", err)
	}
	if MachineMemory() > 0 {
		var me *MemoryError
		if err := c.Validate(); !errors.As(err, &me) || me.Flag != "memory-size" {
			t.Errorf("Validate: %v, expected --memory-size's *MemoryError", err)
		}
	}
}

// TestBNSplitChoices lists the ghost BatchNorm groups a batch allows.
func TestBNSplitChoices(t *testing.T) {
	for _, tc := range []struct {
		batch int
		want  string
	}{
		{1, "none: a batch of 1 cannot be normalised"},
		{2, "only 1"},
		{3, "only 1"},
		{6, "1, 2 or 3"},
		{30, "1, 2, 3, 5, 6, ..., 15"},
		{256, "1, 2, 4, 8, 16, ..., 128"},
	} {
		if got := bnSplitChoices(tc.batch); got != tc.want {
			t.Errorf("batch %d: %q, want %q", tc.batch, got, tc.want)
		}
	}
}
