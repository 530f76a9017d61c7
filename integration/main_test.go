package integration

import (
	"os"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	os.Exit(code)
}
