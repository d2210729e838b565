package tensor

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// cpuPrecision holds whether the CPU backend rounds the factors of its
// matrix products (Gemm, the Linear passes) and of its convolutions to
// bfloat16 (gemm.SgemmBF16; the convolutions then run conv.ChooseBF16's
// algorithms).
type cpuPrecision struct{ products, convs atomic.Bool }

// ParseCPUPrecision parses a CPU precision, "fp32" or "bf16" (any case);
// it reports false for anything else ("tf32" included: no CPU has TF32
// arithmetic).
func ParseCPUPrecision(s string) (bf16, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp32":
		return false, true
	case "bf16":
		return true, true
	}
	return false, false
}

// SetCPUPrecision sets the precision of the registered CPU backend's
// matrix products and of its convolutions from products and convolutions
// ("fp32" or "bf16", as --precision and --conv-precision give them; an
// empty string leaves that one as it is). In bf16 every factor is rounded
// to bfloat16 and the sums stay float32, as PyTorch's CPU autocast
// computes them: on AVX512_BF16's instructions where the CPU has them
// (gemm.NativeBF16), else as float32 products of the rounded factors,
// slower than fp32. Convolutions in bf16 run im2col + GEMM whatever
// algorithm was asked for. It is not safe to call while other goroutines
// compute on the backend.
func SetCPUPrecision(products, convolutions string) error {
	p := cpuBackend.(cpu).prec
	for _, f := range []struct {
		name, value string
		dst         *atomic.Bool
	}{{"products", products, &p.products}, {"convolutions", convolutions, &p.convs}} {
		if f.value == "" {
			continue
		}
		bf16, ok := ParseCPUPrecision(f.value)
		if !ok {
			return fmt.Errorf("tensor: CPU precision of the %s %q: expected fp32 or bf16 (the CPU has no TF32 arithmetic)", f.name, f.value)
		}
		f.dst.Store(bf16)
	}
	return nil
}

// CPUPrecisions returns the precisions of the registered CPU backend's
// matrix products and convolutions: "fp32" or "bf16" each.
func CPUPrecisions() (products, convolutions string) { return cpuBackend.(cpu).Precisions() }

// Precisions returns the precisions of the backend's matrix products and
// convolutions ("fp32" or "bf16"), as the CUDA backend's Precisions does.
func (c cpu) Precisions() (products, convolutions string) {
	name := func(bf16 bool) string {
		if bf16 {
			return "bf16"
		}
		return "fp32"
	}
	return name(c.productsBF16()), name(c.convsBF16())
}

// productsBF16 reports whether the backend's products are in bfloat16.
func (c cpu) productsBF16() bool { return c.prec != nil && c.prec.products.Load() }

// convsBF16 reports whether the backend's convolutions are in bfloat16.
func (c cpu) convsBF16() bool { return c.prec != nil && c.prec.convs.Load() }

// product returns the GEMM of the backend's products.
func (c cpu) product() gemm.Func {
	if c.productsBF16() {
		return gemm.SgemmBF16
	}
	return gemm.Sgemm
}

// convAlgos returns the algorithms of s's passes for the request req:
// conv.Choose's, or conv.ChooseBF16's when the backend's convolutions are
// in bfloat16.
func (c cpu) convAlgos(s ConvShape, req ConvAlgo) ConvAlgos {
	if c.convsBF16() {
		return conv.ChooseBF16(s, req)
	}
	return conv.Choose(s, req)
}
