//go:build !cgo || !amd64

package embed

// amxReady reports false: AMX needs cgo on amd64.
func amxReady() bool { return false }

// amxGemm is never called without AMX.
func amxGemm(m, n, k int, a []float32, lda int, bt []uint16, c []float32, ldc int, abuf []uint16) {
	panic("embed: amxGemm without AMX")
}
