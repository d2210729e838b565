package cuda

import (
	"fmt"
	"os"
	"strings"
)

// Precision is the arithmetic of the backend's matrix products (Gemm).
// Every precision reads and writes float32 and accumulates in float32;
// they differ in how the factors are rounded before they are multiplied.
type Precision int

const (
	// FP32 multiplies the float32 factors as they are, with float FMAs
	// (sgemm_f32): every GPU.
	FP32 Precision = iota
	// TF32 rounds the factors to TF32 (8-bit exponent, 10-bit mantissa:
	// cvt.rna.tf32.f32, to nearest, ties away from zero) and multiplies on
	// the tensor cores (gemm_tf32): compute capability 8.0 and later.
	TF32
	// BF16 rounds the factors to bfloat16 (8-bit exponent, 7-bit mantissa,
	// to nearest even) and multiplies on the tensor cores (gemm_bf16):
	// compute capability 8.0 and later.
	BF16
)

// EnvPrecision names the environment variable that sets the precision of
// the backends NewBackend returns (and so of the one Available registers):
// fp32, tf32 or bf16.
const EnvPrecision = "DUEL_CUDA_PRECISION"

// tensorCoreCapability is the lowest compute capability whose PTX has the
// TF32 and BF16 mma.sync instructions (sm_80).
const tensorCoreCapability = 80

// String returns "fp32", "tf32" or "bf16".
func (p Precision) String() string {
	switch p {
	case FP32:
		return "fp32"
	case TF32:
		return "tf32"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision parses "fp32", "tf32" or "bf16" (any case).
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp32":
		return FP32, nil
	case "tf32":
		return TF32, nil
	case "bf16":
		return BF16, nil
	}
	return FP32, fmt.Errorf("cuda: precision %q: expected fp32, tf32 or bf16", s)
}

// DefaultPrecision returns the precision NewBackend gives its backend (and
// so the one Available registers): $DUEL_CUDA_PRECISION when it is set,
// else FP32, PyTorch's default for matrix products since 1.12
// (torch.backends.cuda.matmul.allow_tf32 = False). TF32 and BF16 run as
// FP32 below compute capability 8.0 (see Backend.SetPrecision). An
// invalid value of the variable is an error.
func DefaultPrecision() (Precision, error) {
	if s, ok := os.LookupEnv(EnvPrecision); ok && s != "" {
		p, err := ParsePrecision(s)
		if err != nil {
			return FP32, fmt.Errorf("cuda: %s=%q: expected fp32, tf32 or bf16 (or unset it)", EnvPrecision, s)
		}
		return p, nil
	}
	return FP32, nil
}

// SetPrecision sets the precision of the backend's matrix products and
// returns the one they will run in: p, or FP32 when p needs tensor cores
// (TF32, BF16) and the device's compute capability is below 8.0 (there
// the products fall back to sgemm_f32). Products already queued keep
// theirs. It is not safe to call while other goroutines use the backend.
func (be *Backend) SetPrecision(p Precision) Precision {
	if p != FP32 && p != TF32 && p != BF16 {
		panic(fmt.Sprintf("cuda: Backend.SetPrecision(%v): expected FP32, TF32 or BF16", p))
	}
	if p != FP32 && be.cc != 0 && be.cc < tensorCoreCapability {
		p = FP32
	}
	be.prec = p
	return p
}

// Precision returns the precision the backend's matrix products run in.
func (be *Backend) Precision() Precision { return be.prec }

// UsePrecision sets the precision of the backend registered as "cuda"
// (calling Available first) from s ("fp32", "tf32" or "bf16", as a
// --precision flag gives it) and returns the precision its products will
// run in (FP32 for TF32 and BF16 below compute capability 8.0).
func UsePrecision(s string) (Precision, error) {
	p, err := ParsePrecision(s)
	if err != nil {
		return FP32, err
	}
	be, err := Registered()
	if err != nil {
		return FP32, err
	}
	return be.SetPrecision(p), nil
}
