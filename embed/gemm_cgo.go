//go:build cgo

package embed

/*
#cgo CFLAGS: -O3

// The same loop as gemmGo, compiled by the C compiler, which vectorises the
// inner loop. target_clones builds it for AVX-512, AVX2+FMA and plain x86-64
// and picks one when the library loads, so the binary runs on any x86-64 CPU
// (a build for the build machine's CPU could die with SIGILL elsewhere).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MS_CLONES
#endif

MS_CLONES
static void ms_gemm(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc) {
	int i = 0;
	for (; i + 4 <= m; i += 4) {
		float *restrict c0 = c + (long)i * ldc, *restrict c1 = c0 + ldc, *restrict c2 = c1 + ldc, *restrict c3 = c2 + ldc;
		for (int j = 0; j < n; j++) { c0[j] = 0; c1[j] = 0; c2[j] = 0; c3[j] = 0; }
		for (int p = 0; p < k; p++) {
			const float a0 = a[(long)i * lda + p], a1 = a[(long)(i + 1) * lda + p];
			const float a2 = a[(long)(i + 2) * lda + p], a3 = a[(long)(i + 3) * lda + p];
			const float *restrict br = b + (long)p * ldb;
			for (int j = 0; j < n; j++) {
				const float bv = br[j];
				c0[j] += a0 * bv; c1[j] += a1 * bv; c2[j] += a2 * bv; c3[j] += a3 * bv;
			}
		}
	}
	for (; i < m; i++) {
		float *restrict ci = c + (long)i * ldc;
		for (int j = 0; j < n; j++) ci[j] = 0;
		for (int p = 0; p < k; p++) {
			const float av = a[(long)i * lda + p];
			const float *restrict br = b + (long)p * ldb;
			for (int j = 0; j < n; j++) ci[j] += av * br[j];
		}
	}
}
*/
import "C"

import "unsafe"

// gemm sets c[m×n] = a[m×k]·b[k×n] (row-major, leading dimensions lda, ldb,
// ldc) with the vectorised C loop. The slices must hold the matrices; the
// caller sizes them.
func gemm(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	// Bounds the C code relies on, checked once here.
	_ = a[(m-1)*lda+k-1]
	_ = b[(k-1)*ldb+n-1]
	_ = c[(m-1)*ldc+n-1]
	C.ms_gemm(C.int(m), C.int(n), C.int(k),
		(*C.float)(unsafe.Pointer(&a[0])), C.int(lda),
		(*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		(*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}
