package cuda

import (
	"fmt"
)

// EnvConvPrecision names the environment variable that sets the precision
// of the convolutions of the backends NewBackend returns (and so of the
// one Available registers): fp32, tf32 or bf16.
const EnvConvPrecision = "DUEL_CUDA_CONV_PRECISION"

// DefaultConvPrecision returns the precision NewBackend gives its
// backend's convolutions: $DUEL_CUDA_CONV_PRECISION when it is set; else
// $DUEL_CUDA_PRECISION when that is set (the convolutions follow the
// products' precision when only it is asked for); else TF32, PyTorch's
// default for convolutions (torch.backends.cudnn.allow_tf32 = True), where
// its products default to FP32 (DefaultPrecision). TF32 and BF16 run as
// FP32 below compute capability 8.0 (see Backend.SetConvPrecision). An
// invalid value of either variable is an error.
func DefaultConvPrecision() (Precision, error) {
	def, err := envPrecision(EnvPrecision, TF32)
	if err != nil {
		return FP32, err
	}
	return envPrecision(EnvConvPrecision, def)
}

// SetConvPrecision sets the precision of the backend's convolutions alone
// (SetPrecision sets the products' and the convolutions') and returns the
// one they will run in: p, or FP32 when p needs tensor cores (TF32, BF16)
// and the device's compute capability is below 8.0. In FP32 the three
// passes run conv.cu's kernels, in TF32 and BF16 conv_tc.cu's. It is not
// safe to call while other goroutines use the backend.
func (be *Backend) SetConvPrecision(p Precision) Precision {
	if p != FP32 && p != TF32 && p != BF16 {
		panic(fmt.Sprintf("cuda: Backend.SetConvPrecision(%v): expected FP32, TF32 or BF16", p))
	}
	be.convPrec = be.supported(p)
	return be.convPrec
}

// ConvPrecision returns the precision the backend's convolutions run in.
func (be *Backend) ConvPrecision() Precision { return be.convPrec }

// UseConvPrecision sets the precision of the convolutions of the backend
// registered as "cuda" (calling Available first) from s ("fp32", "tf32"
// or "bf16", as a --conv-precision flag gives it) and returns the one they
// will run in (FP32 for TF32 and BF16 below compute capability 8.0).
func UseConvPrecision(s string) (Precision, error) {
	return useRegistered(s, (*Backend).SetConvPrecision)
}
