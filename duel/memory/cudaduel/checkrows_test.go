package cudaduel

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// checkRowsExact is checkRows without rowFits: every row by the exact
// loop (the reference the fast check must agree with).
func checkRowsExact(name string, rows []float32, z int) error {
	for r := 0; r*z < len(rows); r++ {
		var ss float64
		for c, v := range rows[r*z : (r+1)*z] {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 1 {
				return fmt.Errorf("cudaduel: %s row %d column %d is %v, expected a unit row's component in [-1, 1]", name, r, c, v)
			}
			ss += float64(v) * float64(v)
		}
		if ss > duelMaxNorm2 {
			return fmt.Errorf("cudaduel: %s row %d has squared L2 norm %.6g, expected an L2-normalised row (at most %g)", name, r, ss, duelMaxNorm2)
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
