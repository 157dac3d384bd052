//go:build cgo

package embed

/*
#cgo CFLAGS: -O3

// Register-blocked panels in GCC's portable vector types: the compiler maps
// them to the target's vector registers. target_clones builds ms_gemm for
// AVX-512, AVX2+FMA and plain x86-64 and picks one when the library loads,
// so the binary runs on any x86-64 CPU (a build for the build machine's CPU
// could die with SIGILL elsewhere).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MS_CLONES
#endif

typedef float ms_v16 __attribute__((vector_size(64)));

// ms_panel computes rows i..i+R-1, columns j..j+31 of c: R x 2 vector
// accumulators stay in registers for the whole k loop, and each row of b's
// 32-column panel is loaded once per R rows of a.
#define MS_PANEL(R)                                                                  \
	static inline __attribute__((always_inline)) void ms_panel##R(int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc) { \
		ms_v16 acc[R][2];                                                            \
		for (int r = 0; r < R; r++) { acc[r][0] = (ms_v16){0}; acc[r][1] = (ms_v16){0}; } \
		for (int p = 0; p < k; p++) {                                                \
			ms_v16 b0, b1;                                                           \
			__builtin_memcpy(&b0, b + (long)p * ldb, 64);                            \
			__builtin_memcpy(&b1, b + (long)p * ldb + 16, 64);                       \
			for (int r = 0; r < R; r++) {                                            \
				const float av = a[(long)r * lda + p];                               \
				acc[r][0] += av * b0;                                                \
				acc[r][1] += av * b1;                                                \
			}                                                                        \
		}                                                                            \
		for (int r = 0; r < R; r++) {                                                \
			__builtin_memcpy(c + (long)r * ldc, &acc[r][0], 64);                     \
			__builtin_memcpy(c + (long)r * ldc + 16, &acc[r][1], 64);                \
		}                                                                            \
	}
MS_PANEL(6)
MS_PANEL(5)
MS_PANEL(4)
MS_PANEL(3)
MS_PANEL(2)
MS_PANEL(1)

MS_CLONES
static void ms_gemm(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc) {
	const int n32 = n - n % 32;
	int i = 0;
	for (; i + 6 <= m; i += 6)
		for (int j = 0; j < n32; j += 32)
			ms_panel6(k, a + (long)i * lda, lda, b + j, ldb, c + (long)i * ldc + j, ldc);
	// The last m % 6 rows in one panel of their height, so b is read once
	// more, not once per row (a query is a handful of rows).
	if (i < m)
		for (int j = 0; j < n32; j += 32) {
			const float *ai = a + (long)i * lda, *bj = b + j;
			float *cij = c + (long)i * ldc + j;
			switch (m - i) {
			case 5: ms_panel5(k, ai, lda, bj, ldb, cij, ldc); break;
			case 4: ms_panel4(k, ai, lda, bj, ldb, cij, ldc); break;
			case 3: ms_panel3(k, ai, lda, bj, ldb, cij, ldc); break;
			case 2: ms_panel2(k, ai, lda, bj, ldb, cij, ldc); break;
			default: ms_panel1(k, ai, lda, bj, ldb, cij, ldc); break;
			}
		}
	if (n32 == n)
		return;
	// Columns past the last full panel, one at a time.
	for (int r = 0; r < m; r++)
		for (int j = n32; j < n; j++) {
			float s = 0;
			for (int p = 0; p < k; p++) s += a[(long)r * lda + p] * b[(long)p * ldb + j];
			c[(long)r * ldc + j] = s;
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
