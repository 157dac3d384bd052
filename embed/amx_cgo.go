//go:build cgo && amd64

package embed

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <immintrin.h>

// Intel AMX: eight 1 KB tile registers and a bf16 dot-product unit that
// multiplies a 16x32 tile by a 32x16 one per instruction. The kernel must
// be asked once per process for the right to use the tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), since its state is
// 8 KB per thread.
#define MS_ARCH_REQ_XCOMP_PERM 0x1023
#define MS_XFEATURE_XTILEDATA 18

static int ms_amx_init(void) {
	unsigned int a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	if (a < 7) return 0;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
	// EDX bit 22: AMX-BF16; bit 24: AMX-TILE. AVX-512F (EBX bit 16) is
	// used to round a to bf16.
	if (!(d & (1u << 22)) || !(d & (1u << 24)) || !(b & (1u << 16))) return 0;
	if (syscall(SYS_arch_prctl, MS_ARCH_REQ_XCOMP_PERM, MS_XFEATURE_XTILEDATA) != 0) return 0;
	return 1;
}

// The tile configuration: palette 1, tiles 0-3 the fp32 accumulators of a
// 32x32 block of c, 4-5 two 16-row tiles of a, 6-7 two 16-column tiles of
// b, every tile 16 rows of 64 bytes.
struct ms_tilecfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

__attribute__((target("amx-tile,amx-bf16,avx512f")))
static void ms_amx_gemm(int m, int n, int k, const float *a, int lda, const uint16_t *bt, float *c, int ldc, uint16_t *abuf) {
	struct ms_tilecfg cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }
	// a rounded to bf16 (nearest, ties to even), its rows padded with
	// zeros to a multiple of 32.
	const int mp = (m + 31) & ~31;
	for (int i = 0; i < m; i++) {
		const uint32_t *src = (const uint32_t *)(a + (long)i * lda);
		uint16_t *dst = abuf + (long)i * k;
		for (int p = 0; p < k; p++) {
			uint32_t u = src[p];
			u += 0x7fff + ((u >> 16) & 1);
			dst[p] = (uint16_t)(u >> 16);
		}
	}
	memset(abuf + (long)m * k, 0, (size_t)(mp - m) * k * 2);
	_tile_loadconfig(&cfg);
	const int kt = k / 32;
	float tail[32 * 32];
	for (int i = 0; i < mp; i += 32) {
		const int full = i + 32 <= m;
		for (int j = 0; j < n; j += 32) {
			_tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
			const uint16_t *b0 = bt + (long)(j / 16) * kt * 512;
			const uint16_t *b1 = b0 + (long)kt * 512;
			const uint16_t *a0 = abuf + (long)i * k;
			const uint16_t *a1 = a0 + 16L * k;
			for (int p = 0; p < kt; p++) {
				_tile_loadd(4, a0 + p * 32, k * 2);
				_tile_loadd(5, a1 + p * 32, k * 2);
				_tile_loadd(6, b0 + p * 512, 64);
				_tile_loadd(7, b1 + p * 512, 64);
				_tile_dpbf16ps(0, 4, 6);
				_tile_dpbf16ps(1, 4, 7);
				_tile_dpbf16ps(2, 5, 6);
				_tile_dpbf16ps(3, 5, 7);
			}
			if (full) {
				float *cij = c + (long)i * ldc + j;
				_tile_stored(0, cij, ldc * 4);
				_tile_stored(1, cij + 16, ldc * 4);
				_tile_stored(2, cij + 16L * ldc, ldc * 4);
				_tile_stored(3, cij + 16L * ldc + 16, ldc * 4);
			} else {
				// The last block's rows past m land in a buffer.
				_tile_stored(0, tail, 128);
				_tile_stored(1, tail + 16, 128);
				_tile_stored(2, tail + 16 * 32, 128);
				_tile_stored(3, tail + 16 * 32 + 16, 128);
				for (int r = 0; i + r < m; r++)
					memcpy(c + (long)(i + r) * ldc + j, tail + r * 32, 128);
			}
		}
	}
	_tile_release();
}
*/
import "C"

import (
	"sync"
	"unsafe"
)

// amxReady reports whether this CPU has AMX-BF16 and the kernel let the
// process use it; asked once.
var amxReady = sync.OnceValue(func() bool { return C.ms_amx_init() == 1 })

// amxGemm sets c[m×n] = a[m×k]·B for B packed by packBF16 (k and n
// multiples of 32). abuf holds a in bf16: at least amxBufLen(m, k) values.
func amxGemm(m, n, k int, a []float32, lda int, bt []uint16, c []float32, ldc int, abuf []uint16) {
	if m == 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = bt[n*k-1]
	_ = c[(m-1)*ldc+n-1]
	_ = abuf[amxBufLen(m, k)-1]
	C.ms_amx_gemm(C.int(m), C.int(n), C.int(k),
		(*C.float)(unsafe.Pointer(&a[0])), C.int(lda),
		(*C.uint16_t)(unsafe.Pointer(&bt[0])),
		(*C.float)(unsafe.Pointer(&c[0])), C.int(ldc),
		(*C.uint16_t)(unsafe.Pointer(&abuf[0])))
}
