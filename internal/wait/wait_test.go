package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a cancelled context reported a full sleep")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep of 1ms did not report a full sleep")
	}
}

func TestJitterStaysInItsRange(t *testing.T) {
	if Jitter(0) != 0 || Jitter(-time.Second) != 0 {
		t.Fatal("Jitter of a non-positive duration is not 0")
	}
	for range 1000 {
		if j := Jitter(time.Second); j < 500*time.Millisecond || j >= 1500*time.Millisecond {
			t.Fatalf("Jitter(1s) = %v, outside [0.5s, 1.5s)", j)
		}
	}
}

func TestBroadcastWakesEveryWaiter(t *testing.T) {
	var b Broadcast
	chs := []<-chan struct{}{b.C(), b.C(), b.C()}
	next := b.C()
	b.Fire()
	for i, c := range chs {
		select {
		case <-c:
		default:
			t.Fatalf("waiter %d not woken", i)
		}
	}
	<-next
	select {
	case <-b.C():
		t.Fatal("a channel taken after Fire is already closed")
	default:
	}
	b.Fire()
}
