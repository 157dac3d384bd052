//go:build !cgo

package embed

// gemm sets c[m×n] = a[m×k]·b[k×n]; without cgo it is the scalar Go loop,
// several times slower than the vectorised C one.
func gemm(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	gemmGo(m, n, k, a, lda, b, ldb, c, ldc)
}
