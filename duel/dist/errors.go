package dist

import "fmt"

// errLength reports a receive buffer whose length does not fit the
// collective.
func errLength(op string, got, want int) error {
	return fmt.Errorf("dist: %s: receive buffer of %d bytes, expected %d", op, got, want)
}
