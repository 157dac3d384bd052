package embed

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmMatchesNaive checks both matrix kernels against a plain triple
// loop, on shapes that exercise every panel height (1 to 6 rows), columns
// past the last 32-wide panel, and leading dimensions wider than the
// matrices.
func TestGemmMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct{ m, n, k, lda, ldb, ldc int }{
		{1, 1, 1, 1, 1, 1}, {4, 8, 3, 3, 8, 8}, {7, 5, 9, 12, 6, 11}, {33, 256, 64, 70, 256, 300},
		{2, 64, 16, 16, 64, 64}, {3, 96, 5, 5, 96, 96}, {4, 32, 7, 7, 40, 33}, {5, 70, 9, 9, 70, 70}, {11, 320, 3, 3, 320, 320},
	} {
		a := make([]float32, s.m*s.lda)
		b := make([]float32, s.k*s.ldb)
		for i := range a {
			a[i] = rng.Float32()*2 - 1
		}
		for i := range b {
			b[i] = rng.Float32()*2 - 1
		}
		want := make([]float64, s.m*s.n)
		for i := range s.m {
			for j := range s.n {
				for p := range s.k {
					want[i*s.n+j] += float64(a[i*s.lda+p]) * float64(b[p*s.ldb+j])
				}
			}
		}
		for name, f := range map[string]func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int){
			"gemm": gemm, "gemmGo": gemmGo,
		} {
			c := make([]float32, s.m*s.ldc)
			for i := range c {
				c[i] = 99 // must be overwritten, not accumulated into
			}
			f(s.m, s.n, s.k, a, s.lda, b, s.ldb, c, s.ldc)
			for i := range s.m {
				for j := range s.n {
					if d := math.Abs(float64(c[i*s.ldc+j]) - want[i*s.n+j]); d > 1e-4 {
						t.Fatalf("%s %+v: c[%d,%d] = %v, want %v", name, s, i, j, c[i*s.ldc+j], want[i*s.n+j])
					}
				}
			}
		}
	}
}

// BenchmarkGemm times the kernel on the widest product of the encoder (the
// 5-gram branch over a pass of 512 tokens).
func BenchmarkGemm(b *testing.B) {
	m, n, k := 512, 256, 1280
	a := make([]float32, m*k)
	w := make([]float32, k*n)
	c := make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	for b.Loop() {
		gemm(m, n, k, a, k, w, n, c, n)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
