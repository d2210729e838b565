package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// terminal returns w as a file when it is a terminal, else nil. Progress
// bars redraw themselves with carriage returns: they belong on terminals,
// not in files and pipes, where the log lines say enough.
func terminal(w io.Writer) *os.File {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return f
}

// progressWriter returns stderr when it is a terminal, for the progress
// bar with ETA of train and reproduce (train.Options.Progress), else nil:
// no bar.
func progressWriter(c *cli.Context) io.Writer {
	if f := terminal(c.App.ErrWriter); f != nil {
		return f
	}
	return nil
}

// progressBar returns a progress bar of n units on stderr when stderr is a
// terminal, else nil.
func progressBar(c *cli.Context, n int, desc string) *progressbar.ProgressBar {
	f := terminal(c.App.ErrWriter)
	if f == nil || n <= 0 {
		return nil
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

// finishBar completes and clears bar (nil is fine).
func finishBar(bar *progressbar.ProgressBar) {
	if bar != nil {
		bar.Finish()
	}
}
