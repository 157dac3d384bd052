package ttlcache

import (
	"testing"
	"time"
)

func TestExpiresRemovesAndBounds(t *testing.T) {
	c, err := New[int](2, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c.Add("a", 1)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %d, %v; want 1, true", v, ok)
	}
	c.Remove("a")
	if _, ok := c.Get("a"); ok {
		t.Fatal("a removed but still served")
	}
	c.Add("a", 1)
	c.Add("b", 2)
	c.Add("c", 3)
	if _, ok := c.Get("a"); ok {
		t.Fatal("three keys in a cache of two: the oldest is still there")
	}
	time.Sleep(60 * time.Millisecond)
	if _, ok := c.Get("c"); ok {
		t.Fatal("c served after its TTL")
	}
	if _, err := New[int](0, time.Second); err == nil {
		t.Fatal("a cache of no keys was accepted")
	}
}
