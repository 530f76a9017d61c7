package lualib

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The fuzz targets feed arbitrary bytes to the decoders. Whatever the
// input, a call must end either with values or with a Lua error (what a
// script would see); a Go panic inside the library (ApiErrorPanic) fails.
// The checked-in corpora under testdata/fuzz/ are also replayed against
// redis-server by TestFuzzCorporaAgainstRedis, which checks that both sides
// agree on success or error and on the result.

// callLib calls global table lib's function fn with args in a fresh state
// and returns the results, or the Lua error.
func callLib(t *testing.T, lib, fn string, args ...lua.LValue) ([]lua.LValue, *lua.ApiError) {
	t.Helper()
	L := newTestState()
	defer L.Close()
	return callIn(t, L, lib, fn, args...)
}

func callIn(t *testing.T, L *lua.LState, lib, fn string, args ...lua.LValue) ([]lua.LValue, *lua.ApiError) {
	t.Helper()
	f := L.GetField(L.GetGlobal(lib), fn)
	top := L.GetTop()
	err := L.CallByParam(lua.P{Fn: f, NRet: lua.MultRet, Protect: true}, args...)
	if err != nil {
		var apiErr *lua.ApiError
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s.%s: non-Lua error %v", lib, fn, err)
		}
		if apiErr.Type != lua.ApiErrorRun {
			t.Fatalf("%s.%s: Go panic: %v", lib, fn, apiErr)
		}
		if _, ok := apiErr.Object.(lua.LString); !ok {
			t.Fatalf("%s.%s: error value is %s, want a string", lib, fn, apiErr.Object.Type())
		}
		return nil, apiErr
	}
	var out []lua.LValue
	for i := top + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i))
	}
	L.SetTop(top)
	return out, nil
}

// boundArrays lowers gopher-lua's array-part limit while fuzzing. gopher-lua
// stores every positive integer key below lua.MaxArrayIndex (64 Mi) in a
// dense slice, so a 7-byte MessagePack map {[0x3ffffff] = 1} allocates about
// 1 GB and takes seconds; that is a property of gopher-lua tables (the same
// happens to t[0x3ffffff] = 1 in any script), not of these libraries, and it
// would stall the fuzzer.
func boundArrays(f *testing.F) {
	old := lua.MaxArrayIndex
	lua.MaxArrayIndex = 1 << 16
	f.Cleanup(func() { lua.MaxArrayIndex = old })
}

func FuzzCJSONDecode(f *testing.F) {
	boundArrays(f)
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"\u00e9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		L := newTestState()
		defer L.Close()
		res, lerr := callIn(t, L, "cjson", "decode", lua.LString(data))
		if lerr != nil {
			return
		}
		if len(res) != 1 {
			t.Fatalf("decode returned %d values", len(res))
		}
		// Whatever decodes must encode again (or fail cleanly, e.g. on
		// NaN), and what encodes must decode.
		enc, lerr := callIn(t, L, "cjson", "encode", res[0])
		if lerr != nil {
			return
		}
		if _, lerr := callIn(t, L, "cjson", "decode", enc[0]); lerr != nil {
			t.Fatalf("decode(encode(decode(%s))) = %s failed: %v", short(data), short(enc[0].String()), lerr.Object)
		}
	})
}

func FuzzCMsgpackUnpack(f *testing.F) {
	boundArrays(f)
	f.Add([]byte("\x93\x01\xa1a\x81\xa1k\xc3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		L := newTestState()
		defer L.Close()
		res, lerr := callIn(t, L, "cmsgpack", "unpack", lua.LString(data))
		if lerr != nil {
			return
		}
		if len(res) == 0 {
			if len(data) != 0 {
				t.Fatalf("unpack(%s) returned no values", short(data))
			}
			return
		}
		if 2*len(res) > maxCStack {
			return // pack refuses that many arguments, as in Redis
		}
		packed, lerr := callIn(t, L, "cmsgpack", "pack", res...)
		if lerr != nil {
			t.Fatalf("pack(unpack(%s)) failed: %v", short(data), lerr.Object)
		}
		// pack writes tables nested 16 deep as nil, which unpack then
		// rejects as a map key, in Redis too.
		if _, lerr := callIn(t, L, "cmsgpack", "unpack", packed[0]); lerr != nil && lerr.Object.String() != "table index is nil" {
			t.Fatalf("unpack(pack(unpack(%s))) failed: %v", short(data), lerr.Object)
		}
		// unpack_one walks the same stream value by value.
		if _, lerr := callIn(t, L, "cmsgpack", "unpack_one", lua.LString(data)); lerr != nil {
			t.Fatalf("unpack_one(%s) failed where unpack succeeded: %v", short(data), lerr.Object)
		}
	})
}

func FuzzStructUnpack(f *testing.F) {
	boundArrays(f)
	f.Add("<i4c0", []byte("\x02\x00\x00\x00hi"))
	f.Fuzz(func(t *testing.T, format string, data []byte) {
		L := newTestState()
		defer L.Close()
		callIn(t, L, "struct", "unpack", lua.LString(format), lua.LString(data))
		callIn(t, L, "struct", "unpack", lua.LString(format), lua.LString(data), lua.LNumber(2))
		callIn(t, L, "struct", "size", lua.LString(format))
		args := []lua.LValue{lua.LString(format)}
		for i := 0; i < 4; i++ {
			args = append(args, lua.LString(data))
		}
		callIn(t, L, "struct", "pack", args...)
	})
}

// corpusEntry is one file of a Go fuzz corpus.
type corpusEntry struct {
	name string
	args []string
}

// readCorpus parses the "go test fuzz v1" files of one fuzz target.
func readCorpus(t *testing.T, target string) []corpusEntry {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read corpus %s: %v", dir, err)
	}
	var out []corpusEntry
	for _, fi := range files {
		f, err := os.Open(filepath.Join(dir, fi.Name()))
		if err != nil {
			t.Fatalf("open corpus file: %v", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		e := corpusEntry{name: fi.Name()}
		for line := 0; sc.Scan(); line++ {
			text := sc.Text()
			if line == 0 {
				if text != "go test fuzz v1" {
					t.Fatalf("%s: bad header %q", fi.Name(), text)
				}
				continue
			}
			open := strings.IndexByte(text, '(')
			if open < 0 || !strings.HasSuffix(text, ")") {
				t.Fatalf("%s: cannot parse %q", fi.Name(), text)
			}
			s, err := strconv.Unquote(text[open+1 : len(text)-1])
			if err != nil {
				t.Fatalf("%s: unquote %q: %v", fi.Name(), text, err)
			}
			e.args = append(e.args, s)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", fi.Name(), err)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatalf("corpus %s is empty", dir)
	}
	return out
}

// TestFuzzCorporaAgainstRedis replays the checked-in fuzz corpora through
// redis-server and gopher-lua and requires the same outcome: the same
// decoded values, or the same error message.
func TestFuzzCorporaAgainstRedis(t *testing.T) {
	srv := sharedRedis(t)
	targets := []struct {
		name   string
		script string
	}{
		{"FuzzCJSONDecode", `return P(function() return T(cjson.decode(ARGV[1])) end)`},
		{"FuzzCMsgpackUnpack", `return P(function() return R(cmsgpack.unpack(ARGV[1])) end)`},
		{"FuzzStructUnpack", `return P(function() return R(struct.unpack(ARGV[1], ARGV[2])) end) .. ' | ' .. P(struct.size, ARGV[1]) .. ' | ' .. P(struct.pack, ARGV[1], ARGV[2], ARGV[2], ARGV[2], ARGV[2])`},
	}
	total := 0
	for _, tg := range targets {
		entries := readCorpus(t, tg.name)
		total += len(entries)
		t.Run(tg.name, func(t *testing.T) {
			for _, e := range entries {
				want, err := srv.eval(tg.script, e.args...)
				if err != nil {
					t.Fatalf("redis: %s: %v", e.name, err)
				}
				got := runGo(tg.script, e.args...)
				if got.String() != want.String() {
					t.Errorf("corpus %s\n redis: %s\n   got: %s", e.name, clip(want.String()), clip(got.String()))
				}
			}
		})
	}
	t.Logf("%d corpus entries compared against redis-server", total)
}

// short quotes a fuzz input for a failure message, cut to a readable size.
func short[T ~string | ~[]byte](b T) string {
	s := string(b)
	if len(s) > 120 {
		return strconv.Quote(s[:120]) + "..."
	}
	return strconv.Quote(s)
}
