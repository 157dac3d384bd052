package text

import (
	"reflect"
	"testing"
)

func TestCJKTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"我搬到上海了", []string{"我搬", "搬到", "到上", "上海", "海了"}},
		{"张 is here", []string{"张"}},
		{"plain english", nil},
		{"上海上海", []string{"上海", "海上"}},
	} {
		if got := CJKTerms(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("CJKTerms(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestQueryTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Where does Alice live now?", []string{"alice", "live"}},
		// Single letters carry nothing; numbers always count.
		{"What is order #A-7731?", []string{"order", "7731"}},
		// 哪里 is a stop word, cut out before the bigrams: no 在哪.
		{"张伟住在哪里", []string{"张伟", "伟住", "住在"}},
		// No bigram spans 什么 (是什, 么车) or holds a particle (买的, 的是);
		// the lone 车 is kept.
		{"阿洋新买的是什么车？", []string{"阿洋", "洋新", "新买", "车"}},
		{"the of and", nil},
	} {
		if got := QueryTerms(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("QueryTerms(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestAuxIncludesAliases(t *testing.T) {
	got := Aux("Lunch with 老张 today", []string{"张伟", "Zhang Wei"})
	want := "老张 张伟 zhang wei"
	if got != want {
		t.Errorf("Aux = %q, want %q", got, want)
	}
}
