package defense

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memstream/memstream/internal/bench/samples"
)

// fastMatch runs a pattern's hand-written or derived matcher, if any.
func fastMatch(p *Pattern, in string) ([]int, bool) {
	switch {
	case p.custom != nil:
		return p.custom(in), true
	case p.simple != nil:
		if l := p.simple.match(in); l >= 0 {
			return []int{0, l}, true
		}
		return nil, true
	}
	return nil, false
}

// agree compares the fast path with the anchored regex it replaces, on the
// submatch the scanner reports.
func agree(t *testing.T, p *Pattern, in string) {
	t.Helper()
	got, ok := fastMatch(p, in)
	if !ok {
		return
	}
	want := p.anchored.FindStringSubmatchIndex(in)
	if want != nil {
		want = want[2*p.group : 2*p.group+2]
	}
	if got != nil {
		got = got[2*p.group : 2*p.group+2]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: fast matcher %v != regex %v on %q", p.Label, got, want, in)
	}
}

func fastInputs(r *rand.Rand, p Pattern) []string {
	smp, _ := samples.For(r, p.Label)
	body := smp.Pre + smp.Secret + smp.Post
	ins := []string{body, body + "x", body + "_", body + "-", body + "\n", body + "谢谢"}
	for _, cut := range []int{1, 2, 5, len(body) / 2, len(body) - 1} {
		if cut > 0 && cut < len(body) {
			ins = append(ins, body[:cut])
		}
	}
	return ins
}

func TestFastMatchersAgreeWithRegex(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	fast := 0
	for _, p := range Patterns() {
		if p.custom == nil && p.simple == nil {
			continue
		}
		fast++
		for i := 0; i < 20; i++ {
			for _, in := range fastInputs(r, p) {
				agree(t, &p, in)
			}
		}
	}
	if fast < 40 {
		t.Fatalf("only %d patterns on a fast path; the compiler probably regressed", fast)
	}
}

func FuzzFastMatchers(f *testing.F) {
	r := rand.New(rand.NewPCG(13, 14))
	ps := Patterns()
	for _, p := range ps {
		if p.custom != nil || p.simple != nil {
			for _, in := range fastInputs(r, p) {
				f.Add(in)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		for i := range ps {
			p := &ps[i]
			agree(t, p, in)
			for _, kw := range p.Keywords {
				agree(t, p, kw+in)
			}
		}
	})
}
