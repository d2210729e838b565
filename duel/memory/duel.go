package memory

import (
	"fmt"
)

// DUEL is the Duplicate Elimination policy (Definition 3, Eq. 10): when a row
// arrives at a full memory, the row with the least distinctiveness
// information -log(mean q) leaves, i.e. the most duplicated one. As in the
// paper's Appendix D, distinctiveness is replaced by the equivalent score
//
//	score(j) = sum over the rows k held of q(j,k),   q = (1 + cos)/2,
//
// row j itself included, and rows are replaced one at a time. For each
// incoming row, in order:
//
//	(a) J = argmax score over the rows held (ties: the lowest position,
//	    the rows held in their order first, then the batch rows);
//	(b) delete J: subtract q(J,.) from every score, J leaves;
//	(c) insert the row: add its q(i,.) to every score; its own score is
//	    the sum of its q with the rows now held, itself included.
//
// The survivors keep their order: rows held, then the batch rows that
// entered. Scores are exact (see the package documentation), so ties are
// real ties.
//
// Two readings of the paper differ on whether a row of the batch may be
// evicted by a later row of the same batch; Admission chooses (see
// Protected and Compete).
//
// Two implementations exist and make identical decisions, which the tests
// check on random streams: duelReference, a transcription of the paper's
// pseudocode that builds the (K+B) x (K+B) score matrix at every update
// (O(Z(K+B)^2)), and fastDUEL, used by default, which carries the memory's
// scores and K x K similarities between updates and computes only the
// B x (K+B) new similarities (O(Z B (K+B)) per update).
type DUEL struct {
	// Admission says whether new rows compete within their batch.
	Admission Admission
	// MaxBlockBytes bounds the memory spent on the carried K x K
	// similarities, 4*K*K bytes (plus the last updates' columns, at most
	// 64*K*B bytes and twice the block, see carried). Beyond it, the fast
	// path keeps only the scores and recomputes the similarities of each
	// evicted row (slower: one K x Z matrix-vector product per eviction).
	// Default 256 MiB (K <= 8192).
	MaxBlockBytes int64

	reference bool     // use duelReference (tests, benchmarks)
	fast      fastDUEL // the carried state of the fast path
}

// NewDUEL returns the DUEL policy with the given admission mode.
func NewDUEL(adm Admission) *DUEL {
	return &DUEL{Admission: adm, MaxBlockBytes: 256 << 20}
}

// NewDUELReference returns the DUEL policy computed by the line-by-line
// transcription of the paper's pseudocode (the full (K+B) x (K+B) score
// matrix at every update): the same decisions as NewDUEL, O(Z (K+B)^2) per
// update instead of O(Z B (K+B)). For checking and benchmarks.
func NewDUELReference(adm Admission) *DUEL {
	d := NewDUEL(adm)
	d.reference = true
	return d
}

// Name returns "duel".
func (*DUEL) Name() string { return "duel" }

// Evict runs the policy on one arrival.
func (d *DUEL) Evict(a *Arrival) ([]int, error) {
	if d.Admission != Protected && d.Admission != Compete {
		return nil, fmt.Errorf("duel: unknown admission mode %d", d.Admission)
	}
	if a.K()+a.B() > maxRows {
		return nil, fmt.Errorf("duel: %d rows held plus %d incoming exceed %d", a.K(), a.B(), maxRows)
	}
	if d.reference {
		return duelReference(a, d.Admission), nil
	}
	return d.fast.update(a, d.Admission, d.MaxBlockBytes), nil
}

// MarshalBinary records the admission mode.
func (d *DUEL) MarshalBinary() ([]byte, error) { return []byte{byte(d.Admission)}, nil }

// UnmarshalBinary restores the admission mode.
func (d *DUEL) UnmarshalBinary(data []byte) error {
	if len(data) != 1 || (Admission(data[0]) != Protected && Admission(data[0]) != Compete) {
		return fmt.Errorf("duel: bad policy state %x, expected one admission byte (0 or 1)", data)
	}
	d.Admission = Admission(data[0])
	d.fast.settle()
	d.fast = fastDUEL{}
	return nil
}

// Admission says whether a row that entered the memory may be evicted by a
// later row of the same batch.
type Admission uint8

const (
	// Protected (the default): a row inserted during a batch cannot be
	// evicted before the batch ends (unless only such rows are left, when
	// the batch is larger than the memory). This is how we read the
	// MAX_SCORE offset of the paper's pseudocode, score[i] = t.sum() +
	// MAX_SCORE: taken literally, with a large positive MAX_SCORE, every
	// new row would hold the highest score and be evicted by the next one,
	// so that a batch would only ever replace one row of the memory and the
	// policy would degenerate. We read the offset as a rank that keeps new
	// rows out of reach instead.
	Protected Admission = iota
	// Compete is Algorithm 1 with MAX_SCORE = 0: a new row competes with
	// every row held from the next incoming row on.
	Compete
)

// String returns "protected" or "compete".
func (a Admission) String() string {
	switch a {
	case Protected:
		return "protected"
	case Compete:
		return "compete"
	}
	return fmt.Sprintf("Admission(%d)", uint8(a))
}

// ParseAdmission parses "protected" or "compete".
func ParseAdmission(s string) (Admission, error) {
	switch s {
	case "protected":
		return Protected, nil
	case "compete":
		return Compete, nil
	}
	return 0, fmt.Errorf("unknown admission mode %q, expected protected or compete", s)
}

// evictsBefore is the victim order shared by both implementations: row a
// (protected?, score, position) is evicted before row b when it is not
// protected and b is, or else when its score is higher, or else when its
// position is lower.
func evictsBefore(aProt bool, aScore float64, aPos int, bProt bool, bScore float64, bPos int) bool {
	if aProt != bProt {
		return bProt
	}
	if aScore != bScore {
		return aScore > bScore
	}
	return aPos < bPos
}
