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
	m, err := New(3, 2, NewFIFO())
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
	if !slices.Equal(got.Uses(), []int64{1, 1, 2}) {
		t.Errorf("uses after a round trip %v, expected [1 1 2]", got.Uses())
	}
	// Version 1: no uses block before the checksum.
	n := m.Len()
	v1 := slices.Clone(v2[:len(v2)-4-8*n])
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
	binary.LittleEndian.PutUint64(bad[len(bad)-8:], math.MaxUint64)
	bad = binary.LittleEndian.AppendUint32(bad, crc32.ChecksumIEEE(bad))
	if err := old.UnmarshalBinary(bad); err == nil {
		t.Error("a negative use count was accepted")
	}
}
