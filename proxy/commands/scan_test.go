package commands_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// maxSafeCursor bounds every SCAN-family cursor: JavaScript clients read
// cursors as numbers (IEEE doubles), exact only below 2^53; a larger
// cursor, rounded, made a real client skip keys.
const maxSafeCursor = 1 << 53

// TestScanCursorsFull runs whole SCAN, HSCAN, SSCAN and ZSCAN iterations
// over many keys and elements in every tiering mode (hot; tiny, where the
// LRU demotes; cold, where every key is demoted after every command, so
// each call finds them in the store), with several COUNTs. Every cursor
// must be below 2^53, every key or element must be returned, and the walk
// must end with cursor 0.
func TestScanCursorsFull(t *testing.T) {
	const keys, elems = 300, 400 // elems is above the size returned whole
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s, e := openLocal(t, m)
			l := s.NewLocal()
			defer l.Close()
			r := &localRunner{l: l, engine: e, mode: m}
			do := func(args ...string) []byte {
				t.Helper()
				b := make([][]byte, len(args))
				for i, a := range args {
					b[i] = []byte(a)
				}
				out, err := r.do(b)
				if err != nil || len(out) == 0 || out[0] == '-' {
					t.Fatalf("%q: %q %v", args, out, err)
				}
				return out
			}

			wantKeys := map[string]bool{"h": true, "s": true, "z": true}
			mset := []string{"MSET"}
			for i := 0; i < keys; i++ {
				k := fmt.Sprint("key:", i)
				wantKeys[k] = true
				mset = append(mset, k, "v")
			}
			do(mset...)
			hset, sadd, zadd := []string{"HSET", "h"}, []string{"SADD", "s"}, []string{"ZADD", "z"}
			wantFields := map[string]string{}
			wantMembers := map[string]bool{}
			for i := 0; i < elems; i++ {
				f := fmt.Sprint("f", i)
				wantFields[f] = fmt.Sprint("v", i)
				wantMembers[f] = true
				hset = append(hset, f, wantFields[f])
				sadd = append(sadd, f)
				zadd = append(zadd, strconv.Itoa(i), f)
			}
			do(hset...)
			do(sadd...)
			do(zadd...)

			for _, count := range []string{"1", "7", "10", "1000"} {
				got := scanAll(t, do, []string{"SCAN"}, count, 1)
				checkSet(t, "SCAN COUNT "+count, got, wantKeys)

				pairs := scanAll(t, do, []string{"HSCAN", "h"}, count, 2)
				fields := map[string]bool{}
				for i := 0; i < len(pairs); i += 2 {
					if wantFields[pairs[i]] != pairs[i+1] {
						t.Fatalf("HSCAN COUNT %s: field %q value %q, want %q", count, pairs[i], pairs[i+1], wantFields[pairs[i]])
					}
					fields[pairs[i]] = true
				}
				checkSet(t, "HSCAN COUNT "+count, keysOf(fields), wantMembers)

				checkSet(t, "SSCAN COUNT "+count, scanAll(t, do, []string{"SSCAN", "s"}, count, 1), wantMembers)

				pairs = scanAll(t, do, []string{"ZSCAN", "z"}, count, 2)
				members := map[string]bool{}
				for i := 0; i < len(pairs); i += 2 {
					if want := pairs[i][1:]; pairs[i+1] != want {
						t.Fatalf("ZSCAN COUNT %s: member %q score %q, want %q", count, pairs[i], pairs[i+1], want)
					}
					members[pairs[i]] = true
				}
				checkSet(t, "ZSCAN COUNT "+count, keysOf(members), wantMembers)
			}
		})
	}
}

// scanAll iterates cmd (with its key, if any) from cursor 0 with COUNT
// count until cursor 0 and returns every item returned (in groups of
// group: HSCAN and ZSCAN return pairs), failing t on a cursor of 2^53 or
// more or on a walk that does not end.
func scanAll(t *testing.T, do func(...string) []byte, cmd []string, count string, group int) []string {
	t.Helper()
	var items []string
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > 5000 {
			t.Fatalf("%s COUNT %s: no end after %d calls", cmd[0], count, calls)
		}
		args := append(append(append([]string(nil), cmd...), cursor), "COUNT", count)
		n, err := readReply(bufio.NewReader(bytes.NewReader(do(args...))))
		if err != nil || n.typ != '*' || len(n.kids) != 2 || n.kids[0].typ != '$' || n.kids[1].typ != '*' {
			t.Fatalf("%q: bad reply %+v %v", args, n, err)
		}
		next, err := strconv.ParseUint(n.kids[0].text, 10, 64)
		if err != nil {
			t.Fatalf("%q: cursor %q: %v", args, n.kids[0].text, err)
		}
		if next >= maxSafeCursor {
			t.Fatalf("%q: cursor %d is not below 2^53", args, next)
		}
		if len(n.kids[1].kids)%group != 0 {
			t.Fatalf("%q: %d items, not in groups of %d", args, len(n.kids[1].kids), group)
		}
		for _, k := range n.kids[1].kids {
			items = append(items, k.text)
		}
		if next == 0 {
			return items
		}
		cursor = n.kids[0].text
	}
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkSet fails t unless got (duplicates allowed, as SCAN allows them)
// holds exactly the elements of want.
func checkSet(t *testing.T, what string, got []string, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("%s returned %q, which is not there", what, g)
		}
		seen[g] = true
	}
	if len(seen) != len(want) {
		for w := range want {
			if !seen[w] {
				t.Fatalf("%s: %d of %d returned; %q missing", what, len(seen), len(want), w)
			}
		}
	}
}
