package cuda

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// Backend is the CUDA tensor.Backend of one device (device 0 when
// registered as "cuda"). Buffers hold device memory from a caching
// Allocator; operations queue the kernels of kernels/cuda on the device's
// stream without waiting for them, and the operations that read the
// device on the host (CopyOut, ArgMax) wait. A failure of queued work
// (e.g. an illegal address in a kernel) is reported by the next operation
// that waits, as a *tensor.DeviceError of that operation whose error names
// the operations queued since the last wait.
//
// Backend is a tensor.Releaser: (*tensor.Tensor).Release returns a
// tensor's memory to the cache at once; memory not released returns to it
// when the garbage collector finds its tensor unreachable. EmptyCache
// returns the cached memory to the device.
type Backend struct {
	g        GPU
	mem      *Allocator
	dummy    driver.DevicePtr // a valid address for pointers a kernel will not read
	block    int              // threads per block of the elementwise and row kernels
	cc       int              // the device's compute capability (0: unknown, e.g. the emulator: tensor cores allowed)
	prec     Precision        // the precision of Gemm (SetPrecision)
	convPrec Precision        // the precision of the convolutions (SetConvPrecision)
	tc       tcState          // which tensor-core GEMM kernels Gemm uses (precision.go)
	tune     gemmTuning       // TCAuto's measurements of gemm_wg.cu's kernels by shape (gemm_tune.go)
	convTC   convTCState      // convTCFor's cached choices of conv_tc.cu kernels (conv_tc.go)
	// checkedStrided makes the input gradient at stride > 1 run the
	// direct kernels (conv_dgrad_*), never convInputGradStrided (tests).
	checkedStrided bool
	// phasesStrided makes convInputGradStrided run the phases
	// (convInputGradPhases) where they can, not dcol and its gather
	// ($DUEL_CUDA_STRIDED_GRAD=phases, tests, benchmarks): slower on an
	// H200 (see StridedGradEnv).
	phasesStrided bool
	// phasesDirect makes the phases write dx themselves, a phase at a
	// time at a stride of S, not through their dense matrices and
	// conv_phase_gather_f32 (tests, benchmarks).
	phasesDirect bool

	mu      sync.Mutex
	pending []string // operations queued since the last wait, oldest first (at most maxPending)
	dropped int      // operations queued since the last wait not in pending
}

// maxPending is the number of queued operations an asynchronous failure's
// error names (the most recent ones).
const maxPending = 16

// NewBackend returns a backend on the default device (device 0), or the
// error saying why no device is usable. Available registers one as "cuda".
func NewBackend() (*Backend, error) {
	d, err := Default()
	if err != nil {
		return nil, err
	}
	prec, err := DefaultPrecision()
	if err != nil {
		return nil, err
	}
	convPrec, err := DefaultConvPrecision()
	if err != nil {
		return nil, err
	}
	tck, err := DefaultTCKernel()
	if err != nil {
		return nil, err
	}
	phases, err := stridedPhasesFromEnv()
	if err != nil {
		return nil, err
	}
	b, err := newBackend(d, 256)
	if err != nil {
		return nil, unusable(err)
	}
	b.SetPrecision(prec)
	b.SetConvPrecision(convPrec)
	b.SetTCKernel(tck)
	b.phasesStrided = phases
	return b, nil
}

// newBackend returns a backend on d whose elementwise and row kernels use
// block threads (a multiple of 32; tests vary it), with FP32 products
// (NewBackend applies DefaultPrecision; tests set others explicitly).
func newBackend(g GPU, block int) (*Backend, error) {
	dummy, err := g.Alloc(256)
	if err != nil {
		return nil, err
	}
	be := &Backend{g: g, mem: NewAllocator(g), dummy: dummy, block: block, prec: FP32}
	if c, ok := g.(interface{ Capability() int }); ok {
		be.cc = c.Capability()
	}
	return be, nil
}

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// must panics with a *tensor.DeviceError wrapping the driver error of a
// failed operation (tensor.Backend has no error results; the panic is the
// device failure tensor.CatchDeviceError turns back into an error).
func must(op string, err error) {
	if err != nil {
		panic(&tensor.DeviceError{Backend: "cuda", Op: op, Err: err})
	}
}

// queued panics like must when err is not nil, and otherwise records op
// among the operations queued since the last wait.
func (be *Backend) queued(op string, err error) {
	must(op, err)
	be.mu.Lock()
	defer be.mu.Unlock()
	if n := len(be.pending); n > 0 && be.pending[n-1] == op {
		return
	}
	if len(be.pending) == maxPending {
		be.pending = append(be.pending[:0], be.pending[1:]...)
		be.dropped++
	}
	be.pending = append(be.pending, op)
}

// waited turns err, the result of a call that waited for the device, into
// the error to report: wrapped with the operations queued since the last
// wait (one of them may have failed), which it forgets. It returns nil for
// nil.
func (be *Backend) waited(err error) error {
	be.mu.Lock()
	pending, dropped := be.pending, be.dropped
	be.pending, be.dropped = nil, 0
	be.mu.Unlock()
	if err == nil || len(pending) == 0 {
		return err
	}
	ops := strings.Join(pending, ", ")
	if dropped > 0 {
		ops = fmt.Sprintf("%d earlier, then %s", dropped, ops)
	}
	return fmt.Errorf("%w (reported on waiting for the device; operations queued since the last wait: %s)", err, ops)
}

// read copies device memory at src into dst, waiting for the queued work;
// it panics with a *tensor.DeviceError of op on failure.
func (be *Backend) read(op string, dst []byte, src driver.DevicePtr) {
	must(op, be.waited(be.g.CopyFromDevice(dst, src)))
}

// Synchronize waits for the work queued on the device. A failure of that
// work is returned as a *tensor.DeviceError (Op "Synchronize") naming the
// operations queued since the last wait.
func (be *Backend) Synchronize() error {
	if err := be.waited(be.g.Synchronize()); err != nil {
		return &tensor.DeviceError{Backend: "cuda", Op: "Synchronize", Err: err}
	}
	return nil
}

// Release returns b's device memory to the backend's cache
// (tensor.Releaser): b and every buffer sharing its handle must not be
// used afterwards (the backend panics if one is). Releasing twice does
// nothing.
func (be *Backend) Release(b tensor.Buffer) {
	d, ok := b.Dev.(*devBuf)
	if !ok {
		panic(fmt.Sprintf("cuda: Backend.Release: buffer is not CUDA device storage (got %T)", b.Dev))
	}
	d.release(be.mem)
}

// EmptyCache returns the device memory cached for reuse to the device,
// after the queued work (it may still use it).
func (be *Backend) EmptyCache() error {
	if err := be.waited(be.mem.EmptyCache()); err != nil {
		return &tensor.DeviceError{Backend: "cuda", Op: "EmptyCache", Err: err}
	}
	return nil
}

// MemoryStats returns the counters of the backend's caching allocator.
func (be *Backend) MemoryStats() AllocatorStats { return be.mem.Stats() }

// buf returns the device storage of b, panicking on a host buffer.
func buf(op string, b tensor.Buffer) *devBuf {
	d, ok := b.Dev.(*devBuf)
	if !ok {
		panic(fmt.Sprintf("cuda: Backend.%s: buffer is not CUDA device storage (got %T)", op, b.Dev))
	}
	if d.released.Load() {
		panic(fmt.Sprintf("cuda: Backend.%s: buffer used after Release", op))
	}
	return d
}

// ptr returns the address of element off of b, or the dummy address when b
// is empty (the kernel then reads nothing from it).
func (be *Backend) ptr(op string, b tensor.Buffer, off int) driver.DevicePtr {
	d := buf(op, b)
	if d.n == 0 {
		return be.dummy
	}
	return d.at(off)
}

// Alloc returns zeroed device storage for n elements.
func (be *Backend) Alloc(n int) tensor.Buffer {
	b, err := newDevBuf(be.mem, be.g, n, true)
	be.queued("Alloc", err)
	return tensor.Buffer{Dev: b}
}

// CopyIn copies src into dst starting at element off.
func (be *Backend) CopyIn(dst tensor.Buffer, off int, src []float32) {
	d := buf("CopyIn", dst)
	if off < 0 || off+len(src) > d.n {
		panic(fmt.Sprintf("cuda: Backend.CopyIn: %d elements at %d into a buffer of %d", len(src), off, d.n))
	}
	if len(src) == 0 {
		return
	}
	err := be.g.CopyToDevice(d.at(off), Bytes(src))
	if err != nil {
		err = be.waited(err) // a large copy waits for its staging buffers: the failure may be earlier work's
	}
	be.queued("CopyIn", err)
}

// CopyOut copies len(dst) elements starting at element off to dst.
func (be *Backend) CopyOut(dst []float32, src tensor.Buffer, off int) {
	s := buf("CopyOut", src)
	if off < 0 || off+len(dst) > s.n {
		panic(fmt.Sprintf("cuda: Backend.CopyOut: %d elements at %d from a buffer of %d", len(dst), off, s.n))
	}
	if len(dst) == 0 {
		return
	}
	be.read("CopyOut", Bytes(dst), s.at(off))
}

// grid returns the launch configuration of a grid-stride loop over n items.
func (be *Backend) grid(n int64) kc.Config {
	blocks := min((n+int64(be.block)-1)/int64(be.block), int64(be.g.Multiprocessors())*32, 1<<20)
	return kc.Config{Grid: driver.Dim3{X: int(max(blocks, 1)), Y: 1, Z: 1}, Block: driver.Dim3{X: be.block, Y: 1, Z: 1}}
}

// layout returns the kernel layout of shape with the given views, merging
// dimensions that are contiguous in every view so that any rank that can
// be walked with at most kc.MaxDim dimensions is accepted.
func layout(op string, shape []int, views ...tensor.Operand) kc.Layout {
	offs := make([]int, len(views))
	strides := make([][]int, len(views))
	for v, o := range views {
		offs[v] = o.Offset
	}
	var sh []int
	for d, n := range shape {
		if n == 1 {
			continue // size-1 dimensions move no view
		}
		last := len(sh) - 1
		merge := last >= 0
		for v, o := range views {
			if merge && strides[v][last] != o.Strides[d]*n {
				merge = false
			}
		}
		if merge {
			sh[last] *= n
			for v, o := range views {
				strides[v][last] = o.Strides[d]
			}
			continue
		}
		sh = append(sh, n)
		for v, o := range views {
			strides[v] = append(strides[v], o.Strides[d])
		}
	}
	for _, n := range shape {
		if n == 0 {
			sh, strides = []int{0}, make([][]int, len(views))
			for v := range strides {
				strides[v] = []int{0}
			}
			break
		}
	}
	for v := range strides {
		if strides[v] == nil {
			strides[v] = []int{}
		}
	}
	l, err := kc.NewLayout(sh, offs, strides...)
	if err != nil {
		panic(fmt.Sprintf("cuda: Backend.%s: shape %v: %v", op, shape, err))
	}
	return l
}

// Fill sets every element of dst to v.
func (be *Backend) Fill(dst tensor.Operand, v float32) {
	l := layout("Fill", dst.Shape, dst)
	if l.N == 0 {
		return
	}
	be.queued("Fill", kc.FillF32(be.g, be.grid(l.N), be.ptr("Fill", dst.Buf, 0), v, l))
}

// Unary computes dst = op(src, p) elementwise.
func (be *Backend) Unary(op tensor.UnaryOp, dst, src tensor.Operand, p float32) {
	l := layout("Unary", dst.Shape, dst, src)
	if l.N == 0 {
		return
	}
	be.queued("Unary", kc.UnaryF32(be.g, be.grid(l.N), int32(op), p, be.ptr("Unary", dst.Buf, 0), be.ptr("Unary", src.Buf, 0), l))
}

// opAXPY is binary_f32's a + p*b.
const opAXPY = 6

// Binary computes dst = op(a, b) elementwise.
func (be *Backend) Binary(op tensor.BinaryOp, dst, a, b tensor.Operand) {
	be.binary("Binary", int32(op), 0, dst, a, b)
}

// AddScaled computes dst += alpha*x.
func (be *Backend) AddScaled(dst tensor.Operand, alpha float32, x tensor.Operand) {
	be.binary("AddScaled", opAXPY, alpha, dst, dst, x)
}

func (be *Backend) binary(name string, op int32, p float32, dst, a, b tensor.Operand) {
	l := layout(name, dst.Shape, dst, a, b)
	if l.N == 0 {
		return
	}
	be.queued(name, kc.BinaryF32(be.g, be.grid(l.N), op, p,
		be.ptr(name, dst.Buf, 0), be.ptr(name, a.Buf, 0), be.ptr(name, b.Buf, 0), l))
}

// gatherLast returns src's elements contiguous with the axes in order perm
// (a permutation of src's axes): src's own storage when it is already laid
// out so, else a strided copy into new device storage. It returns the
// address of the first element (the dummy address when there are none)
// and the copy, if any, to release once the kernel reading it is queued.
func (be *Backend) gatherLast(op string, src tensor.Operand, perm []int) (driver.DevicePtr, *devBuf) {
	shape := make([]int, len(perm))
	strides := make([]int, len(perm))
	for i, a := range perm {
		shape[i], strides[i] = src.Shape[a], src.Strides[a]
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n == 0 {
		return be.dummy, nil
	}
	want := contiguous(shape)
	inPlace := true
	for i := range shape {
		if shape[i] != 1 && strides[i] != want[i] {
			inPlace = false
		}
	}
	if inPlace {
		return be.ptr(op, src.Buf, src.Offset), nil
	}
	tmp, err := newDevBuf(be.mem, be.g, n, false)
	must(op, err)
	view := tensor.Operand{Buf: tensor.Buffer{Dev: tmp}, Shape: shape, Strides: want}
	be.Unary(tensor.OpCopy, view, tensor.Operand{Buf: src.Buf, Offset: src.Offset, Shape: shape, Strides: strides}, 0)
	return tmp.ptr, tmp
}

// contiguous returns the row-major strides of shape.
func contiguous(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// Reduce reduces src into dst: the axes reduced over are moved last by a
// strided copy, then each row is reduced by reduce_rows_f32 into a
// contiguous result copied into dst.
func (be *Backend) Reduce(op tensor.ReduceOp, dst, src tensor.Operand) {
	var kept, red []int
	rows, n := 1, 1
	for a, s := range src.Shape {
		if dst.Shape[a] == 1 && s != 1 {
			red = append(red, a)
			n *= s
		} else {
			kept = append(kept, a)
			rows *= s
		}
	}
	if rows == 0 {
		return
	}
	srcP, tmp := be.gatherLast("Reduce", src, append(slices.Clone(kept), red...))
	defer tmp.release(be.mem) // after the launch: the cache reuses it later in the stream's order
	out, err := newDevBuf(be.mem, be.g, rows, false)
	must("Reduce", err)
	defer out.release(be.mem)
	cfg := be.grid(int64(rows) * int64(be.block))
	be.queued("Reduce", kc.ReduceRowsF32(be.g, cfg, int32(op), out.ptr, srcP, int64(rows), int64(n)))
	be.Unary(tensor.OpCopy, dst, tensor.Operand{Buf: tensor.Buffer{Dev: out}, Shape: dst.Shape, Strides: contiguous(dst.Shape)}, 0)
}

// ArgMax stores the index of the first largest element of every line of
// src along axis (NaN smallest; see reduce.cu).
func (be *Backend) ArgMax(dst []int, src tensor.Operand, axis int) {
	var perm []int
	rows := 1
	for a, s := range src.Shape {
		if a != axis {
			perm = append(perm, a)
			rows *= s
		}
	}
	if rows == 0 {
		return
	}
	n := src.Shape[axis]
	srcP, tmp := be.gatherLast("ArgMax", src, append(perm, axis))
	defer tmp.release(be.mem)
	s := &scratch{mem: be.mem}
	defer s.release()
	out, err := s.alloc(4 * rows)
	must("ArgMax", err)
	cfg := be.grid(int64(rows) * int64(be.block))
	be.queued("ArgMax", kc.ArgmaxRowsF32(be.g, cfg, out, srcP, int64(rows), int64(n)))
	idx := make([]int32, rows)
	be.read("ArgMax", Bytes(idx), out)
	for i, v := range idx {
		dst[i] = int(v)
	}
}

// gemmKernel is the launcher shared by sgemm_f32, gemm_tf32, gemm_bf16,
// gemm_tc2_tf32 and gemm_tc2_bf16.
type gemmKernel = func(l kc.Launcher, cfg kc.Config, transA, transB, M, N, K int32, alpha float32,
	A driver.DevicePtr, lda, strideA int64, B driver.DevicePtr, ldb, strideB int64,
	beta float32, C driver.DevicePtr, ldc, strideC int64, batch int32) error

// Gemm computes the batched product in the backend's precision: with
// sgemm_f32 (FP32, 64 x 64 tiles), or on the tensor cores (see
// SetPrecision) with gemm_tc2_tf32 or gemm_tc2_bf16 (128 x 256 tiles,
// cp.async pipeline) where the device gives them their shared memory, else
// gemm_tf32 or gemm_bf16 (128 x 128 tiles): see Backend.gemmLaunch; under
// TCAuto from compute capability 8.0 on, products from 256 on in M, N and
// K run with the fastest of that kernel and the others the device holds
// (gemm_wg.cu's on 9.0) as measured on their shape's first products
// (gemm_tune.go).
func (be *Backend) Gemm(g tensor.GemmArgs) {
	if g.M == 0 || g.N == 0 || g.Batch == 0 {
		return
	}
	if be.tunesGemm(g) {
		be.tunedGemm(g)
		return
	}
	be.gemmWith(g, be.gemmFor(g))
}

// gemmWith runs product g with kernel k.
func (be *Backend) gemmWith(g tensor.GemmArgs, k gemmChoice) {
	if k.isWG() {
		be.gemmWG(g, k)
		return
	}
	cfg := kc.Config{
		Grid:   driver.Dim3{X: (g.N + k.tileN - 1) / k.tileN, Y: (g.M + k.tileM - 1) / k.tileM, Z: min(g.Batch, 65535)},
		Block:  driver.Dim3{X: 256, Y: 1, Z: 1},
		Shared: k.shared,
	}
	if cfg.Grid.Y > 65535 {
		must("Gemm", fmt.Errorf("cuda: M = %d exceeds the %d rows of one %s launch (grid limit)", g.M, 65535*k.tileM, k.name))
	}
	be.queued("Gemm", k.launch(be.g, cfg, b2i(g.TransA), b2i(g.TransB), int32(g.M), int32(g.N), int32(g.K), g.Alpha,
		be.ptr("Gemm", g.A, g.OffA), int64(g.LDA), int64(g.StrideA),
		be.ptr("Gemm", g.B, g.OffB), int64(g.LDB), int64(g.StrideB),
		g.Beta, be.ptr("Gemm", g.C, g.OffC), int64(g.LDC), int64(g.StrideC), int32(g.Batch)))
}

// Im2Col writes the im2col matrix of the image at src[srcOff:] into
// dst[dstOff:].
func (be *Backend) Im2Col(dst tensor.Buffer, dstOff int, src tensor.Buffer, srcOff int, g tensor.ConvGeom) {
	oh, ow := g.OutH(), g.OutW()
	n := int64(g.C) * int64(g.KH*g.KW) * int64(oh*ow)
	if n <= 0 {
		return
	}
	be.queued("Im2Col", kc.Im2colF32(be.g, be.grid(n), be.ptr("Im2Col", dst, dstOff), be.ptr("Im2Col", src, srcOff),
		int32(g.C), int32(g.H), int32(g.W), int32(g.KH), int32(g.KW), int32(g.StrideH), int32(g.StrideW),
		int32(g.PadH), int32(g.PadW), int32(oh), int32(ow)))
}

// Col2Im adds every element of the im2col matrix at col[colOff:] into its
// image position in dst[dstOff:].
func (be *Backend) Col2Im(dst tensor.Buffer, dstOff int, col tensor.Buffer, colOff int, g tensor.ConvGeom) {
	oh, ow := g.OutH(), g.OutW()
	n := int64(g.C) * int64(g.H*g.W)
	if n <= 0 || oh <= 0 || ow <= 0 {
		return
	}
	be.queued("Col2Im", kc.Col2imF32(be.g, be.grid(n), be.ptr("Col2Im", dst, dstOff), be.ptr("Col2Im", col, colOff),
		int32(g.C), int32(g.H), int32(g.W), int32(g.KH), int32(g.KW), int32(g.StrideH), int32(g.StrideW),
		int32(g.PadH), int32(g.PadW), int32(oh), int32(ow)))
}
