package reflect

import (
	"testing"

	"go.uber.org/goleak"
)

// The offline provider runs its searches on goroutines and the agent
// loop's calls carry deadlines; none may outlive a Reflect call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
