package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
)

// fillMemoryWhole is fillMemory as it was before it added the rows in
// chunks: every row drawn, then one Add of them all.
func fillMemoryWhole(mem *memory.Memory, r *rand.Rand) error {
	n, z := mem.Size()-mem.Len(), mem.Dim()
	if n <= 0 {
		return nil
	}
	rows := make([]float32, n*z)
	for i := range rows {
		rows[i] = float32(r.NormFloat64())
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = -1 - int64(i)
	}
	_, err := mem.Add(rows, ids, nil, 0)
	return err
}

// TestFillMemoryChunks: filling the memory a chunk of rows at a time
// leaves it as one Add of every row did (its checkpoint bytes: rows, ids,
// labels, steps, uses, rows seen, the policy's state), and the updates
// after it make the same evictions, whatever the chunk, for each policy;
// at K x Z of 5 million values (FIFO) the single Add normalised the rows
// in place, the chunks do not.
func TestFillMemoryChunks(t *testing.T) {
	for _, tc := range []struct {
		k, z   int
		chunks []int
	}{
		{100, 8, []int{1, 7, 64, 100, 1000}},
		{20000, 256, []int{0}}, // 0: fillMemory's own chunk, 4096 rows
	} {
		for _, policy := range memory.PolicyNames() {
			if tc.k > 1000 && policy != "fifo" {
				continue
			}
			build := func() *memory.Memory {
				p, err := memory.NewPolicy(policy, 3)
				if err != nil {
					t.Fatal(err)
				}
				m, err := memory.New(tc.k, tc.z, p)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			want := build()
			if err := fillMemoryWhole(want, rand.New(rand.NewPCG(7, 7))); err != nil {
				t.Fatal(err)
			}
			wantBytes, err := want.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			for _, chunk := range tc.chunks {
				name := fmt.Sprintf("%s K=%d Z=%d chunk %d", policy, tc.k, tc.z, chunk)
				got := build()
				r := rand.New(rand.NewPCG(7, 7))
				if chunk == 0 {
					err = fillMemory(got, r)
				} else {
					err = fillMemoryBy(got, r, chunk)
				}
				if err != nil {
					t.Fatal(err)
				}
				gotBytes, err := got.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if got.Len() != tc.k || !bytes.Equal(gotBytes, wantBytes) {
					t.Fatalf("%s: %d rows, checkpoint equal to the single Add's: %v", name, got.Len(), bytes.Equal(gotBytes, wantBytes))
				}
				// The next updates go through the policy alike.
				a, b := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
				w := build()
				if err := w.UnmarshalBinary(wantBytes); err != nil {
					t.Fatal(err)
				}
				for s := 1; s <= 3; s++ {
					if _, err := got.Add(gaussRows(a, 16, tc.z), nil, nil, s); err != nil {
						t.Fatal(err)
					}
					if _, err := want.Add(gaussRows(b, 16, tc.z), nil, nil, s); err != nil {
						t.Fatal(err)
					}
				}
				if !slices.Equal(got.IDs(), want.IDs()) {
					t.Fatalf("%s: the updates after the fill evicted other rows", name)
				}
				want = w // the filled memory again, for the next chunk
			}
		}
	}
}

// gaussRows draws n rows of z normal values.
func gaussRows(r *rand.Rand, n, z int) []float32 {
	v := make([]float32, n*z)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}
