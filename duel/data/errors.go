package data

import (
	"fmt"
	"os"
)

// FormatError reports a file whose content does not follow its format: the
// file, the byte offset where the problem was found (-1 when no offset
// helps), and what was found against what was expected.
type FormatError struct {
	File   string
	Offset int64
	Msg    string
}

// Error implements error.
func (e *FormatError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: at byte offset %d: %s", e.File, e.Offset, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func formatErr(file string, off int64, format string, args ...any) error {
	return &FormatError{File: file, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// readFile reads a whole file; the error names it.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %w", err)
	}
	return b, nil
}
