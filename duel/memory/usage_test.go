package memory

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"testing"
)

// unitRows returns n rows of z values, row i pointing along axis i%z.
func axisRows(n, z int) []float32 {
	r := make([]float32, n*z)
	for i := 0; i < n; i++ {
		r[i*z+i%z] = 1
	}
	return r
}

func TestUsageAgesAndUses(t *testing.T) {
	m, err := New(4, 3, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(0); !math.IsNaN(u.AgeMean) || !math.IsNaN(u.BatchCos) {
		t.Errorf("empty memory usage %+v, expected NaNs", u)
	}
	// step 0: two rows; step 5: two rows (full); step 9: two rows evict the
	// two oldest (FIFO).
	for _, step := range []int{0, 5, 9} {
		if step > 0 {
			if err := m.CountNegatives(nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.Add(axisRows(2, 3), nil, nil, step); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.CountNegatives([]int{0}); err != nil {
		t.Fatal(err)
	}
	if err := m.CountNegatives([]int{4}); err == nil {
		t.Error("CountNegatives accepted position 4 of a 4-row memory")
	}
	u := m.Usage(10)
	// rows entered at steps 5, 5, 9, 9: ages 5, 5, 1, 1.
	if u.AgeMean != 3 || u.AgeMedian != 3 || u.AgeMax != 5 {
		t.Errorf("ages mean %v median %v max %v, expected 3 3 5", u.AgeMean, u.AgeMedian, u.AgeMax)
	}
	// uses: the step-5 rows were negatives at step 9 and row 0 once more.
	if got := slices.Clone(m.Uses()); !slices.Equal(got, []int64{2, 1, 0, 0}) {
		t.Errorf("uses %v, expected [2 1 0 0]", got)
	}
	if u.UsesMean != 0.75 || u.UsesMax != 2 {
		t.Errorf("uses mean %v max %v, expected 0.75 2", u.UsesMean, u.UsesMax)
	}
	// The last batch (axes 0 and 1) against the older rows (axes 0 and 1):
	// dots 1, 0, 0, 1 -> mean 0.5; within the batch: 0.
	if u.BatchCos != 0.5 || u.WithinCos != 0 {
		t.Errorf("batch cos %v within %v, expected 0.5 and 0", u.BatchCos, u.WithinCos)
	}
}

func TestCheckpointKeepsUsesAndReadsVersion1(t *testing.T) {
	m, err := New(3, 2, NewFIFO(), WithMaxAge(7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(axisRows(3, 2), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	m.CountNegatives(nil)
	m.CountNegatives([]int{2})
	v2, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Memory
	if err := got.UnmarshalBinary(v2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Uses(), []int64{1, 1, 2}) || got.MaxAge() != 7 {
		t.Errorf("uses after a round trip %v, max age %d, expected [1 1 2] and 7", got.Uses(), got.MaxAge())
	}
	// Version 1: no maximum age after the safe flag, no uses block before
	// the checksum.
	n := m.Len()
	head := len(checkpointMagic) + 4 + 12 + 8 + 1
	v1 := append(slices.Clone(v2[:head]), v2[head+4:len(v2)-4-16*n]...)
	binary.LittleEndian.PutUint32(v1[len(checkpointMagic):], 1)
	v1 = binary.LittleEndian.AppendUint32(v1, crc32.ChecksumIEEE(v1))
	var old Memory
	if err := old.UnmarshalBinary(v1); err != nil {
		t.Fatalf("version 1 checkpoint: %v", err)
	}
	if !slices.Equal(old.Uses(), []int64{0, 0, 0}) || !slices.Equal(old.Rows(), m.Rows()) {
		t.Errorf("version 1: uses %v rows %v", old.Uses(), old.Rows())
	}
	// A negative use count is refused.
	bad := slices.Clone(v2[:len(v2)-4])
	binary.LittleEndian.PutUint64(bad[len(bad)-8-8*m.Len():], math.MaxUint64)
	bad = binary.LittleEndian.AppendUint32(bad, crc32.ChecksumIEEE(bad))
	if err := old.UnmarshalBinary(bad); err == nil {
		t.Error("a negative use count was accepted")
	}
}

func TestMaxAgeExpiresOldRowsFirst(t *testing.T) {
	if _, err := New(4, 2, NewFIFO(), WithMaxAge(-1)); err == nil {
		t.Error("a negative maximum age was accepted")
	}
	// DUEL keeps rows opposed to the rest; with a maximum age of 3 steps no
	// row survives longer, and the order of the others is kept.
	m, err := New(4, 3, NewDUEL(Protected), WithMaxAge(3))
	if err != nil {
		t.Fatal(err)
	}
	rows := func(vs ...float32) []float32 { return vs }
	steps := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	for _, s := range steps {
		x := float32(s + 1)
		st, err := m.Add(rows(1, x, 0, 1, 0, x), []int64{int64(2 * s), int64(2*s + 1)}, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range m.Steps() {
			if int64(s)-e > 3 {
				t.Fatalf("step %d: row %d entered at step %d, older than 3 steps (stats %+v)", s, i, e, st)
			}
			if i > 0 && m.Steps()[i-1] > e && st.Expired > 0 && st.Entered == 0 {
				t.Fatalf("step %d: order not kept: %v", s, m.Steps())
			}
		}
		if m.Len() > 4 {
			t.Fatalf("step %d: %d rows in a memory of 4", s, m.Len())
		}
	}
}

// driftBatch returns b rows of a stream whose features rotate in the plane
// of the first two axes by 0.05 rad a step, spread a little along the others:
// an encoder that keeps changing.
func driftBatch(step, b, z int) []float32 {
	out := make([]float32, b*z)
	for i := 0; i < b; i++ {
		a := 0.05 * float64(step)
		out[i*z] = float32(math.Cos(a))
		out[i*z+1] = float32(math.Sin(a))
		out[i*z+2+i%(z-2)] = 0.3
	}
	return out
}

// TestDUELKeepsStaleRowsOnADriftingStream shows why D-MoCo needs a bound on
// the age of its rows: on a stream whose features drift (an encoder being
// trained), the DUEL policy keeps the rows most opposed to the others, i.e.
// the oldest ones, for ever, while a FIFO queue and DUEL with a maximum age
// keep rows of the last steps only.
func TestDUELKeepsStaleRowsOnADriftingStream(t *testing.T) {
	const k, b, z, steps = 64, 8, 6, 200
	for _, tc := range []struct {
		name   string
		policy Policy
		opts   []Option
		maxOld float64 // bound on the oldest row's age at the end
		minOld float64 // and a lower bound
	}{
		{"fifo", NewFIFO(), nil, k / b, 0},
		{"duel", NewDUEL(Protected), nil, steps, 100},
		{"duel-max-age-16", NewDUEL(Protected), []Option{WithMaxAge(16)}, 16, 0},
	} {
		m, err := New(k, z, tc.policy, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < steps; s++ {
			if _, err := m.Add(driftBatch(s, b, z), nil, nil, s); err != nil {
				t.Fatal(err)
			}
		}
		u := m.Usage(steps - 1)
		if u.AgeMax > tc.maxOld || u.AgeMax < tc.minOld {
			t.Errorf("%s: oldest row %v steps old (mean %.1f), expected in [%v, %v]", tc.name, u.AgeMax, u.AgeMean, tc.minOld, tc.maxOld)
		}
		t.Logf("%s: ages mean %.1f max %.0f, batch-vs-memory cosine %.3f (within the batch %.3f)", tc.name, u.AgeMean, u.AgeMax, u.BatchCos, u.WithinCos)
	}
}

func TestRefreshAndStalest(t *testing.T) {
	m, err := New(4, 3, NewFIFO())
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 2; step++ {
		if _, err := m.Add(axisRows(2, 3), nil, nil, step); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Stalest(2); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("stalest 2 = %v, expected [0 1]", got)
	}
	if got := m.Stalest(9); len(got) != 4 {
		t.Errorf("stalest 9 of 4 = %v", got)
	}
	if got := m.Stalest(0); got != nil {
		t.Errorf("stalest 0 = %v", got)
	}
	if err := m.Refresh([]int{1}, []float32{0, 0, 2}, 5); err != nil {
		t.Fatal(err)
	}
	if got := m.Rows()[3:6]; !slices.Equal(got, []float32{0, 0, 1}) {
		t.Errorf("refreshed row %v, expected [0 0 1] (normalised)", got)
	}
	// Row 0 (step 0) is now the stalest, then rows 2 and 3 (step 1).
	if got := m.Stalest(3); !slices.Equal(got, []int{0, 2, 3}) {
		t.Errorf("stalest 3 after a refresh = %v, expected [0 2 3]", got)
	}
	u := m.Usage(5)
	if u.StaleMax != 5 || u.AgeMax != 5 || u.StaleMean != (5+0+4+4)/4.0 {
		t.Errorf("usage %+v", u)
	}
	for _, tc := range []struct {
		name string
		pos  []int
		rows []float32
	}{
		{"out of range", []int{4}, []float32{1, 0, 0}},
		{"repeated", []int{0, 0}, []float32{1, 0, 0, 1, 0, 0}},
		{"short rows", []int{0}, []float32{1, 0}},
		{"zero row", []int{0}, []float32{0, 0, 0}},
	} {
		before := slices.Clone(m.Rows())
		if err := m.Refresh(tc.pos, tc.rows, 6); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
		if !slices.Equal(before, m.Rows()) {
			t.Errorf("%s: rows changed by a refused refresh", tc.name)
		}
	}
}

func TestScoreByClass(t *testing.T) {
	// Class 0: three identical rows (the most duplicated); class 1: one row
	// orthogonal to them; class 2: none.
	m, _ := New(4, 2, NewFIFO())
	if _, err := m.Add([]float32{1, 0, 1, 0, 1, 0, 0, 1}, nil, []int32{0, 0, 0, 1}, 0); err != nil {
		t.Fatal(err)
	}
	got, err := m.ScoreByClass(3)
	if err != nil {
		t.Fatal(err)
	}
	// mean q: class 0 rows (1+1+1+0.5)/4 = 0.875, class 1 (0.5*3+1)/4 = 0.625;
	// mean 0.8125, sd sqrt(3*0.0625^2+0.1875^2)/2 = 0.108253: +0.577, -1.732.
	if math.Abs(got[0]-0.57735) > 1e-4 || math.Abs(got[1]+1.73205) > 1e-4 || !math.IsNaN(got[2]) {
		t.Errorf("score by class %v, expected [0.577 -1.732 NaN]", got)
	}
	if _, err := m.ScoreByClass(1); err == nil {
		t.Error("a label outside the classes was accepted")
	}
}
