package memory

import "math"

// Score keys.
//
// During an update, the fast path holds the score of every row as an int64
// key: the exact integer S = score*2^23 (scores are sums of q = 1/2 +
// d*qUnit, so S is an integer, see similarity.go), shifted left by a few
// bits that hold the row's tie-breaking rank, reversed, so that the highest
// key is the row with the highest score and, among equal scores, the
// lowest rank (see keyShift). One signed maximum then finds the next
// victim, and the keys of the K slots (8 bytes each) stay in L1 from one
// pass to the next.
//
// A row that leaves gets the key keyGone. The passes add to every key, so
// a gone key moves too, but never above keyLive, and a held row's key is
// never below it (see keyShift).
const (
	keyGone = -1 << 62 // the key of a row that left
	keyLive = -1 << 61 // keys above it are rows held
)

// keyShift returns the number of rank bits of the keys of an update with
// k slots and b batch rows (ranks below max(k, b)), and whether the keys
// hold ranks at all (packed). Keys fit when every |S| < 2^25*k and every
// |ins-del| < 2^25 (grid dots are below 2^23 in magnitude): a held row's
// key stays within ±2^(25+bits(k)+shift) and a gone one within
// b*2^(25+shift) of keyGone, both inside their bounds when
// 25+bits(max(k, b))+shift <= 60, i.e. for k and b up to 2^17. Larger
// memories use unshifted keys (packed false): S alone, ties broken by a
// scan of the equal keys.
func keyShift(k, b int) (shift uint, packed bool) {
	n := max(k, b, 2)
	shift = uint(bitLen(n - 1))
	if 25+bitLen(n)+int(shift) > 60 {
		return 0, false
	}
	return shift, true
}

// bitLen returns the number of bits needed to write n >= 0.
func bitLen(n int) int {
	l := 0
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}

// scorePass is one DUEL step over a run of rows (see replace): for every
// c < len(key),
//
//	key[c] += (ins[c] - del[c]) << shift
//
// and it returns the highest new key (math.MinInt64 when key is empty) and
// the sum of ins over the rows held (new key above keyLive). The
// arithmetic is exact integer arithmetic: the assembly kernels (AVX-512 or
// AVX2, see scoreKernel) and the Go loop give the same results.
func scorePass(key []int64, ins, del []int32, shift uint) (best, dsum int64) {
	return scorePassWith(scoreKernel, key, ins, del, shift)
}

// scoreFunc is an assembly score pass: scorePassGo on slices of equal
// length, a multiple of 8.
type scoreFunc func(key []int64, ins, del []int32, shift uint) (best, dsum int64)

// scorePassWith is scorePass with kern on the first multiple of 8 rows and
// the Go loop on the rest (on all of them when kern is nil).
func scorePassWith(kern scoreFunc, key []int64, ins, del []int32, shift uint) (best, dsum int64) {
	n := len(key)
	ins, del = ins[:n], del[:n]
	best = math.MinInt64
	m := 0
	if kern != nil {
		if m = n &^ 7; m > 0 {
			best, dsum = kern(key[:m], ins[:m], del[:m], shift)
		}
	}
	b, d := scorePassGo(key[m:], ins[m:], del[m:], shift)
	return max(best, b), dsum + d
}

// scorePassGo is scorePass's loop in Go (the reference, the fallback and
// the tail of the assembly kernels).
func scorePassGo(key []int64, ins, del []int32, shift uint) (best, dsum int64) {
	ins, del = ins[:len(key)], del[:len(key)]
	best = math.MinInt64
	for c, d := range ins {
		v := key[c] + (int64(d)-int64(del[c]))<<shift
		key[c] = v
		if v > keyLive {
			dsum += int64(d)
		}
		best = max(best, v)
	}
	return best, dsum
}
