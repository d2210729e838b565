package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// envCPUProfile names the environment variable that writes a Go CPU
// profile of the whole command to the file it names (read it with
// `go tool pprof duelctl FILE`), as DUEL_CUDA_PROFILE profiles the GPU.
const envCPUProfile = "DUEL_CPU_PROFILE"

// startCPUProfile starts the profile $DUEL_CPU_PROFILE asks for and returns
// the function that stops it and moves it into place (the file appears
// whole or not at all); with the variable unset it does nothing.
func startCPUProfile() (stop func() error, err error) {
	path := os.Getenv(envCPUProfile)
	if path == "" {
		return func() error { return nil }, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cpuprofile-*")
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", envCPUProfile, path, err)
	}
	if err := pprof.StartCPUProfile(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("%s=%s: %w", envCPUProfile, path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		err := tmp.Close()
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("%s=%s: %w", envCPUProfile, path, err)
		}
		return nil
	}, nil
}
