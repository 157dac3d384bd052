package consumer

import (
	"testing"

	"go.uber.org/goleak"
)

// The consumer starts pollers, committers and the lag loop; every one must
// be gone once Run has returned.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
