// Package rows holds CPU kernels that work lane by lane along one axis of
// contiguous float32 tensors (a lane is the 1-d line of elements along the
// axis): today the gather and scatter of one element per lane (TakeAlong,
// PutAlong), which the tensor CPU backend exposes as its
// tensor.IndexBackend capability.
package rows
