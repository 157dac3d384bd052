//go:build !cgo

package embed

// biasGELU sets each row of x (rows of len(b)) to GELU(x + b).
func biasGELU(x, b []float32) { biasGELUGo(x, b) }

// residualNorm sets each row of h (rows of len(b)) to
// LayerNorm(h + b + res).
func residualNorm(h, res, b, g, beta []float32) { residualNormGo(h, res, b, g, beta) }

// attendHeads writes the attention of L tokens into ctx; see attendGo.
func attendHeads(L, heads, hd int, qkv []float32, ldq int, ctx []float32, ldc int, scale float32, kt, sc []float32) {
	attendGo(L, heads, hd, qkv, ldq, ctx, ldc, scale, kt, sc)
}
