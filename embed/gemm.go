package embed

// gemmGo sets c[m×n] = a[m×k]·b[k×n] for row-major matrices with leading
// dimensions lda, ldb and ldc; the fallback without cgo. Four rows of a share each pass over a row of
// b, which is what bounds a scalar loop: b's rows stream from cache once per
// four output rows instead of once per row.
func gemmGo(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	i := 0
	for ; i+4 <= m; i += 4 {
		c0 := c[i*ldc : i*ldc+n : i*ldc+n]
		c1 := c[(i+1)*ldc : (i+1)*ldc+n : (i+1)*ldc+n]
		c2 := c[(i+2)*ldc : (i+2)*ldc+n : (i+2)*ldc+n]
		c3 := c[(i+3)*ldc : (i+3)*ldc+n : (i+3)*ldc+n]
		clear(c0)
		clear(c1)
		clear(c2)
		clear(c3)
		for p := 0; p < k; p++ {
			a0, a1, a2, a3 := a[i*lda+p], a[(i+1)*lda+p], a[(i+2)*lda+p], a[(i+3)*lda+p]
			br := b[p*ldb : p*ldb+n : p*ldb+n]
			for j, bv := range br {
				c0[j] += a0 * bv
				c1[j] += a1 * bv
				c2[j] += a2 * bv
				c3[j] += a3 * bv
			}
		}
	}
	for ; i < m; i++ {
		ci := c[i*ldc : i*ldc+n : i*ldc+n]
		clear(ci)
		for p := 0; p < k; p++ {
			av := a[i*lda+p]
			if av == 0 {
				continue
			}
			br := b[p*ldb : p*ldb+n : p*ldb+n]
			for j, bv := range br {
				ci[j] += av * bv
			}
		}
	}
}
