package dist

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// DefaultBucketBytes is the gradient bucket size of a Reducer: PyTorch
// DDP's 25 MiB would put a small network's gradients in one bucket,
// reduced only after the whole backward pass; 1 MiB starts the first
// all-reduce early while keeping the number of messages small.
const DefaultBucketBytes = 1 << 20

// Reducer sums the gradients of a model's parameters over the ranks,
// bucket by bucket while the backward pass still runs (PyTorch DDP's
// design): parameters are put into buckets in reverse registration order,
// roughly the order in which the backward pass completes them, and a
// bucket's non-blocking all-reduce starts as soon as its last gradient is
// complete. After Backward every rank holds the same summed gradients.
//
// Gradients on a device are copied to the host for MPI (the device has no
// MPI path of its own) and the sums copied back.
type Reducer struct {
	c       Comm
	params  []*autograd.Var
	bucket  []int   // parameter -> bucket
	offset  []int   // parameter -> offset in its bucket
	members [][]int // bucket -> parameters
	bufs    [][]float32
	left    []int
	reqs    []Request
	hadGrad []bool
	// Overlapped counts the buckets whose all-reduce started before the
	// end of the last backward pass (the overlap with computation).
	Overlapped int
}

// NewReducer groups params into buckets of about bucketBytes (<= 0:
// DefaultBucketBytes) for the all-reduce over c.
func NewReducer(c Comm, params []*autograd.Var, bucketBytes int) *Reducer {
	if bucketBytes <= 0 {
		bucketBytes = DefaultBucketBytes
	}
	r := &Reducer{c: c, params: params,
		bucket: make([]int, len(params)), offset: make([]int, len(params)), hadGrad: make([]bool, len(params))}
	size := 0
	for i := len(params) - 1; i >= 0; i-- {
		n := params[i].Value.Numel()
		if len(r.members) == 0 || (size > 0 && 4*(size+n) > bucketBytes) {
			r.members = append(r.members, nil)
			r.bufs = append(r.bufs, nil)
			size = 0
		}
		b := len(r.members) - 1
		r.bucket[i], r.offset[i] = b, size
		r.members[b] = append(r.members[b], i)
		size += n
		r.bufs[b] = make([]float32, size)
	}
	r.left = make([]int, len(r.members))
	r.reqs = make([]Request, len(r.members))
	return r
}

// Buckets returns the number of buckets.
func (r *Reducer) Buckets() int { return len(r.members) }

// Backward runs the backward pass of loss on tp (which must have tracked
// its inputs: autograd.Tape.TrackInputs) and sums the parameters'
// gradients over the ranks. On a single rank it is tp.Backward(loss).
func (r *Reducer) Backward(tp *autograd.Tape, loss *autograd.Var) error {
	if r.c.Size() == 1 {
		tp.Backward(loss)
		return nil
	}
	for b := range r.members {
		r.left[b] = len(r.members[b])
		r.reqs[b] = nil
	}
	r.Overlapped = 0
	var err error
	inPass := true
	tp.BackwardNotify(loss, r.params, func(i int) {
		if err != nil {
			return
		}
		b := r.bucket[i]
		r.left[b]--
		if r.left[b] > 0 {
			return
		}
		if err = r.start(b); err == nil && inPass {
			r.Overlapped++
			err = r.progress()
		}
	})
	inPass = false
	if err != nil {
		return err
	}
	for b := range r.members {
		if r.reqs[b] == nil {
			return fmt.Errorf("dist: gradient bucket %d was never complete", b)
		}
		if err := r.reqs[b].Wait(); err != nil {
			return fmt.Errorf("dist: all-reduce of gradient bucket %d: %w", b, err)
		}
		if err := r.finish(b); err != nil {
			return err
		}
	}
	return nil
}

// start copies bucket b's gradients into its buffer and starts their sum.
func (r *Reducer) start(b int) error {
	buf := r.bufs[b]
	for _, i := range r.members[b] {
		p := r.params[i]
		dst := buf[r.offset[i] : r.offset[i]+p.Value.Numel()]
		r.hadGrad[i] = p.Grad != nil
		if p.Grad == nil {
			clear(dst)
			continue
		}
		h, err := p.Grad.To(tensor.CPU)
		if err != nil {
			return fmt.Errorf("dist: copying the gradient of %v to the host: %w", p, err)
		}
		copy(dst, h.Contiguous().Data())
	}
	q, err := r.c.IAllReduce(buf)
	if err != nil {
		return fmt.Errorf("dist: starting the all-reduce of gradient bucket %d: %w", b, err)
	}
	r.reqs[b] = q
	return nil
}

// progress lets the transport advance the all-reduces in flight.
func (r *Reducer) progress() error {
	for b, q := range r.reqs {
		if q == nil {
			continue
		}
		if _, err := q.Test(); err != nil {
			return fmt.Errorf("dist: all-reduce of gradient bucket %d: %w", b, err)
		}
	}
	return nil
}

// finish writes bucket b's sums back into the gradients. A parameter
// without a gradient on this rank gets one when another rank had it
// (the sum is not zero), and stays without one otherwise.
func (r *Reducer) finish(b int) error {
	buf := r.bufs[b]
	for _, i := range r.members[b] {
		p := r.params[i]
		sum := buf[r.offset[i] : r.offset[i]+p.Value.Numel()]
		if p.Grad == nil && !r.hadGrad[i] && allZero(sum) {
			continue
		}
		if r.hadGrad[i] && p.Grad != nil && p.Grad.Device() == tensor.CPU {
			copy(p.Grad.Data(), sum)
			continue
		}
		g, err := tensor.FromSlice(append([]float32(nil), sum...), p.Value.Shape()...).To(p.Value.Device())
		if err != nil {
			return fmt.Errorf("dist: copying the summed gradient of %v to %v: %w", p, p.Value.Device(), err)
		}
		p.Grad = g
	}
	return nil
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
