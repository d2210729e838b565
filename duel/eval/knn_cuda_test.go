package eval

import (
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// signFeatures returns n rows of 16 elements ±1 in the given number of
// classes: row i has class i % classes, its class's sign pattern with each
// sign flipped with probability flip. Every row's norm is 4, so the
// normalised elements are ±1/4 and every similarity a multiple of 1/16,
// exact in any summation order: the device's products equal the CPU's, and
// equal similarities (ties) abound.
func signFeatures(r *rand.Rand, n, classes int, flip float64) *Features {
	const d = 16
	pat := make([]float32, classes*d)
	for i := range pat {
		pat[i] = float32(1 - 2*r.IntN(2))
	}
	f := &Features{N: n, D: d, X: make([]float32, n*d), Labels: make([]int32, n)}
	for i := 0; i < n; i++ {
		c := i % classes
		f.Labels[i] = int32(c)
		for j := 0; j < d; j++ {
			v := pat[c*d+j]
			if r.Float64() < flip {
				v = -v
			}
			f.X[i*d+j] = v
		}
	}
	return f
}

// TestKNNOnCUDA runs kNN on the GPU (the similarities by the CUDA
// backend's Gemm, the neighbours by topk.cu, k = 20, 200, and 1200 > TopKMax
// on the host) against the CPU, on features whose similarities are exact:
// the accuracies and predictions are the CPU's exactly, ties included. It
// skips without a usable GPU.
func TestKNNOnCUDA(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	r := rand.New(rand.NewPCG(15, 16))
	all := signFeatures(r, 1500, 7, 0.3)
	train, test := all.Subset(seq(0, 1200)), all.Subset(seq(1200, 1500)) // 300 test rows: two chunks
	for _, k := range []int{20, 200, 1200} {
		for _, vote := range []Vote{Weighted, Majority} {
			cfg := DefaultKNNConfig()
			cfg.K, cfg.Vote = k, vote
			want, err := KNN(train, test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			wantPred, _ := KNNPredict(train, test, cfg)
			cfg.Device = tensor.Device("cuda:0")
			got, err := KNN(train, test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			gotPred, err := KNNPredict(train, test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("k=%d %s on the GPU: %+v, CPU %+v", k, vote, got, want)
			}
			for i := range wantPred {
				if gotPred[i] != wantPred[i] {
					t.Fatalf("k=%d %s: row %d predicted %d on the GPU, %d on the CPU", k, vote, i, gotPred[i], wantPred[i])
				}
			}
			t.Logf("k=%d %s: top1 %.4f on both", k, vote, got.Top1)
		}
	}
}

// TestKNNFakeCUDA runs TestKNNOnCUDA in a child process whose CUDA driver
// is the fake libcuda (internal/cudatest): kNN through the CUDA backend,
// the driver bindings and topk.cu emulated on the CPU, without a GPU. It
// skips without g++ or under -short.
func TestKNNFakeCUDA(t *testing.T) {
	out := cudatest.PassOnFakeDriver(t, "TestKNNOnCUDA")
	t.Logf("%s", out)
}
