package memory

import (
	"fmt"
	"strings"
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
// The paper's two descriptions of the update order can be read in four
// ways; Admission chooses (Protected by default).
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
	wideKeys  bool     // the fast path's keys without ranks at any size (tests, see keyShift)
	fast      fastDUEL // the carried state of the fast path
}

// NewDUEL returns the DUEL policy with the given admission mode.
func NewDUEL(adm Admission) *DUEL {
	return &DUEL{Admission: adm, MaxBlockBytes: 256 << 20}
}

// StateBytes estimates, from below, the host memory the policy keeps
// beside a memory of k rows: the carried K x K block of dots (up to
// MaxBlockBytes; beyond it a panel of 256 x K dots while it rebuilds its
// scores), plus the slots' scores, order and rank.
func (d *DUEL) StateBytes(k int) float64 {
	kf := float64(k)
	block := 4 * kf * kf
	if block > float64(d.MaxBlockBytes) {
		block = 4 * 256 * kf
	}
	return block + 24*kf
}

// HostBytes estimates, from below, the host memory the policy holds at
// the peak of an update of a memory of k rows of z values by a batch of b
// rows, as it computes with its admission:
//
//   - the fast path (Protected, Compete): the slots' grid rows (int16, and
//     again packed for the integer products: 4z bytes a slot), the
//     batch's grid rows (two sets), the scores, keys, order and rank
//     (37 bytes a slot), the batch's dots with the slots and the batch
//     (4b bytes a slot), and the carried K x K block of dots (4k bytes a
//     slot) with its ring of the last updates' columns (4 min(16b, 2k)
//     bytes a slot) when the block fits MaxBlockBytes, or else the panel
//     of 256 x K dots its rebuilds compute the scores in;
//   - the reference (the other admissions): the K+B grid rows and their
//     (K+B) x (K+B) dots, in float32.
//
// StateBytes is the part that depends on k alone.
func (d *DUEL) HostBytes(k, z, b int) float64 {
	kf, zf, bf := float64(k), float64(z), float64(b)
	if d.reference || !d.Admission.fast() {
		n := kf + bf
		return 4*n*zf + 4*n*n
	}
	grids := 4*kf*zf + 2*4*bf*zf
	slots := 37*kf + 9*bf + 4*bf*(kf+bf)
	if 4*kf*kf <= float64(d.MaxBlockBytes) {
		stride := max(bf, 1)
		ring := kf * min(16, max(2, float64(int(2*kf/stride)))) * stride
		return grids + slots + 4*kf*kf + 12*kf + 4*ring
	}
	return grids + slots + 4*256*kf
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
	if !d.Admission.valid() {
		return nil, fmt.Errorf("duel: unknown admission mode %d", d.Admission)
	}
	if a.K()+a.B() > maxRows {
		return nil, fmt.Errorf("duel: %d rows held plus %d incoming exceed %d", a.K(), a.B(), maxRows)
	}
	if d.reference || !d.Admission.fast() {
		return duelReference(a, d.Admission), nil
	}
	d.fast.wide = d.wideKeys
	return d.fast.update(a, d.Admission, d.MaxBlockBytes), nil
}

// AdmissionMode returns d.Admission (Admitting).
func (d *DUEL) AdmissionMode() Admission { return d.Admission }

// MarshalBinary records the admission mode.
func (d *DUEL) MarshalBinary() ([]byte, error) { return []byte{byte(d.Admission)}, nil }

// UnmarshalBinary restores the admission mode.
func (d *DUEL) UnmarshalBinary(data []byte) error {
	if len(data) != 1 || !Admission(data[0]).valid() {
		return fmt.Errorf("duel: bad policy state %x, expected one admission byte (0 to %d)", data, len(AdmissionNames)-1)
	}
	d.Admission = Admission(data[0])
	d.fast.settle()
	d.fast = fastDUEL{}
	return nil
}

// Admitting is implemented by the policies whose decisions depend on an
// Admission: DUEL, on the host or on a device. A memory checkpoint records
// the admission in the policy's state, and a run's configuration must
// agree with it.
type Admitting interface {
	// AdmissionMode returns the admission the policy decides with.
	AdmissionMode() Admission
}

// Admission is the reading of the paper's update order that the policy
// follows. The paper gives two descriptions that differ in who may be
// evicted when a row arrives: Algorithm 1 (Section 4.2) inserts the newcomer
// and then evicts the argmin of distinctiveness over the K+1 rows, and the
// implemented version (Appendix D, update_DUEL) evicts first and inserts
// after, giving the newcomer the score t.sum() + MAX_SCORE, with MAX_SCORE
// left undefined. Four readings are selectable:
//
//	Protected    Appendix D's order, new rows out of reach until the batch
//	             ends (MAX_SCORE read as a rank below every held row). The
//	             default.
//	Compete      Appendix D's order, new rows competing from the next
//	             arrival on with their full score (t.sum() plus their q with
//	             themselves, as the rows held have it; MAX_SCORE = 0).
//	InsertFirst  Algorithm 1 as printed: insert, then evict the row of
//	             highest score among the K+1, so that a newcomer can be
//	             rejected on arrival.
//	MaxScore     Appendix D with MAX_SCORE read literally as a large positive
//	             constant: every new row holds the top score and is evicted
//	             by the next arrival, so a batch only ever replaces one held
//	             row (with its last row). Degenerate; selectable so that users
//	             can see why.
//
// Protected and Compete run on the fast incremental path; InsertFirst and
// MaxScore on the transcription of the pseudocode (duelReference), whose
// cost is O(Z (K+B)^2) per update.
type Admission uint8

const (
	// Protected (the default): a row inserted during a batch cannot be
	// evicted before the batch ends (unless only such rows are left, when
	// the batch is larger than the memory).
	Protected Admission = iota
	// Compete: a new row competes with every row held from the next
	// incoming row on. It is not Algorithm 1 (see InsertFirst), and it
	// differs from the pseudocode with MAX_SCORE = 0 by the new row's q
	// with itself, which the pseudocode's t.sum() leaves out.
	Compete
	// InsertFirst is Algorithm 1 as printed: the newcomer joins, then the
	// row with the highest score among the K+1 leaves (possibly the
	// newcomer itself; ties go to the lowest position, the newcomer last).
	InsertFirst
	// MaxScore is Appendix D's MAX_SCORE read as a large positive constant
	// (maxScoreOffset): each new row is evicted by the next arrival.
	MaxScore
)

// maxScoreOffset is MAX_SCORE in the MaxScore reading: larger than any sum
// of K+B values of q (each at most 1) at any supported memory size, and a
// power of two so that scores stay exact in float64.
const maxScoreOffset = 1 << 24

// AdmissionNames lists the accepted names of ParseAdmission, in the order
// of the constants.
var AdmissionNames = []string{"protected", "compete", "insert-first", "max-score"}

// String returns the reading's name ("protected", ...).
func (a Admission) String() string {
	if int(a) < len(AdmissionNames) {
		return AdmissionNames[a]
	}
	return fmt.Sprintf("Admission(%d)", uint8(a))
}

// valid reports whether a is one of the four readings.
func (a Admission) valid() bool { return int(a) < len(AdmissionNames) }

// fast reports whether the fast incremental path implements a.
func (a Admission) fast() bool { return a == Protected || a == Compete }

// ParseAdmission parses a reading's name (see AdmissionNames).
func ParseAdmission(s string) (Admission, error) {
	for i, n := range AdmissionNames {
		if s == n {
			return Admission(i), nil
		}
	}
	return 0, fmt.Errorf("unknown admission mode %q, expected one of %s", s, strings.Join(AdmissionNames, ", "))
}

// evictsBefore is the victim order of the reference (the fast path's
// score keys encode the same order, see scorepass.go): row a (protected?,
// score, position) is evicted before row b when it is not protected and b
// is, or else when its score is higher, or else when its position is
// lower.
func evictsBefore(aProt bool, aScore float64, aPos int, bProt bool, bScore float64, bPos int) bool {
	if aProt != bProt {
		return bProt
	}
	if aScore != bScore {
		return aScore > bScore
	}
	return aPos < bPos
}
