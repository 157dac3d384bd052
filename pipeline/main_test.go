package pipeline_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Lanes, the watchdog and every stage start goroutines; once a test has
// stopped or aborted its pipeline none may be left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
