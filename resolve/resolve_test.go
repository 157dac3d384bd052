package resolve

import (
	"slices"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"ＡＬＩＣＥ", "alice"},
		{"alice.", "alice"},
		{"  Alice   Chen ", "alice chen"},
		{"Mr. Zhang", "zhang"},
		{"Dr. Jane O'Brien", "jane obrien"},
		{"Zhāng Wěi", "zhang wei"},
		{"José", "jose"},
		{"张 伟", "张伟"},
		{"张伟先生", "张伟"},
		{"张总", "张"},
		{"老张", "老张"},
		{"Miss", "miss"},
		{"北京！", "北京"},
		{"", ""},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want []string // must all be present
	}{
		{"张伟", []string{"张伟", "zhangwei", "weizhang", "surname:zhang"}},
		{"Zhang Wei", []string{"zhang wei", "zhangwei", "weizhang", "surname:zhang", "surname:wei", "given:zhang"}},
		{"老张", []string{"老张", "surname:zhang"}},
		{"Mr. Zhang", []string{"zhang", "surname:zhang"}},
		{"欧阳娜娜", []string{"ouyangnana", "surname:ouyang"}},
		{"曾伟", []string{"zengwei", "surname:zeng"}},
		{"Bob Smith", []string{"bob smith", "robert smith", "given:bob", "given:robert", "surname:smith"}},
		{"Alice", []string{"alice", "given:alice"}},
	} {
		got := Keys(tc.name)
		for _, k := range tc.want {
			if !slices.Contains(got, k) {
				t.Errorf("Keys(%q) = %q, missing %q", tc.name, got, k)
			}
		}
	}
	if Keys("...") != nil {
		t.Error("Keys of a name without letters should be nil")
	}
}

func TestTrigramMatchesPgTrgm(t *testing.T) {
	t.Parallel()
	// Expected values checked against PostgreSQL 15 pg_trgm similarity() in a
	// C.UTF-8 database (which returns them as float4).
	for _, tc := range []struct {
		a, b string
		want float64
	}{
		{"alice", "alice", 1},
		{"alice", "alicia", 4.0 / 9},
		{"word", "two words", 4.0 / 11}, // from the pg_trgm documentation's example
		{"Alice", "ALICE", 1},
		{"a", "a", 1},
		{"", "", 0},
		{"abc", "", 0},
		{"张伟", "张强", 1.0 / 5},
		{"jonathan", "jonathon", 6.0 / 12},
		{"katherine johnson", "katharine johnson", 15.0 / 21},
		{"O'Brien x-y", "obrien", 5.0 / 14},
	} {
		if got := Trigram(tc.a, tc.b); !near(got, tc.want) {
			t.Errorf("Trigram(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

func newResolver(t *testing.T) *Resolver {
	t.Helper()
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func person(id int64, name string, aliases ...string) Candidate {
	return Candidate{ID: id, Name: name, Kind: "person", Aliases: aliases}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	r := newResolver(t)
	zhangWei := person(1, "张伟")
	aliceChen := person(2, "Alice Chen")
	bob := person(3, "Robert Smith")
	paris := Candidate{ID: 4, Name: "Paris", Kind: "place"}
	zhangQiang := person(5, "张强")
	ouyang := person(6, "欧阳娜娜")
	for _, tc := range []struct {
		name    string
		mention Mention
		cands   []Candidate
		wantID  int64 // 0: no match
		reason  string
	}{
		{"exact", Mention{Name: "张伟", Kind: "person"}, []Candidate{zhangWei}, 1, "exact"},
		{"pinyin", Mention{Name: "Zhang Wei", Kind: "person"}, []Candidate{zhangWei}, 1, "pinyin"},
		{"pinyin surname last", Mention{Name: "Wei Zhang", Kind: "person"}, []Candidate{zhangWei}, 1, "pinyin"},
		{"pinyin with tones", Mention{Name: "Zhāng Wěi"}, []Candidate{zhangWei}, 1, "pinyin"},
		{"pinyin one word", Mention{Name: "ZhangWei"}, []Candidate{zhangWei}, 1, "pinyin"},
		{"lao zhang", Mention{Name: "老张", Kind: "person"}, []Candidate{zhangWei, aliceChen}, 1, "surname"},
		{"xiao zhang", Mention{Name: "小张"}, []Candidate{zhangWei}, 1, "surname"},
		{"zhang zong", Mention{Name: "张总"}, []Candidate{zhangWei}, 1, "surname"},
		{"mr zhang", Mention{Name: "Mr. Zhang", Kind: "person"}, []Candidate{zhangWei}, 1, "surname"},
		{"candidate known as Zhang Wei", Mention{Name: "张伟"}, []Candidate{person(7, "Zhang Wei")}, 7, "pinyin"},
		{"lao zhang to latin candidate", Mention{Name: "老张"}, []Candidate{person(7, "Zhang Wei")}, 7, "surname"},
		{"alias", Mention{Name: "老张"}, []Candidate{person(1, "张伟", "老张"), zhangQiang}, 1, "alias"},
		{"different given name", Mention{Name: "张强"}, []Candidate{zhangWei}, 0, ""},
		{"homophone in Han", Mention{Name: "章伟"}, []Candidate{zhangWei}, 0, ""},
		{"lao zhang ambiguous", Mention{Name: "老张"}, []Candidate{zhangWei, zhangQiang}, 0, ""},
		{"xiao ming is not a surname form", Mention{Name: "小明"}, []Candidate{person(8, "明亮")}, 0, ""},
		{"compound surname", Mention{Name: "Ouyang Nana"}, []Candidate{ouyang, zhangWei}, 6, "pinyin"},
		{"compound surname familiar", Mention{Name: "老欧阳"}, []Candidate{ouyang, zhangWei}, 6, "surname"},
		{"first name unique", Mention{Name: "Alice", Kind: "person"}, []Candidate{aliceChen, zhangWei}, 2, "given_name"},
		{"full name to first-name candidate", Mention{Name: "Alice Chen"}, []Candidate{person(10, "Alice"), zhangWei}, 10, "given_name"},
		{"pinyin picks the right Zhang", Mention{Name: "Zhang Qiang"}, []Candidate{zhangWei, zhangQiang}, 5, "pinyin"},
		{"surname reading", Mention{Name: "Zeng Wei"}, []Candidate{person(13, "曾伟")}, 13, "pinyin"},
		{"first name ambiguous", Mention{Name: "Alice"}, []Candidate{aliceChen, person(9, "Alice Wang")}, 0, ""},
		{"alice vs alicia", Mention{Name: "Alicia"}, []Candidate{person(10, "Alice")}, 0, ""},
		{"alicia vs alice chen", Mention{Name: "Alicia"}, []Candidate{aliceChen}, 0, ""},
		{"full width", Mention{Name: "ＡＬＩＣＥ ＣＨＥＮ"}, []Candidate{aliceChen}, 2, "exact"},
		{"punctuation", Mention{Name: "alice chen."}, []Candidate{aliceChen}, 2, "exact"},
		{"full width single", Mention{Name: "ＡＬＩＣＥ"}, []Candidate{person(10, "alice.")}, 10, "exact"},
		{"nickname", Mention{Name: "Bob Smith"}, []Candidate{bob}, 3, "nickname"},
		{"nickname first name only", Mention{Name: "Bob"}, []Candidate{bob, aliceChen}, 3, "given_name"},
		{"person is not a place", Mention{Name: "Paris", Kind: "person"}, []Candidate{paris}, 0, ""},
		{"place matches place", Mention{Name: "paris", Kind: "Place"}, []Candidate{paris}, 4, "exact"},
		{"unknown kind matches", Mention{Name: "Paris"}, []Candidate{paris}, 4, "exact"},
		{"no partial for places", Mention{Name: "Springfield"}, []Candidate{{ID: 11, Name: "Springfield Park", Kind: "place"}}, 0, ""},
		{"empty", Mention{Name: "  "}, []Candidate{zhangWei}, 0, ""},
		{"no candidates", Mention{Name: "张伟"}, nil, 0, ""},
		{"typo without support", Mention{Name: "Jonathon Smithe"}, []Candidate{person(12, "Jonathan Smith")}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := r.Resolve(tc.mention, tc.cands)
			if tc.wantID == 0 {
				if ok {
					t.Fatalf("Resolve(%q) = %+v, want no match", tc.mention.Name, got)
				}
				return
			}
			if !ok || got.ID != tc.wantID || got.Reason != tc.reason {
				t.Fatalf("Resolve(%q) = %+v, %v; want id %d reason %s", tc.mention.Name, got, ok, tc.wantID, tc.reason)
			}
		})
	}
}

func TestResolveCoOccurrence(t *testing.T) {
	t.Parallel()
	r := newResolver(t)
	wei, qiang := person(1, "张伟"), person(2, "张强")
	if _, ok := r.Resolve(Mention{Name: "老张"}, []Candidate{wei, qiang}); ok {
		t.Fatal("two Zhangs and no context: want no match")
	}
	qiang.CoMentioned = true
	got, ok := r.Resolve(Mention{Name: "老张"}, []Candidate{wei, qiang})
	if !ok || got.ID != 2 {
		t.Fatalf("co-mentioned 张强 should single him out, got %+v %v", got, ok)
	}

	// A close spelling is not enough alone, but co-occurrence tips it.
	typo := Mention{Name: "Katharine Johnson"}
	jon := person(3, "Katherine Johnson")
	if _, ok := r.Resolve(typo, []Candidate{jon}); ok {
		t.Errorf("typo alone should not match")
	}
	plain, _ := r.score(typo, &jon, 0.6), 0
	jon.CoMentioned = true
	if _, ok := r.Resolve(typo, []Candidate{jon}); !ok {
		t.Errorf("typo with co-occurrence should match")
	}
	if r.score(typo, &jon, 0.6) <= plain {
		t.Error("co-occurrence did not raise the score")
	}
}

func TestResolveRecency(t *testing.T) {
	t.Parallel()
	r := newResolver(t)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	old := person(1, "Sam Lee")
	old.LastSeen = now.AddDate(-2, 0, 0)
	recent := person(2, "Sam Lee")
	recent.LastSeen = now.Add(-time.Hour)
	got, ok := r.Resolve(Mention{Name: "Sam Lee", At: now}, []Candidate{old, recent})
	if !ok || got.ID != 2 {
		t.Fatalf("want the recently seen duplicate, got %+v %v", got, ok)
	}
	m := Mention{Name: "x", At: now}
	if r.score(m, &recent, 0.6) <= r.score(m, &old, 0.6) {
		t.Error("recency did not raise the score")
	}
}

func TestResolveEmbedding(t *testing.T) {
	t.Parallel()
	r := newResolver(t)
	m := Mention{Name: "Jonathon Smith", Embedding: []float32{1, 0}}
	c := person(1, "Jonathan Smith")
	c.Embedding = []float32{1, 0}
	same, _ := r.Resolve(m, []Candidate{c})
	c.Embedding = []float32{0, 1}
	_, okFar := r.Resolve(m, []Candidate{c})
	if same.ID != 1 || okFar {
		t.Errorf("close name: similar context should match (%+v), unrelated should not (%v)", same, okFar)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Threshold: 1.5}); err == nil {
		t.Error("want error for threshold > 1")
	}
}

func TestGroupAliases(t *testing.T) {
	t.Parallel()
	ms := func(names ...string) []Mention {
		var out []Mention
		for _, n := range names {
			out = append(out, Mention{Name: n, Kind: "person"})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []Mention
		want [][]int
	}{
		{"three forms", ms("张伟", "Zhang Wei", "老张"), [][]int{{0, 1, 2}}},
		{"two zhangs", ms("张伟", "张强", "老张"), [][]int{{0}, {1}, {2}}},
		{"two short forms stay apart", ms("老张", "小张"), [][]int{{0}, {1}}},
		{"nickname", ms("Bob", "Robert Smith", "Alice"), [][]int{{0, 1}, {2}}},
		{"kinds", []Mention{{Name: "Paris", Kind: "person"}, {Name: "Paris", Kind: "place"}}, [][]int{{0}, {1}}},
	} {
		if got := GroupAliases(tc.in); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: GroupAliases = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzResolve checks that arbitrary names never panic, that Trigram stays in
// [0, 1] and is symmetric, and that a name always resolves to itself.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"张伟", "老张", "Mr. Zhang", "ＡＬＩＣＥ", "O'Brien", "\xff", "欧阳", "小", "Dr."} {
		f.Add(s, "Zhang Wei")
	}
	r, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		_ = Keys(a)
		_ = GroupAliases([]Mention{{Name: a}, {Name: b}})
		if x, y := Trigram(a, b), Trigram(b, a); x != y || x < 0 || x > 1 {
			t.Fatalf("Trigram(%q, %q) = %v, reverse %v", a, b, x, y)
		}
		m, ok := r.Resolve(Mention{Name: a}, []Candidate{{ID: 1, Name: a}})
		if Normalize(a) != "" && (!ok || m.ID != 1) {
			t.Fatalf("%q does not resolve to itself: %+v %v", a, m, ok)
		}
	})
}
