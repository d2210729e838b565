package train

import (
	"fmt"

	"github.com/duel-ssl/duel/duel/ssl"
)

// An inapplicable setting is one that the run's method (or memory policy)
// never reads: a value other than the preset's there would be recorded in
// config.json while changing nothing, which reads as a run of other
// settings. CheckApplies refuses it instead.

// applicability says which runs read a setting: needs returns, for a
// configuration and its method's Info, why the setting is not read ("" when
// it is).
type applicability struct {
	flag  string
	needs func(c *Config, info ssl.Info) string
}

// memoryOnly, momentumOnly, ... are the usual reasons.
func memoryOnly(c *Config, info ssl.Info) string {
	if !info.Memory {
		return c.Method + " has no memory"
	}
	return ""
}

func duelOnly(c *Config, info ssl.Info) string {
	if r := memoryOnly(c, info); r != "" {
		return r
	}
	if c.Policy != "duel" {
		return "--policy " + c.Policy + " is not duel"
	}
	return ""
}

func momentumOnly(c *Config, info ssl.Info) string {
	if !info.Momentum {
		return c.Method + " has no momentum encoder"
	}
	return ""
}

func contrastiveOnly(c *Config, info ssl.Info) string {
	if !info.Contrastive {
		return c.Method + " has no contrastive loss"
	}
	return ""
}

func predictorOnly(c *Config, info ssl.Info) string {
	if !info.Predictor {
		return c.Method + " has no predictor"
	}
	return ""
}

func larsOnly(c *Config, _ ssl.Info) string {
	if c.Optimizer != "lars" {
		return "--optimizer " + c.Optimizer + " is not lars"
	}
	return ""
}

// methodsOnly returns a reason function for a setting that only the named
// methods read.
func methodsOnly(what string, methods ...string) func(c *Config, info ssl.Info) string {
	return func(c *Config, _ ssl.Info) string {
		for _, m := range methods {
			if c.Method == m {
				return ""
			}
		}
		return what + " only"
	}
}

// applicabilities lists the settings that some runs do not read.
var applicabilities = []applicability{
	{"memory-size", memoryOnly},
	{"policy", memoryOnly},
	{"max-age", memoryOnly},
	{"mem-refresh", memoryOnly},
	{"mem-negatives", memoryOnly},
	{"memory-from", memoryOnly},
	{"admission", duelOnly},
	{"safe-update", duelOnly},
	{"mem-view", methodsOnly("dsimclr", "dsimclr")},
	{"ema", momentumOnly},
	{"tau", contrastiveOnly},
	{"eps", contrastiveOnly},
	{"pred-hidden", predictorOnly},
	{"head-bn", predictorOnly},
	{"barlow-lambda", methodsOnly("barlow", "barlow")},
	{"shuffle-bn", methodsOnly("moco and dmoco", "moco", "dmoco")},
	{"lars-eta", larsOnly},
	{"lars-clip", larsOnly},
}

// Inapplicable is a setting of a configuration that its method (or memory
// policy) never reads, set to another value than the method's preset's.
type Inapplicable struct {
	Flag  string // the flag's name, without dashes
	Value string // its value in the configuration, as the flag's text
	Why   string // why the run does not read it
	// Preset is the preset's value, as the flag's text.
	Preset string
	kind   SettingKind
}

// Error returns the refusal: "--policy: got "fifo", expected nothing
// (simclr has no memory)".
func (in Inapplicable) Error() string {
	shown := any(in.Value)
	if in.kind == StringSetting {
		shown = fmt.Sprintf("%q", in.Value)
	}
	return bad(in.Flag, shown, "nothing ("+in.Why+")").Error()
}

// Inapplicables returns c's inapplicable settings (see Inapplicable), in
// the order of `duelctl train --help`'s reasons.
func Inapplicables(c *Config) []Inapplicable {
	info, ok := ssl.Lookup(c.Method)
	if !ok {
		return nil // Validate names the method
	}
	preset, err := Preset(c.Preset, c.Method)
	if err != nil {
		return nil // Validate names the preset
	}
	var out []Inapplicable
	for _, a := range applicabilities {
		why := a.needs(c, info)
		if why == "" {
			continue
		}
		s, ok := LookupSetting(a.flag)
		if !ok {
			panic("train: applicability of unknown setting --" + a.flag) // caught by TestCheckApplies
		}
		if got, want := s.Value(c), s.Value(&preset); got != want {
			out = append(out, Inapplicable{Flag: a.flag, Value: got, Why: why, Preset: want, kind: s.Kind})
		}
	}
	return out
}

// CheckApplies refuses a setting that c's method (or memory policy) does
// not read and whose value differs from the method's preset, naming the
// flag and why: e.g. --policy for simclr, which has no memory, or
// --admission with --policy fifo. Settings left at the preset's values
// pass whatever the method.
func CheckApplies(c *Config) error {
	if in := Inapplicables(c); len(in) > 0 {
		return in[0]
	}
	return nil
}

// ResetInapplicable sets the inapplicable setting in of c back to the
// preset's value (settings given to a whole grid of runs, which only
// some of its methods read).
func ResetInapplicable(c *Config, in Inapplicable) error {
	return SetFlag(c, in.Flag, in.Preset)
}
