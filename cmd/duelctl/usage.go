package main

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// checkUsage makes the mistakes urfave/cli catches by itself (a flag value
// of the wrong type, an unknown flag, a flag without its value, a missing
// required flag, an unknown command) and a stray positional argument end
// as one line in duelctl's style, "--batch: got "abc", expected an
// integer (see duelctl embed --help)", printed by run, with no help dump on
// stdout. It walks the whole command tree once, so a new command or
// subcommand gets it without doing anything.
//
// A command takes positional arguments only when its ArgsUsage says which
// (data fetch cifar10); the others refuse the first one they get. Required
// flags are checked here rather than by urfave/cli (which prints the help
// on stdout first): the walk clears their Required and checks them in the
// command's Before, which runs after --help is handled.
func checkUsage(app *cli.App) {
	app.OnUsageError = usageError(app.Name, func() []cli.Flag { return app.Flags })
	// "duelctl memory help foo", "duelctl --help foo", "duelctl data fetch
	// --help cifar10": urfave/cli looks for the help topic foo, finds none
	// and calls CommandNotFound. A command with subcommands leaves an error
	// naming them, which run returns (helpTopicError; urfave/cli's own
	// reads "No help topic for 'foo'"); a command without shows its help.
	var topicErr error
	if app.Metadata == nil {
		app.Metadata = map[string]any{}
	}
	app.Metadata[helpTopicKey] = &topicErr
	app.CommandNotFound = func(ctx *cli.Context, name string) {
		path, subs := app.Name, app.Commands
		if ctx.Command != nil {
			if ctx.Command.HelpName != "" {
				path = ctx.Command.HelpName
			}
			subs = ctx.Command.Subcommands
		}
		if err := notACommand(path, subs, name); !isUnexpectedArg(err) || ctx.Command == nil {
			topicErr = err
			return
		}
		templ := ctx.Command.CustomHelpTemplate
		if templ == "" {
			templ = cli.CommandHelpTemplate
		}
		cli.HelpPrinter(ctx.App.Writer, templ, ctx.Command)
	}
	if app.Action == nil {
		app.Action = unknownCommand(app.Name, app.Commands, cli.ShowAppHelp)
	}
	for _, c := range app.Commands {
		checkCommandUsage(app.Name, c)
	}
}

// checkCommandUsage does checkUsage's work for c, whose parent command is
// parent ("duelctl", "duelctl memory"), and its subcommands.
func checkCommandUsage(parent string, c *cli.Command) {
	path := parent + " " + c.Name
	c.OnUsageError = usageError(path, func() []cli.Flag { return c.Flags })
	required := takeRequired(c.Flags)
	takesArgs := len(c.Subcommands) > 0 || strings.TrimSpace(c.ArgsUsage) != ""
	before := c.Before
	c.Before = func(ctx *cli.Context) error {
		// "duelctl embed help": the help command urfave/cli adds to every
		// command at run time.
		if first := ctx.Args().First(); !takesArgs && ctx.NArg() > 0 && ctx.Command.Command(first) == nil {
			return notACommand(path, nil, first)
		}
		for _, f := range required {
			if !flagIsSet(ctx, f) {
				return fmt.Errorf("%s: required, expected %s (see %s --help)", flagName(f.Names()[0]), requiredExpected(f), path)
			}
		}
		if before != nil {
			return before(ctx)
		}
		return nil
	}
	if len(c.Subcommands) > 0 && c.Action == nil {
		c.Action = unknownCommand(path, c.Subcommands, cli.ShowSubcommandHelp)
	}
	for _, sub := range c.Subcommands {
		checkCommandUsage(path, sub)
	}
}

// requiredFlags remembers the flags whose Required takeRequired cleared:
// a flag shared by package variable stays required for the next app.
var requiredFlags sync.Map // cli.Flag -> struct{}

// takeRequired returns the required flags among flags and clears their
// Required, so that urfave/cli leaves them to checkCommandUsage.
func takeRequired(flags []cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, f := range flags {
		if _, seen := requiredFlags.Load(f); !seen {
			rf, ok := f.(cli.RequiredFlag)
			if !ok || !rf.IsRequired() {
				continue
			}
			v := reflect.ValueOf(f)
			if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
				continue
			}
			req := v.Elem().FieldByName("Required")
			if !req.IsValid() || req.Kind() != reflect.Bool || !req.CanSet() {
				continue // left to urfave/cli
			}
			req.SetBool(false)
			requiredFlags.Store(f, struct{}{})
		}
		out = append(out, f)
	}
	return out
}

// flagIsSet says whether one of f's names was given.
func flagIsSet(ctx *cli.Context, f cli.Flag) bool {
	for _, n := range f.Names() {
		if ctx.IsSet(n) {
			return true
		}
	}
	return false
}

// unknownCommand returns the Action of a command with subcommands (or of
// the app, path "duelctl"): the help without arguments, as urfave/cli's own,
// and an error naming the subcommands when the first argument is none of
// them (urfave/cli dispatches the known ones before the Action runs).
func unknownCommand(path string, subs []*cli.Command, help func(*cli.Context) error) cli.ActionFunc {
	return func(ctx *cli.Context) error {
		if !ctx.Args().Present() {
			return help(ctx)
		}
		return notACommand(path, subs, ctx.Args().First())
	}
}

// notACommand reports arg, found where the command path ("duelctl",
// "duelctl memory") takes one of its subcommands subs, or where it takes
// no positional argument when subs has none but urfave/cli's help.
func notACommand(path string, subs []*cli.Command, arg string) error {
	var names []string
	for _, s := range subs {
		if !s.Hidden && s.Name != "help" {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return unexpectedArgError{fmt.Errorf("%s: unexpected argument to %s (flags start with --)", arg, path)}
	}
	of := ""
	if strings.Contains(path, " ") {
		of = " of " + path
	}
	return fmt.Errorf("%s: unknown command%s, expected one of %s (see %s --help)", arg, of, strings.Join(names, ", "), path)
}

// unexpectedArgError is notACommand's error for a command without
// subcommands.
type unexpectedArgError struct{ error }

func isUnexpectedArg(err error) bool {
	_, ok := err.(unexpectedArgError)
	return ok
}

// helpTopicKey is the key in App.Metadata of the error checkUsage's
// CommandNotFound leaves.
const helpTopicKey = "duelctl.helpTopicError"

// helpTopicError returns the error app's CommandNotFound left, or nil.
func helpTopicError(app *cli.App) error {
	if p, ok := app.Metadata[helpTopicKey].(*error); ok {
		return *p
	}
	return nil
}

// The errors of package flag that urfave/cli passes on from parsing.
var (
	errInvalidValue = regexp.MustCompile(`^invalid value (".*") for flag -(\S+?): (.*)$`)
	errInvalidBool  = regexp.MustCompile(`^invalid boolean value (".*") for -(\S+?): (.*)$`)
	errNotDefined   = regexp.MustCompile(`^flag provided but not defined: -(.*)$`)
	errNeedsArg     = regexp.MustCompile(`^flag needs an argument: -(.*)$`)
	errBadSyntax    = regexp.MustCompile(`^bad flag syntax: (.*)$`)
)

// usageError returns the OnUsageError of the command path, whose flags
// are those flags returns (read when an error comes, so that the help flag
// urfave/cli adds is among them): it rewrites the flag parser's error in
// duelctl's style.
func usageError(path string, flags func() []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		see := fmt.Sprintf("(see %s --help)", path)
		msg := err.Error()
		if m := errInvalidValue.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s: got %s, expected %s %s", flagName(m[2]), m[1], flagExpected(findFlag(flags(), m[2]), m[3]), see)
		}
		if m := errInvalidBool.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s: got %s, expected true or false %s", flagName(m[2]), m[1], see)
		}
		if m := errNotDefined.FindStringSubmatch(msg); m != nil {
			hint := ""
			if s := closestFlag(flags(), m[1]); s != "" {
				hint = ", did you mean " + flagName(s) + "?"
			}
			return fmt.Errorf("%s: unknown flag for %s%s %s", flagName(m[1]), path, hint, see)
		}
		if m := errNeedsArg.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s: missing value, expected %s %s", flagName(m[1]), flagExpected(findFlag(flags(), m[1]), ""), see)
		}
		if m := errBadSyntax.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s: bad flag syntax, expected -name or --name %s", m[1], see)
		}
		return fmt.Errorf("%s: %v %s", path, err, see)
	}
}

// findFlag returns the flag among flags named name, or nil.
func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// flagExpected says what a value of f looks like; cause is the parser's
// reason the value was refused ("" when there is no value).
func flagExpected(f cli.Flag, cause string) string {
	var what string
	switch f := f.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		what = "an integer"
	case *cli.UintFlag, *cli.Uint64Flag:
		what = "a non-negative integer"
	case *cli.Float64Flag:
		what = "a number"
	case *cli.BoolFlag:
		what = "true or false"
	case *cli.DurationFlag:
		what = "a duration such as 90s, 5m or 1h30m"
	case *cli.IntSliceFlag, *cli.Int64SliceFlag:
		what = "comma-separated integers"
	case *cli.UintSliceFlag, *cli.Uint64SliceFlag:
		what = "comma-separated non-negative integers"
	case *cli.Float64SliceFlag:
		what = "comma-separated numbers"
	case *cli.TimestampFlag:
		what = "a time"
		if f.Layout != "" {
			what = "a time as " + f.Layout
		}
	default:
		if cause != "" && cause != "parse error" {
			return "a valid value (" + cause + ")"
		}
		return "a value"
	}
	if strings.Contains(cause, "out of range") {
		what += " (this one is out of range)"
	}
	return what
}

// requiredExpected says what the required flag f expects: the choices its
// usage lists after its last colon ("the grid: smoke, table1-cpu, ..."),
// else what a value of its type looks like.
func requiredExpected(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		u, _, _ := strings.Cut(d.GetUsage(), " (")
		if i := strings.LastIndex(u, ": "); i >= 0 {
			list := strings.TrimSpace(u[i+2:])
			if choiceList.MatchString(list) {
				list = strings.ReplaceAll(strings.ReplaceAll(list, ", or ", ", "), " or ", ", ")
				return "one of " + list
			}
		}
	}
	return flagExpected(f, "")
}

// choiceList matches "a, b, c" and "a, b or c".
var choiceList = regexp.MustCompile(`^[A-Za-z0-9_.-]+((, |, or | or )[A-Za-z0-9_.-]+)+$`)

// closestFlag returns the name among flags' names nearest to name when it
// is a likely typo of it (an edit or two away), else "".
func closestFlag(flags []cli.Flag, name string) string {
	best, bestD := "", 3
	for _, f := range flags {
		for _, n := range f.Names() {
			d := editDistance(n, name)
			if max(len(n), len(name)) <= 4 && d > 1 {
				continue
			}
			if d < bestD {
				best, bestD = n, d
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
