package embed

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDenseMatchesNaive checks both layouts of a weight matrix against a
// plain triple loop, with row counts around AMX's 16- and 32-row blocks and
// a leading dimension wider than the matrix. The AMX product rounds its
// inputs to bf16, so it is held to a relative error of 1e-2 of the row's
// scale; fp32 panels to 1e-4.
func TestDenseMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	const k, n = 96, 64
	w := make([]float32, k*n)
	for i := range w {
		w[i] = rng.Float32()*2 - 1
	}
	modes := map[string]bool{"fp32": false}
	if amxReady() {
		modes["amx"] = true
	} else {
		t.Log("no AMX on this CPU: only the fp32 layout is checked")
	}
	for name, useAMX := range modes {
		d := newDense(w, k, n, useAMX)
		if (d.tiles != nil) != useAMX {
			t.Fatalf("%s: tiles %v", name, d.tiles != nil)
		}
		tol := 1e-4
		if useAMX {
			tol = 1e-2
		}
		for _, m := range []int{1, 15, 16, 17, 31, 32, 33, 70} {
			const lda, ldc = k + 5, n + 3
			a := make([]float32, m*lda)
			for i := range a {
				a[i] = rng.Float32()*2 - 1
			}
			c := make([]float32, m*ldc)
			for i := range c {
				c[i] = 7 // columns past n must stay untouched
			}
			d.mul(m, a, lda, c, ldc, make([]uint16, amxBufLen(m, k)))
			for i := range m {
				for j := range ldc {
					got := float64(c[i*ldc+j])
					if j >= n {
						if got != 7 {
							t.Fatalf("%s m=%d: c[%d][%d] past n written: %v", name, m, i, j, got)
						}
						continue
					}
					var want, scale float64
					for p := range k {
						want += float64(a[i*lda+p]) * float64(w[p*n+j])
						scale += math.Abs(float64(a[i*lda+p]) * float64(w[p*n+j]))
					}
					if math.Abs(got-want) > tol*scale {
						t.Fatalf("%s m=%d: c[%d][%d] = %v, want %v (scale %v)", name, m, i, j, got, want, scale)
					}
				}
			}
		}
	}
}

// TestBF16RoundsToNearestEven checks the rounding of the weights to bf16.
func TestBF16RoundsToNearestEven(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // halfway, even stays
		{0x3f818000, 0x3f82}, // halfway, odd rounds up
		{0x3f808001, 0x3f81}, // above halfway
		{0xbf807fff, 0xbf80}, // below halfway, negative
	} {
		if got := bf16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("bf16(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}
