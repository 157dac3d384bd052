package embed

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelsMatchGo checks the encoder's element-wise and attention
// kernels against their Go references (the same code without cgo), on
// odd sizes and on a text longer than one vector of scores.
func TestKernelsMatchGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(n int, scale float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * scale
		}
		return x
	}
	near := func(name string, got, want []float32, tol float64) {
		t.Helper()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
			}
		}
	}

	const rows, n = 7, 45
	x, b := fill(rows*n, 6), fill(n, 1)
	want := append([]float32(nil), x...)
	biasGELUGo(want, b)
	biasGELU(x, b)
	near("biasGELU", x, want, 2e-6)

	h, res, g, beta := fill(rows*n, 3), fill(rows*n, 3), fill(n, 1), fill(n, 1)
	wantH := append([]float32(nil), h...)
	residualNormGo(wantH, res, b, g, beta)
	residualNorm(h, res, b, g, beta)
	near("residualNorm", h, wantH, 1e-5)

	for _, L := range []int{1, 3, 17, 40} {
		const heads, hd = 3, 32
		ldq, ldc := 3*heads*hd+5, heads*hd+2
		qkv := fill(L*ldq, 2)
		got, ref := make([]float32, L*ldc), make([]float32, L*ldc)
		attendHeads(L, heads, hd, qkv, ldq, got, ldc, 0.2, make([]float32, hd*L), make([]float32, L*L))
		attendGo(L, heads, hd, qkv, ldq, ref, ldc, 0.2, make([]float32, hd*L), make([]float32, L*L))
		near("attend", got, ref, 1e-5)
	}
}
