package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// usageRunCLI runs duelctl in-process with args (without the program name).
func usageRunCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(append([]string{"duelctl"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// checkUsageFailure checks the contract for bad input: a non-zero exit,
// nothing on stdout (no help dump) and one line on stderr that starts with
// "duelctl: " and contains each of want.
func checkUsageFailure(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, out, errOut := usageRunCLI(args...)
	if code == 0 {
		t.Errorf("duelctl %s: exit 0, want non-zero (stdout %q)", strings.Join(args, " "), out)
	}
	if out != "" {
		t.Errorf("duelctl %s: stdout %q, want nothing", strings.Join(args, " "), out)
	}
	if !strings.HasPrefix(errOut, "duelctl: ") || !strings.HasSuffix(errOut, "\n") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("duelctl %s: stderr %q, want one line starting with \"duelctl: \"", strings.Join(args, " "), errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("duelctl %s: stderr %q, want it to contain %q", strings.Join(args, " "), errOut, w)
		}
	}
	if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "panic") {
		t.Errorf("duelctl %s: stderr %q looks like a panic", strings.Join(args, " "), errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	embed := []string{"embed", "--run", "R", "--input", "x.npy", "--out", "y.npy"}
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the stderr line; the first is checked as its start
	}{
		// Values of the wrong type, by flag type.
		{"int", append(embed, "--batch", "abc"), []string{`duelctl: --batch: got "abc", expected an integer (see duelctl embed --help)`}},
		{"int out of range", []string{"eval", "--limit", "99999999999999999999999"}, []string{`duelctl: --limit: got "99999999999999999999999", expected an integer`, "out of range", "(see duelctl eval --help)"}},
		{"uint64 eval", []string{"eval", "--run", "R", "--seed", "-1"}, []string{`duelctl: --seed: got "-1", expected a non-negative integer (see duelctl eval --help)`}},
		{"uint64 analyze", []string{"analyze", "--run", "R", "--seed", "-1"}, []string{`duelctl: --seed: got "-1", expected a non-negative integer (see duelctl analyze --help)`}},
		{"uint64 memory replay", []string{"memory", "replay", "--features", "f.npy", "--size", "4", "--batch", "2", "--seed", "-1"}, []string{`duelctl: --seed: got "-1", expected a non-negative integer (see duelctl memory replay --help)`}},
		{"uint64 bench duel", []string{"bench", "duel", "--seed", "-1"}, []string{`duelctl: --seed: got "-1", expected a non-negative integer (see duelctl bench duel --help)`}},
		{"uint64 memory stream", []string{"memory", "stream", "--stream-seed", "-1"}, []string{`duelctl: --stream-seed: got "-1", expected a non-negative integer (see duelctl memory stream --help)`}},
		{"float", []string{"bench", "gemm", "--seconds", "abc"}, []string{`duelctl: --seconds: got "abc", expected a number (see duelctl bench gemm --help)`}},
		{"bool", []string{"eval", "--json=maybe"}, []string{`duelctl: --json: got "maybe", expected true or false (see duelctl eval --help)`}},
		{"one-letter flag", []string{"bench", "gemm", "--k", "x"}, []string{`duelctl: -k: got "x", expected an integer (see duelctl bench gemm --help)`}},
		{"missing value", []string{"eval", "-k"}, []string{`duelctl: -k: missing value, expected an integer (see duelctl eval --help)`}},
		{"bad syntax", []string{"eval", "---x"}, []string{`duelctl: ---x: bad flag syntax`}},

		// Unknown flags, at every level.
		{"unknown flag", append(embed, "--bogus"), []string{`duelctl: --bogus: unknown flag for duelctl embed (see duelctl embed --help)`}},
		{"unknown flag typo", append(embed, "--btach", "3"), []string{`duelctl: --btach: unknown flag for duelctl embed, did you mean --batch? (see duelctl embed --help)`}},
		{"unknown flag root", []string{"--bogus"}, []string{`duelctl: --bogus: unknown flag for duelctl (see duelctl --help)`}},
		{"unknown flag group", []string{"memory", "--bogus"}, []string{`duelctl: --bogus: unknown flag for duelctl memory (see duelctl memory --help)`}},
		{"unknown flag before dataset", []string{"data", "fetch", "--bogus", "cifar10"}, []string{`duelctl: --bogus: unknown flag for duelctl data fetch`}},

		// Required flags.
		{"required with choices", []string{"reproduce", "--out", "rs2"}, []string{"duelctl: --preset: required, expected one of ", "smoke", "(see duelctl reproduce --help)"}},
		{"required", []string{"reproduce", "--preset", "smoke"}, []string{"duelctl: --out: required, expected a value (see duelctl reproduce --help)"}},

		// Unknown commands.
		{"unknown command", []string{"foo"}, []string{"duelctl: foo: unknown command, expected one of train, embed, eval, analyze, memory, reproduce, data, bench (see duelctl --help)"}},
		{"unknown memory command", []string{"memory", "foo"}, []string{"duelctl: foo: unknown command of duelctl memory, expected one of replay, stream (see duelctl memory --help)"}},
		{"unknown bench command", []string{"bench", "foo"}, []string{"duelctl: foo: unknown command of duelctl bench, expected one of ", "gemm", "step"}},
		{"unknown data command", []string{"data", "foo"}, []string{"duelctl: foo: unknown command of duelctl data, expected one of fetch, info (see duelctl data --help)"}},
		{"unknown help topic", []string{"memory", "help", "foo"}, []string{"duelctl: foo: unknown command of duelctl memory, expected one of replay, stream"}},
		{"unknown help topic root", []string{"--help", "foo"}, []string{"duelctl: foo: unknown command, expected one of train, "}},

		// Stray positional arguments.
		{"extra argument", append(embed, "extra"), []string{"duelctl: extra: unexpected argument to duelctl embed (flags start with --)"}},
		{"argument before flags", []string{"embed", "--run", "R", "extra", "--out", "y.npy"}, []string{"duelctl: extra: unexpected argument to duelctl embed (flags start with --)"}},
		{"extra argument bench gemm", []string{"bench", "gemm", "extra"}, []string{"duelctl: extra: unexpected argument to duelctl bench gemm (flags start with --)"}},
		{"extra argument before required", []string{"reproduce", "extra"}, []string{"duelctl: extra: unexpected argument to duelctl reproduce (flags start with --)"}},
		{"value of a bool flag", []string{"train", "--json", "true"}, []string{"duelctl: true: unexpected argument to duelctl train (flags start with --)"}},

		// A one-letter flag is written -k (flagError).
		{"eval -k 0", []string{"eval", "--run", "R", "-k", "0"}, []string{"duelctl: -k: got 0, expected an integer > 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkUsageFailure(t, tc.args, tc.want...)
			_, _, errOut := usageRunCLI(tc.args...)
			if !strings.HasPrefix(errOut, tc.want[0]) {
				t.Errorf("stderr %q, want it to start with %q", errOut, tc.want[0])
			}
		})
	}
}

// TestUsageErrorsEveryCommand walks the command tree: every command and
// subcommand refuses an unknown flag, and every one that takes no
// positional argument (no ArgsUsage) refuses one, in one line naming it.
func TestUsageErrorsEveryCommand(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	var walk func(path []string, cmds []*cli.Command)
	n := 0
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string(nil), path...), c.Name)
			full := "duelctl " + strings.Join(p, " ")
			n++
			checkUsageFailure(t, append(append([]string(nil), p...), "--no-such-flag"), "duelctl: --no-such-flag: unknown flag for "+full+" (see "+full+" --help)")
			switch {
			case len(c.Subcommands) > 0:
				checkUsageFailure(t, append(append([]string(nil), p...), "no-such-command"), "duelctl: no-such-command: unknown command of "+full+", expected one of ")
				walk(p, c.Subcommands)
			case strings.TrimSpace(c.ArgsUsage) == "":
				checkUsageFailure(t, append(append([]string(nil), p...), "stray"), "duelctl: stray: unexpected argument to "+full+" (flags start with --)")
			}
		}
	}
	walk(nil, app.Commands)
	if n < 10 {
		t.Fatalf("walked %d commands, want the whole tree", n)
	}
}

// TestUsageUnknownCommandListsSubcommands checks that the list of an
// unknown command's message is the real subcommands of its level.
func TestUsageUnknownCommandListsSubcommands(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	names := func(cmds []*cli.Command) string {
		var s []string
		for _, c := range cmds {
			s = append(s, c.Name)
		}
		return strings.Join(s, ", ")
	}
	checkUsageFailure(t, []string{"foo"}, "expected one of "+names(app.Commands)+" (see duelctl --help)")
	for _, c := range app.Commands {
		if len(c.Subcommands) > 0 {
			checkUsageFailure(t, []string{c.Name, "foo"}, "expected one of "+names(c.Subcommands)+" (see duelctl "+c.Name+" --help)")
		}
	}
}

// TestUsageHelpUnaffected checks that help still goes to stdout with exit 0.
func TestUsageHelpUnaffected(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--help"},
		{"-h"},
		{"train", "--help"},
		{"embed", "-h"},
		{"embed", "help"},
		{"memory"},
		{"memory", "--help"},
		{"memory", "help", "replay"},
		{"memory", "replay", "--help"},
		{"bench"},
		{"data", "fetch", "--help"},
		{"data", "fetch", "--help", "cifar10"},
		{"reproduce", "--help"},
	} {
		code, out, errOut := usageRunCLI(args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "USAGE:") {
			t.Errorf("duelctl %s: exit %d, stderr %q, stdout %d bytes, want exit 0 and the help on stdout", strings.Join(args, " "), code, errOut, len(out))
		}
	}
}

// TestUsageRequiredStaysRequired builds the app twice: the required flags
// the first build took over from urfave/cli are still checked by the second.
func TestUsageRequiredStaysRequired(t *testing.T) {
	for i := 0; i < 2; i++ {
		checkUsageFailure(t, []string{"reproduce", "--preset", "smoke"}, "duelctl: --out: required")
	}
}

func TestFlagName(t *testing.T) {
	for in, want := range map[string]string{"k": "-k", "batch": "--batch", "--seed": "--seed", "-m": "-m"} {
		if got := flagName(in); got != want {
			t.Errorf("flagName(%q) = %q, want %q", in, got, want)
		}
	}
}
