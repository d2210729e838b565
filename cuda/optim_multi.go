package cuda

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.MultiOptimizerBackend = (*Backend)(nil)

// multiChunkThreads is the elements a thread of a multi-tensor kernel
// updates per chunk: a block takes chunk = block*multiChunkThreads
// elements of one tensor at a time.
const multiChunkThreads = 8

// multiTable is the operands of a multi-tensor launch (optim.cu, "The
// multi-tensor kernels"): cols[p][t] is the address of operand p of tensor
// t, n[t] its number of elements.
type multiTable struct {
	cols [][]driver.DevicePtr
	n    []int
}

// newMultiTable returns the table of lists of operands paired by index,
// each operand dense with as many elements as the first list's operand of
// its index (names name the lists in errors). A nil list is absent (the
// momentum buffers of a step without momentum): its column holds the
// dummy address.
func (be *Backend) newMultiTable(op string, names []string, lists ...[]tensor.Operand) multiTable {
	t := len(lists[0])
	tab := multiTable{cols: make([][]driver.DevicePtr, len(lists)), n: make([]int, t)}
	for i, o := range lists[0] {
		tab.n[i] = elems(o)
	}
	for p, l := range lists {
		tab.cols[p] = make([]driver.DevicePtr, t)
		for i := range tab.cols[p] {
			if l == nil {
				tab.cols[p][i] = be.dummy
				continue
			}
			ptr, bad := be.denseAddr(op, l[i], tab.n[i])
			if bad != "" {
				panic(fmt.Sprintf("cuda: Backend.%s: %s %d %s", op, names[p], i, bad))
			}
			tab.cols[p][i] = ptr
		}
	}
	return tab
}

// launchMulti uploads the table and calls run with its address, its number of
// tensors, the chunk size and the number of chunks, and the launch
// configuration: a block per chunk, at most 32 per multiprocessor (the
// blocks then loop over the chunks). Nothing runs when no tensor has an
// element.
func (be *Backend) launchMulti(op string, tab multiTable, run func(cfg kc.Config, t driver.DevicePtr, T int32, chunk, chunks int64) error) {
	T := len(tab.n)
	chunk := int64(be.block) * multiChunkThreads
	words := make([]uint64, 0, (len(tab.cols)+2)*T+1)
	for _, col := range tab.cols {
		for _, p := range col {
			words = append(words, uint64(p))
		}
	}
	for _, n := range tab.n {
		words = append(words, uint64(n))
	}
	var chunks int64
	for _, n := range tab.n {
		words = append(words, uint64(chunks))
		chunks += (int64(n) + chunk - 1) / chunk
	}
	words = append(words, uint64(chunks))
	if chunks == 0 {
		return
	}
	if T > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: Backend.%s: %d tensors, more than a launch takes", op, T))
	}
	bytes := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(bytes[8*i:], w)
	}
	s := &scratch{mem: be.mem}
	defer s.release() // after the launch: the cache reuses it later in the stream's order
	dev, err := s.alloc(len(bytes))
	must(op, err)
	be.queued(op, be.g.CopyToDevice(dev, bytes))
	blocks := min(chunks, int64(be.g.Multiprocessors())*32, 1<<20)
	cfg := kc.Config{Grid: driver.Dim3{X: int(blocks), Y: 1, Z: 1}, Block: driver.Dim3{X: be.block, Y: 1, Z: 1}}
	be.queued(op, run(cfg, dev, int32(T), chunk, chunks))
}

// SGDSteps applies SGDStep to every parameter in one launch
// (sgd_multi_f32: sgd_step_f32's arithmetic on each element).
func (be *Backend) SGDSteps(params, grads, bufs []tensor.Operand, a tensor.SGDArgs) {
	const op = "SGDSteps"
	tensor.PairUp(op, params, grads)
	if a.Momentum == 0 {
		bufs = nil
	} else {
		tensor.PairUp(op, params, bufs)
	}
	tab := be.newMultiTable(op, []string{"param", "grad", "buf"}, params, grads, bufs)
	be.launchMulti(op, tab, func(cfg kc.Config, t driver.DevicePtr, T int32, chunk, chunks int64) error {
		return kc.SgdMultiF32(be.g, cfg, t, T, chunk, chunks, a.LR, a.WeightDecay, a.Momentum, 1-a.Dampening,
			b2i(a.Nesterov), b2i(a.First))
	})
}

// AdamSteps applies AdamStep to every parameter in one launch
// (adam_multi_f32: adam_step_f32's arithmetic on each element, the bias
// corrections computed here as AdamStep computes them).
func (be *Backend) AdamSteps(params, grads, ms, vs []tensor.Operand, a tensor.AdamArgs) {
	const op = "AdamSteps"
	tensor.PairUp(op, params, grads, ms, vs)
	tab := be.newMultiTable(op, []string{"param", "grad", "m", "v"}, params, grads, ms, vs)
	stepSize, inv, decay, l2 := adamScalars(a)
	be.launchMulti(op, tab, func(cfg kc.Config, t driver.DevicePtr, T int32, chunk, chunks int64) error {
		return kc.AdamMultiF32(be.g, cfg, t, T, chunk, chunks, a.Beta1, a.Beta2, a.Eps, stepSize, inv, decay, l2)
	})
}

// EMAs applies EMA to every pair in one launch (ema_multi_f32: ema_f32's
// arithmetic on each element).
func (be *Backend) EMAs(targets, onlines []tensor.Operand, m float64) {
	const op = "EMAs"
	tensor.PairUp(op, targets, onlines)
	tab := be.newMultiTable(op, []string{"target", "online"}, targets, onlines)
	be.launchMulti(op, tab, func(cfg kc.Config, t driver.DevicePtr, T int32, chunk, chunks int64) error {
		return kc.EmaMultiF32(be.g, cfg, t, T, chunk, chunks, float32(m), float32(1-m))
	})
}

// ZeroAll zeroes every operand in one launch (zero_multi_f32).
func (be *Backend) ZeroAll(xs []tensor.Operand) {
	const op = "ZeroAll"
	tab := be.newMultiTable(op, []string{"operand"}, xs)
	be.launchMulti(op, tab, func(cfg kc.Config, t driver.DevicePtr, T int32, chunk, chunks int64) error {
		return kc.ZeroMultiF32(be.g, cfg, t, T, chunk, chunks)
	})
}
