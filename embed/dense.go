package embed

import "math"

// dense is one weight matrix of a layer, k inputs by n outputs, held as
// fp32 panels for gemm and, where the CPU has AMX, also as bf16 tiles: on
// AMX a product rounds its inputs to bf16 (8 bits of mantissa) and sums in
// fp32, which moves a sentence vector by a cosine of about 1e-5.
type dense struct {
	k, n   int
	panels []float32 // k x n as n/panelWidth panels of k x panelWidth
	tiles  []uint16  // nil without AMX; see packBF16
}

// newDense lays out w (k x n, row-major). It uses AMX when useAMX is set,
// the CPU has it and the shape fits its tiles (k and n multiples of 32).
func newDense(w []float32, k, n int, useAMX bool) dense {
	d := dense{k: k, n: n}
	if useAMX && amxReady() && k%32 == 0 && n%32 == 0 {
		d.tiles = packBF16(w, k, n)
		return d
	}
	d.panels = panels(w, k, n)
	return d
}

// mul sets c[m×n] = a[m×k]·d. abuf is the bf16 copy of a that AMX needs
// (amxBufLen(m, k) values); it is unused without AMX.
func (d *dense) mul(m int, a []float32, lda int, c []float32, ldc int, abuf []uint16) {
	if d.tiles != nil {
		amxGemm(m, d.n, d.k, a, lda, d.tiles, c, ldc, abuf)
		return
	}
	panelGemm(m, d.n, d.k, a, lda, d.panels, c, ldc)
}

// amxBufLen is the size of the bf16 buffer amxGemm needs for an m x k a:
// its rows padded to a multiple of 32.
func amxBufLen(m, k int) int { return (m + 31) &^ 31 * k }

// packBF16 lays out w (k x n, row-major, both multiples of 32) as AMX's B
// operand: for each 16 columns, k/32 tiles of 16 rows; row r of a tile
// holds, for each of the 16 columns, the pair of inputs 2r and 2r+1 of its
// 32, which is the order TDPBF16PS multiplies them in.
func packBF16(w []float32, k, n int) []uint16 {
	t := make([]uint16, k*n)
	kt := k / 32
	for jb := 0; jb < n/16; jb++ {
		for p := range kt {
			tile := t[(jb*kt+p)*512 : (jb*kt+p+1)*512]
			for r := range 16 {
				for c := range 16 {
					for e := range 2 {
						tile[r*32+c*2+e] = bf16(w[(p*32+2*r+e)*n+jb*16+c])
					}
				}
			}
		}
	}
	return t
}

// bf16 rounds f to bfloat16, to nearest with ties to even.
func bf16(f float32) uint16 {
	u := math.Float32bits(f)
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
