package lualib

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// loadCases reads a file of script bodies: one per line, blank lines and
// lines starting with "#" ignored.
func loadCases(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var cases []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cases = append(cases, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return cases
}

// TestDifferential runs every script body in testdata/*.lua.txt through
// redis-server 7.0 and through gopher-lua with this package's libraries,
// and requires identical RESP2 replies.
func TestDifferential(t *testing.T) {
	srv := sharedRedis(t)
	files := []string{"cjson", "cmsgpack", "struct", "bit", "order"}
	total := 0
	for _, name := range files {
		cases := loadCases(t, "testdata/"+name+".lua.txt")
		if len(cases) == 0 {
			t.Fatalf("testdata/%s.lua.txt has no cases", name)
		}
		total += len(cases)
		t.Run(name, func(t *testing.T) {
			for _, body := range cases {
				want, err := srv.eval(body)
				if err != nil {
					t.Fatalf("redis: %s: %v", body, err)
				}
				got := runGo(body)
				if got.String() != want.String() {
					t.Errorf("script: %s\n redis: %s\n   got: %s", body, clip(want.String()), clip(got.String()))
				}
			}
		})
	}
	t.Logf("%d scripts compared against redis-server", total)
}

// clip shortens long replies in failure messages.
func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}
