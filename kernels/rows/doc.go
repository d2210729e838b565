// Package rows holds the CPU kernels of the row operations autograd
// differentiates: softmax, log-softmax, L2 normalisation and softmax
// cross-entropy, forward and backward, along one axis of contiguous
// float32 tensors, and the gather/scatter of one element per lane
// (TakeAlong, PutAlong). The tensor CPU backend exposes them as its
// tensor.RowsBackend and tensor.IndexBackend capabilities.
//
// Every function takes the tensor's shape and the axis; a lane is the 1-d
// line of elements along the axis. Lanes along the last axis are computed
// in place; others are gathered into scratch and scattered back. Large
// inputs are split across goroutines by lane; every lane is computed by one
// goroutine, so the results do not depend on the number of cores.
package rows
