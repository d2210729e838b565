package main

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

// progressBar returns a progress bar of n units on stderr when stderr is a
// terminal, else nil.
func progressBar(c *cli.Context, n int, desc string) *progressbar.ProgressBar {
	f, ok := c.App.ErrWriter.(*os.File)
	if !ok || n <= 0 {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
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
