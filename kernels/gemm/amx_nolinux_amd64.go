//go:build !linux && amd64 && !noasm

package gemm

import "errors"

// requestAMX reports that only Linux's permission request is known here.
func requestAMX() error { return errors.New("the AMX tile state is only requested on Linux") }
