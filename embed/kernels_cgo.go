//go:build cgo

package embed

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm

// The element-wise and attention steps of the encoder in C, where the
// compiler vectorises them (Go's compiler does not): after the AMX
// products they were most of a pass. MS_CLONES is gemm_cgo.go's, repeated
// since each cgo file is its own C unit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MS_CLONES
#endif

// ms_erf is erf32 of minilm.go: Eigen's rational approximation.
static inline float ms_erf(float x) {
	x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
	const float x2 = x * x;
	float p = -2.72614225801306e-10f;
	p = p * x2 + 2.77068142495902e-08f;
	p = p * x2 - 2.10102402082508e-06f;
	p = p * x2 - 5.69250639462346e-05f;
	p = p * x2 - 7.34990630326855e-04f;
	p = p * x2 - 2.95459980854025e-03f;
	p = p * x2 - 1.60960333262415e-02f;
	float q = -1.45660718464996e-05f;
	q = q * x2 - 2.13374055278905e-04f;
	q = q * x2 - 1.68282697438203e-03f;
	q = q * x2 - 7.37332916720468e-03f;
	q = q * x2 - 1.42647390514189e-02f;
	return x * p / q;
}

// ms_bias_gelu sets each row of x (rows of n) to GELU(x + b).
MS_CLONES
static void ms_bias_gelu(int rows, int n, float *x, const float *b) {
	for (int r = 0; r < rows; r++) {
		float *row = x + (long)r * n;
		for (int j = 0; j < n; j++) {
			const float v = row[j] + b[j];
			row[j] = 0.5f * v * (1.0f + ms_erf(v * 0.70710678118654752f));
		}
	}
}

// ms_exp is e^x for x <= 0 (a softmax's shifted scores), Cephes' expf:
// x = n ln2 + r, e^r by a degree-6 polynomial, 2^n put in the exponent.
static inline float ms_exp(float x) {
	x = x < -87.0f ? -87.0f : x;
	const int n = (int)(x * 1.44269504088896341f - 0.5f);
	const float fn = (float)n;
	float r = x - fn * 0.693359375f;
	r = r - fn * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	union { int i; float f; } s;
	s.i = (n + 127) << 23;
	return p * s.f;
}

// ms_attend writes the multi-head attention of L tokens (one text) into
// ctx (rows of ldc): queries, keys and values are the columns 0, dim and
// 2 dim of qkv (rows of ldq), dim = heads * hd. kt (hd x L) and sc (L x L)
// are scratch.
MS_CLONES
static void ms_attend(int L, int heads, int hd, const float *qkv, int ldq, float *ctx, int ldc, float scale, float *__restrict kt, float *__restrict sc) {
	const int dim = heads * hd;
	for (int h = 0; h < heads; h++) {
		const float *q = qkv + h * hd, *k = qkv + dim + h * hd, *v = qkv + 2 * dim + h * hd;
		for (int u = 0; u < L; u++)
			for (int d = 0; d < hd; d++) kt[(long)d * L + u] = k[(long)u * ldq + d];
		for (int t = 0; t < L; t++) {
			float *__restrict s = sc + (long)t * L;
			const float *qt = q + (long)t * ldq;
			for (int u = 0; u < L; u++) s[u] = 0;
			for (int d = 0; d < hd; d++) {
				const float qd = qt[d];
				const float *__restrict kd = kt + (long)d * L;
				for (int u = 0; u < L; u++) s[u] += qd * kd[u];
			}
			float mx = s[0];
			for (int u = 1; u < L; u++) mx = s[u] > mx ? s[u] : mx;
			float sum = 0;
			for (int u = 0; u < L; u++) {
				const float e = ms_exp((s[u] - mx) * scale);
				s[u] = e;
				sum += e;
			}
			const float inv = 1.0f / sum;
			float acc[64] = {0};
			for (int u = 0; u < L; u++) {
				const float p = s[u] * inv;
				const float *vu = v + (long)u * ldq;
				for (int d = 0; d < hd; d++) acc[d] += p * vu[d];
			}
			float *o = ctx + (long)t * ldc + h * hd;
			for (int d = 0; d < hd; d++) o[d] = acc[d];
		}
	}
}

// ms_residual_norm sets each row of h (rows of n) to
// LayerNorm(h + b + res) with gain g and bias beta.
MS_CLONES
static void ms_residual_norm(int rows, int n, float *h, const float *res, const float *b, const float *g, const float *beta, float eps) {
	for (int r = 0; r < rows; r++) {
		float *row = h + (long)r * n;
		const float *rs = res + (long)r * n;
		double mean = 0;
		for (int j = 0; j < n; j++) {
			row[j] += b[j] + rs[j];
			mean += row[j];
		}
		mean /= n;
		double vr = 0;
		for (int j = 0; j < n; j++) {
			const double d = row[j] - mean;
			vr += d * d;
		}
		vr /= n;
		const float inv = (float)(1.0 / __builtin_sqrt(vr + eps));
		const float mf = (float)mean;
		for (int j = 0; j < n; j++) row[j] = (row[j] - mf) * inv * g[j] + beta[j];
	}
}
*/
import "C"

import "unsafe"

// biasGELU sets each row of x (rows of len(b)) to GELU(x + b).
func biasGELU(x, b []float32) {
	n := len(b)
	if len(x) < n || n == 0 {
		return
	}
	C.ms_bias_gelu(C.int(len(x)/n), C.int(n), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&b[0])))
}

// residualNorm sets each row of h (rows of len(b)) to
// LayerNorm(h + b + res).
func residualNorm(h, res, b, g, beta []float32) {
	n := len(b)
	if len(h) < n || n == 0 {
		return
	}
	_ = res[len(h)/n*n-1]
	_, _ = g[n-1], beta[n-1]
	C.ms_residual_norm(C.int(len(h)/n), C.int(n), (*C.float)(unsafe.Pointer(&h[0])),
		(*C.float)(unsafe.Pointer(&res[0])), (*C.float)(unsafe.Pointer(&b[0])),
		(*C.float)(unsafe.Pointer(&g[0])), (*C.float)(unsafe.Pointer(&beta[0])), C.float(minilmEps))
}

// attendHeads writes the attention of the L tokens whose query, key and
// value rows start qkv (rows of ldq) into ctx (rows of ldc); kt and sc are
// scratch of hd*L and L*L.
func attendHeads(L, heads, hd int, qkv []float32, ldq int, ctx []float32, ldc int, scale float32, kt, sc []float32) {
	if L == 0 {
		return
	}
	if hd > 64 {
		panic("embed: attendHeads: head size over 64")
	}
	_ = qkv[(L-1)*ldq+3*heads*hd-1]
	_ = ctx[(L-1)*ldc+heads*hd-1]
	_, _ = kt[hd*L-1], sc[L*L-1]
	C.ms_attend(C.int(L), C.int(heads), C.int(hd), (*C.float)(unsafe.Pointer(&qkv[0])), C.int(ldq),
		(*C.float)(unsafe.Pointer(&ctx[0])), C.int(ldc), C.float(scale),
		(*C.float)(unsafe.Pointer(&kt[0])), (*C.float)(unsafe.Pointer(&sc[0])))
}
