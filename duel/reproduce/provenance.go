package reproduce

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/duel-ssl/duel/internal/cpu"
)

// Provenance says where a report's numbers come from.
type Provenance struct {
	Command string `json:"command,omitempty"` // the command line that reproduces the report
	Commit  string `json:"commit"`            // the binary's git commit, "+modified" with uncommitted changes
	CPU     string `json:"cpu"`               // processor model and logical CPUs
	Date    string `json:"date"`              // when the report was written
}

// detectProvenance describes this binary and machine.
func detectProvenance(command string) Provenance {
	return Provenance{Command: command, Commit: buildCommit(), CPU: cpuModel()}
}

// buildCommit returns the VCS revision stamped into the binary (go build
// in a git checkout), with "+modified" when the tree had uncommitted
// changes.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown (binary built without VCS stamping: build it in the checkout with go build -buildvcs=true ./cmd/duelctl; GOFLAGS=-buildvcs=false turns it off)"
	}
	if modified {
		rev += "+modified"
	}
	return rev
}

// cpuModel returns the processor's brand and microarchitecture
// (internal/cpu), or /proc/cpuinfo's model name where CPUID gives none,
// with the number of logical CPUs the process may use.
func cpuModel() string {
	info := cpu.Detect()
	name := info.Brand
	if name == "" {
		name = procModelName("/proc/cpuinfo")
	}
	if name == "" {
		name = runtime.GOARCH + " (model unknown)"
	}
	if info.Microarch != "" {
		name += " (" + info.Microarch + ")"
	}
	return fmt.Sprintf("%s, %d logical CPUs, GOMAXPROCS %d", strings.TrimSpace(name), runtime.NumCPU(), runtime.GOMAXPROCS(0))
}

// procModelName returns the first "model name" of a /proc/cpuinfo file,
// "" when there is none.
func procModelName(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
