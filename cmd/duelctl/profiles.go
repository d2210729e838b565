package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
)

// envCPUProfile names the environment variable that writes a Go CPU
// profile of the whole command to the file it names (read it with
// `go tool pprof duelctl FILE`), as DUEL_CUDA_PROFILE profiles the GPU.
const envCPUProfile = "DUEL_CPU_PROFILE"

// envTrace names the environment variable that writes a Go execution
// trace of the whole command to the file it names (read it with `go tool
// trace FILE`): when each goroutine ran, waited or was blocked, so where
// the cores idle. With DUEL_CPU_PROFILE set too, the trace also holds the
// profile's samples, each with the time it was taken.
const envTrace = "DUEL_TRACE"

// envHeapProfile names the environment variable that writes a Go heap
// profile to the file it names, taken when the command's live heap was
// largest (heapPeak): `go tool pprof -sample_index=inuse_space duelctl
// FILE` for what was held then (the data, the model, the activations,
// the memory), `-sample_index=alloc_space` for everything the command had
// allocated by then.
const envHeapProfile = "DUEL_HEAP_PROFILE"

// startProfiles starts the CPU profile, the execution trace and the heap
// profile the environment asks for and returns the function that stops
// them and moves their files into place; with no variable set it does
// nothing.
func startProfiles() (stop func() error, err error) {
	stopCPU, err := startToFile(envCPUProfile, pprof.StartCPUProfile, func() error {
		pprof.StopCPUProfile()
		return nil
	})
	if err != nil {
		return nil, err
	}
	stopTrace, err := startToFile(envTrace, trace.Start, func() error {
		trace.Stop()
		return nil
	})
	if err != nil {
		stopCPU()
		return nil, err
	}
	var heap io.Writer
	var peak *heapPeak
	stopHeap, err := startToFile(envHeapProfile, func(w io.Writer) error {
		heap, peak = w, watchHeapPeak(0)
		return nil
	}, func() error {
		return peak.stop(heap)
	})
	if err != nil {
		stopTrace()
		stopCPU()
		return nil, err
	}
	return func() error {
		return errors.Join(stopTrace(), stopCPU(), stopHeap())
	}, nil
}

// startToFile starts a recording (start, stopped by stop) into the file
// the environment variable env names and returns the function that stops
// it and renames its temporary file into place, so that the file appears
// whole or not at all (not at all when stop fails); with the variable
// unset it does nothing. Errors name the variable and the file.
func startToFile(env string, start func(io.Writer) error, stop func() error) (func() error, error) {
	path := os.Getenv(env)
	if path == "" {
		return func() error { return nil }, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", env, path, err)
	}
	if err := start(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("%s=%s: %w", env, path, err)
	}
	return func() error {
		err := stop()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("%s=%s: %w", env, path, err)
		}
		return nil
	}, nil
}
