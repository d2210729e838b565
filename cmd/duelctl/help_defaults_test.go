package main

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// helpLine returns the text --help shows for f after its names: its usage
// and, as urfave/cli appends it, its default.
func helpLine(f cli.DocGenerationFlag) string {
	line := f.GetUsage()
	if bf, ok := f.(*cli.BoolFlag); ok && bf.DisableDefaultText {
		return line
	}
	if d := f.GetDefaultText(); d != "" {
		line += " (default: " + d + ")"
	}
	return line
}

// zeroDefault matches a default that is only the flag type's zero value
// printed by urfave/cli: wrong beside "(required)".
var zeroDefault = regexp.MustCompile(`\(default: (0|""|false)?\)`)

// TestHelpStatesDefaults walks every command: the --help line of every
// flag states its default, or that the flag is required and has none
// (not both "(required)" and urfave/cli's "(default: 0)").
func TestHelpStatesDefaults(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := path + " " + c.Name
			for _, f := range c.Flags {
				df, ok := f.(cli.DocGenerationFlag)
				if !ok {
					continue
				}
				name, line := f.Names()[0], helpLine(df)
				required := strings.Contains(line, "(required)")
				switch {
				case required && zeroDefault.MatchString(line):
					t.Errorf("%s --%s: %q says required and prints a default", p, name, line)
				case !required && !strings.Contains(line, "default"): // "(default: X)", or prose: "the default is"
					t.Errorf("%s --%s: %q states no default", p, name, line)
				}
			}
			walk(p, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
}

// TestHelpDefaultsOfTheAudit checks the flags the audit found without
// their default, and --seed's list of the seeded policies.
func TestHelpDefaultsOfTheAudit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
		want []string
	}{
		{[]string{"train", "--help"}, "--config", []string{"(default: none: the settings of --preset and --method)"}},
		{[]string{"memory", "replay", "--help"}, "--labels", []string{"(default: none: no class metrics)"}},
		{[]string{"memory", "replay", "--help"}, "--size", []string{"(required) (default: none)"}},
		{[]string{"memory", "replay", "--help"}, "--batch", []string{"(required) (default: none)"}},
		{[]string{"memory", "replay", "--help"}, "--seed", []string{"seed of the random and reservoir policies", "(default: 0)"}},
		{[]string{"reproduce", "--help"}, "--methods", []string{"(default: the preset's variants"}},
		{[]string{"reproduce", "--help"}, "--rho", []string{"(default: the preset's rho_max values"}},
		{[]string{"reproduce", "--help"}, "--set", []string{"(default: none: the preset's settings alone)"}},
		{[]string{"bench", "tsne", "--help"}, "--device", []string{`(default: "cpu")`}},
		{[]string{"bench", "data", "--help"}, "--device", []string{`(default: "cpu")`}},
	} {
		code, out, _ := usageRunCLI(tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == tc.flag {
				line = l
			}
		}
		if line == "" {
			t.Errorf("%v: no line for %s in\n%s", tc.args, tc.flag, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%v: %s line %q lacks %q", tc.args, tc.flag, line, w)
			}
		}
		if strings.Contains(line, "(default: 0)") && strings.Contains(line, "(required)") {
			t.Errorf("%v: %s line %q", tc.args, tc.flag, line)
		}
	}
}

// TestSeedUsage checks --seed's help for any list of seeded policies.
func TestSeedUsage(t *testing.T) {
	for _, tc := range []struct {
		seeded []string
		want   string
	}{
		{nil, "seed of the policy (no registered policy uses it)"},
		{[]string{"random"}, "seed of the random policy (the others use none)"},
		{[]string{"random", "reservoir"}, "seed of the random and reservoir policies (the others use none)"},
		{[]string{"a", "b", "c"}, "seed of the a, b and c policies (the others use none)"},
	} {
		if got := seedUsage(tc.seeded); got != tc.want {
			t.Errorf("seedUsage(%v) = %q, want %q", tc.seeded, got, tc.want)
		}
	}
}
