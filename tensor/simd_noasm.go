//go:build !amd64 || noasm

package tensor

// useAVX2 is false without assembly: the CPU backend runs its Go loops.
const useAVX2 = false

func addVV(d, a, b []float32)                     { panic("tensor: no SIMD kernels in this build") }
func subVV(d, a, b []float32)                     { panic("tensor: no SIMD kernels in this build") }
func mulVV(d, a, b []float32)                     { panic("tensor: no SIMD kernels in this build") }
func divVV(d, a, b []float32)                     { panic("tensor: no SIMD kernels in this build") }
func addVS(d, a []float32, s float32)             { panic("tensor: no SIMD kernels in this build") }
func subVS(d, a []float32, s float32)             { panic("tensor: no SIMD kernels in this build") }
func mulVS(d, a []float32, s float32)             { panic("tensor: no SIMD kernels in this build") }
func divVS(d, a []float32, s float32)             { panic("tensor: no SIMD kernels in this build") }
func addSV(d []float32, s float32, b []float32)   { panic("tensor: no SIMD kernels in this build") }
func subSV(d []float32, s float32, b []float32)   { panic("tensor: no SIMD kernels in this build") }
func mulSV(d []float32, s float32, b []float32)   { panic("tensor: no SIMD kernels in this build") }
func divSV(d []float32, s float32, b []float32)   { panic("tensor: no SIMD kernels in this build") }
func axpyAVX2(y, x []float32, alpha float32)      { panic("tensor: no SIMD kernels in this build") }
func reluAVX2(d, s []float32)                     { panic("tensor: no SIMD kernels in this build") }
func sum64AVX2(x []float32) float64               { panic("tensor: no SIMD kernels in this build") }
func accumulate64AVX2(acc []float64, x []float32) { panic("tensor: no SIMD kernels in this build") }
