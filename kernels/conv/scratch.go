package conv

import "github.com/duel-ssl/duel/internal/scratch"

// Scratch hands out short-lived buffers with arbitrary contents (Get
// returns n floats, Put takes them back once the caller is done); a nil
// Scratch allocates.
type Scratch = scratch.Pool

func get(sc Scratch, n int) []float32 { return scratch.Get(sc, n) }

func put(sc Scratch, b []float32) { scratch.Put(sc, b) }
