package cudaduel

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// checkRowsExact is checkRows without rowFits: every row by checkRow (the
// reference the fast check must agree with).
func checkRowsExact(name string, rows []float32, z int) error {
	for r := 0; r*z < len(rows); r++ {
		if err := checkRow(name, r, rows[r*z:(r+1)*z]); err != nil {
			return err
		}
	}
	return nil
}

// sameCheck fails unless checkRows and checkRowsExact return the same
// error (or none) for rows.
func sameCheck(t *testing.T, what string, rows []float32, z int) {
	t.Helper()
	got, want := checkRows("batch", rows, z), checkRowsExact("batch", rows, z)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: checkRows = %v, the exact loop %v", what, got, want)
	}
}

func TestCheckRows(t *testing.T) {
	above1 := math.Nextafter32(1, 2)
	nan := float32(math.NaN())
	negNaN := math.Float32frombits(math.Float32bits(nan) | 1<<31)
	for _, tc := range []struct {
		name string
		rows []float32
		z    int
		bad  bool
	}{
		{"unit", []float32{0.6, 0.8, 0, 0, 0}, 5, false},
		{"ones", []float32{1, -1, 0, 0, 0, 0, 0, 0}, 8, false}, // squared norm exactly 2: the exact loop's verdict
		{"above 2", []float32{1, -1, 1e-3, 0, 0, 0, 0, 0}, 8, true},
		{"just above 1", []float32{0, 0, 0, 0, above1}, 5, true},
		{"just below -1", []float32{0, 0, 0, -above1, 0}, 5, true},
		{"nan in the tail", []float32{0, 0, 0, 0, 0, 0, 0, 0, nan}, 9, true},
		{"negative nan", []float32{negNaN, 0, 0, 0}, 4, true},
		{"infinity", []float32{0, float32(math.Inf(-1)), 0, 0}, 4, true},
		{"second row", []float32{0.6, 0.8, 0, 0, 0, 3, 0, 0}, 4, true},
		{"z 1", []float32{1, -1, 0.5}, 1, false},
		{"empty", nil, 3, false},
	} {
		if err := checkRows("batch", tc.rows, tc.z); (err != nil) != tc.bad {
			t.Errorf("%s: checkRows = %v, want an error: %v", tc.name, err, tc.bad)
		}
		sameCheck(t, tc.name, tc.rows, tc.z)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for z := range 13 {
		rows := unitRows(r, 7, z+1, nil)
		sameCheck(t, fmt.Sprintf("unit rows z %d", z+1), rows, z+1)
		rows[r.IntN(len(rows))] *= 1.5
		sameCheck(t, fmt.Sprintf("one value scaled, z %d", z+1), rows, z+1)
	}
}

// FuzzCheckRows: checkRows agrees with the exact loop on any values.
func FuzzCheckRows(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0}, uint8(2))
	f.Add([]byte{1, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f, 0, 0, 0, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, z uint8) {
		rows := make([]float32, len(data)/4)
		for i := range rows {
			rows[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		zz := int(z%16) + 1
		rows = rows[:len(rows)/zz*zz]
		sameCheck(t, "fuzz", rows, zz)
	})
}

// BenchmarkCheckRows checks a batch of 256 rows of 128 values (every
// update checks one), against the exact loop.
func BenchmarkCheckRows(b *testing.B) {
	rows := unitRows(rand.New(rand.NewPCG(1, 2)), 256, 128, nil)
	for _, c := range []struct {
		name  string
		check func(string, []float32, int) error
	}{{"fast", checkRows}, {"exact", checkRowsExact}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.check("batch", rows, 128); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBadBatchKeepsMemory: a batch Memory.Update refuses (a NaN, a row
// too long) leaves the memory as it was, whether the check ran before the
// buffers grew or while the device computed the batch's dots: the next
// updates' results equal those of a memory that never saw it. On the
// host transcriptions and on the CPU emulator.
func TestBadBatchKeepsMemory(t *testing.T) {
	gpus := []struct {
		name string
		g    cuda.GPU
	}{{"host", newHost()}, {"emulator", cudatest.NewEmulator(t)}}
	const k, z = 24, 8
	for _, gpu := range gpus {
		for _, tc := range []struct {
			name string
			b    int // rows of the bad batch: within the capacity (3), or beyond it
			bad  func(rows []float32)
			want string
		}{
			{"nan within capacity", 3, func(rows []float32) { rows[9] = float32(math.NaN()) }, "batch row 1 column 1 is NaN"},
			{"long row within capacity", 2, func(rows []float32) { rows[8], rows[9] = 1, 1 }, "batch row 1 has squared L2 norm"},
			{"nan beyond capacity", 7, func(rows []float32) { rows[50] = float32(math.NaN()) }, "batch row 6 column 2 is NaN"},
		} {
			t.Run(gpu.name+"/"+tc.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(7, uint64(tc.b)))
				mem := unitRows(r, k, z, nil)
				batches := [][]float32{unitRows(r, 3, z, mem), unitRows(r, 3, z, mem), unitRows(r, 2, z, mem)}
				bad := unitRows(r, tc.b, z, nil)
				tc.bad(bad)
				run := func(withBad bool) []Result {
					m, err := NewMemory(gpu.g, k, z, MemoryOptions{Batch: 3})
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					if err := m.Load(mem, nil); err != nil {
						t.Fatal(err)
					}
					var out []Result
					for i, batch := range batches {
						if withBad && i == 1 {
							if _, err := m.Update(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
								t.Fatalf("Update(bad batch) = %v, want an error containing %q", err, tc.want)
							}
						}
						res, err := m.Update(batch)
						if err != nil {
							t.Fatal(err)
						}
						if res.Scores, err = m.Scores(); err != nil {
							t.Fatal(err)
						}
						out = append(out, res)
					}
					return out
				}
				if want, got := run(false), run(true); !reflect.DeepEqual(got, want) {
					t.Errorf("after the bad batch: %v, without it %v", got, want)
				}
			})
		}
	}
}
