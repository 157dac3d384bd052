package defense

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/memstream/memstream/internal/bench/samples"
)

// checkSpans asserts the Scan contract every consumer relies on: findings
// sorted, in range, non-overlapping and never cutting a UTF-8 rune.
func checkSpans(t *testing.T, text string, fs []Finding) {
	t.Helper()
	prevEnd := 0
	for i, f := range fs {
		if f.Start < 0 || f.End > len(text) || f.Start >= f.End {
			t.Fatalf("finding %d %+v out of range (len %d)", i, f, len(text))
		}
		if f.Start < prevEnd {
			t.Fatalf("finding %d %+v overlaps or is unsorted (previous end %d)", i, f, prevEnd)
		}
		if splitsRune(text, f.Start) || splitsRune(text, f.End) {
			t.Fatalf("finding %d %+v not on a UTF-8 boundary in %q", i, f, text)
		}
		if f.Label == "" || f.Category == "" {
			t.Fatalf("finding %d has no label/category", i)
		}
		prevEnd = f.End
	}
}

// splitsRune reports whether offset i falls inside a valid multi-byte
// rune. Stray continuation bytes in invalid UTF-8 belong to no rune, so
// cutting next to them is fine.
func splitsRune(text string, i int) bool {
	if i <= 0 || i >= len(text) || utf8.RuneStart(text[i]) {
		return false
	}
	for s := i - 1; s >= 0 && s >= i-3; s-- {
		if utf8.RuneStart(text[s]) {
			r, size := utf8.DecodeRuneInString(text[s:])
			return !(r == utf8.RuneError && size == 1) && s+size > i
		}
	}
	return false
}

func FuzzScan(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, p := range Patterns() {
		smp, _ := samples.For(r, p.Label)
		f.Add(smp.Text())
		f.Add("我的key是" + smp.Text() + "谢谢")
	}
	for _, s := range []string{"", "sk-", "-----BEGIN PRIVATE KEY-----", "password=", "4111 1111 1111 1111 1111 1111",
		"DE89 3704", "eyJ.eyJ.", "\xff\xfesk-ant-\x80", "postgres://:@", "GB82WEST1234569876543\xe4"} {
		f.Add(s)
	}
	s, err := NewScanner(ScannerConfig{EnableEmail: true, EnablePhone: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fs := s.Scan(text)
		checkSpans(t, text, fs)
		res, err := s.Apply(text, DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) == 0 && res.Text != text {
			t.Fatalf("text changed without findings")
		}
	})
}

// TestScanDenseSpans runs the span contract over a long generated text with
// many secrets, so overlap resolution is exercised beyond the fuzz seeds.
func TestScanDenseSpans(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{EnableEmail: true, EnablePhone: true})
	text, planted := corpus(rand.New(rand.NewPCG(3, 4)), 1<<18, true)
	fs := s.Scan(text)
	checkSpans(t, text, fs)
	got := map[[2]int]string{}
	for _, f := range fs {
		got[[2]int{f.Start, f.End}] = f.Label
	}
	var missed []string
	for _, p := range planted {
		if got[[2]int{p.Start, p.End}] != p.Label {
			missed = append(missed, p.Label)
		}
	}
	if len(missed) > 0 {
		t.Fatalf("%d of %d planted secrets missed: %v", len(missed), len(planted), missed[:min(10, len(missed))])
	}
	if clean, _ := corpus(rand.New(rand.NewPCG(5, 6)), 1<<18, false); len(s.Scan(clean)) != 0 {
		for _, f := range s.Scan(clean)[:1] {
			t.Fatalf("false positive in clean corpus: %s %q", f.Label, clean[max(0, f.Start-40):min(len(clean), f.End+40)])
		}
	}
}

// TestScanConcurrent shares one Scanner between goroutines, as the pipeline
// does; run with -race it checks the pooled scratch buffers.
func TestScanConcurrent(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	text, planted := corpus(rand.New(rand.NewPCG(8, 9)), 1<<15, true)
	want := len(s.Scan(text))
	if want < len(planted) {
		t.Fatalf("found %d findings for %d planted", want, len(planted))
	}
	done := make(chan int)
	for g := 0; g < 4; g++ {
		go func() {
			n := 0
			for i := 0; i < 5; i++ {
				n = len(s.Scan(text))
			}
			done <- n
		}()
	}
	for g := 0; g < 4; g++ {
		if n := <-done; n != want {
			t.Errorf("concurrent scan found %d, want %d", n, want)
		}
	}
}
