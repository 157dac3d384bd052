package unionfind

import "testing"

func TestSetsJoinTransitivelyUnderTheirSmallestMember(t *testing.T) {
	s := New(7)
	s.Union(5, 3)
	s.Union(3, 6)
	s.Union(1, 4)
	s.Union(6, 4) // joins {3,5,6} and {1,4}
	want := []int{0, 1, 2, 1, 1, 1, 1}
	for i, w := range want {
		if got := s.Find(i); got != w {
			t.Errorf("Find(%d) = %d, want %d", i, got, w)
		}
	}
	s.Union(2, 2)
	if s.Find(2) != 2 || s.Find(0) != 0 {
		t.Errorf("a self-union or an untouched item moved: %v", s)
	}
}

// A long chain built in the worst order still ends under one root.
func TestLongChain(t *testing.T) {
	const n = 10000
	s := New(n)
	for i := n - 1; i > 0; i-- {
		s.Union(i, i-1)
	}
	for i := range n {
		if s.Find(i) != 0 {
			t.Fatalf("Find(%d) = %d", i, s.Find(i))
		}
	}
}
