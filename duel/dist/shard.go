package dist

// Data parallelism splits every global batch of n samples across the
// ranks by stride: rank r holds samples r, r+R, r+2R, ... (R ranks). The
// stride, not contiguous blocks, is what keeps ghost BatchNorm exact: its
// group of sample i is i mod S (MoCo's SplitBatchNorm), so with S a
// multiple of R the S/R groups of a rank's shard are exactly S/R of the
// global batch's groups, and a run on R ranks normalises the same samples
// together as one process with the whole batch.

// ShardLen is the number of the n global rows that rank holds in a group
// of size ranks.
func ShardLen(n, rank, size int) int {
	if rank >= n {
		return 0
	}
	return (n - rank + size - 1) / size
}

// ShardRows lists the global rows that rank holds: rank, rank+size, ...
func ShardRows(n, rank, size int) []int {
	rows := make([]int, 0, ShardLen(n, rank, size))
	for i := rank; i < n; i += size {
		rows = append(rows, i)
	}
	return rows
}

// GatherRowsHost gathers the rows of every rank's local (this rank's
// ShardLen(n, ...) rows of width values each) into the n global rows, in
// global order, on every rank.
func GatherRowsHost(c Comm, local []float32, n, width int) ([]float32, error) {
	size, rank := c.Size(), c.Rank()
	if size == 1 {
		return local, nil
	}
	m := ShardLen(n, rank, size)
	if len(local) != m*width {
		return nil, errLength("GatherRows", 4*len(local), 4*m*width)
	}
	per := (n + size - 1) / size // rows per rank, padded
	send := make([]float32, per*width)
	copy(send, local)
	recv := make([]float32, size*per*width)
	if err := c.AllGather(Float32Bytes(send), Float32Bytes(recv)); err != nil {
		return nil, err
	}
	out := make([]float32, n*width)
	for i := 0; i < n; i++ {
		r, j := i%size, i/size
		copy(out[i*width:(i+1)*width], recv[(r*per+j)*width:(r*per+j+1)*width])
	}
	return out, nil
}

// TakeRows copies the rows listed in rows out of the n x width matrix x.
func TakeRows(x []float32, rows []int, width int) []float32 {
	out := make([]float32, len(rows)*width)
	for k, i := range rows {
		copy(out[k*width:(k+1)*width], x[i*width:(i+1)*width])
	}
	return out
}
