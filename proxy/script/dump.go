package script

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spillway/spillway/proxy/resp"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdb"
)

// FUNCTION DUMP's payload is Redis's: for each library RDB_OPCODE_FUNCTION2
// and the library code as an RDB string (LZF-compressed when longer than 20
// bytes and compressible, as with rdbcompression yes), then the RDB version
// (10, little endian) and the CRC64 (Jones) of everything before it.

const (
	rdbOpcodeFunction2     = 245
	rdbOpcodeFunctionPreGA = 246
	rdbVersion             = 10
)

// Libraries returns the FUNCTION DUMP payload of every library (libraries
// in name order). Safe while a script runs.
func (e *Engine) Libraries() []byte {
	e.mu.Lock()
	snap := e.snapshot
	e.mu.Unlock()
	var buf []byte
	for _, l := range snap {
		buf = append(buf, rdbOpcodeFunction2)
		buf = appendRDBString(buf, []byte(l.code))
	}
	return rdb.AppendFooter(buf, rdbVersion)
}

// LoadLibraries restores a FUNCTION DUMP payload at startup, replacing all
// libraries.
func (e *Engine) LoadLibraries(payload []byte) error {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	lc, msg := e.parsePayload(payload)
	if msg != "" {
		return fmt.Errorf("script: load function libraries: %s", msg)
	}
	e.libs, e.funcs = lc.libs, lc.funcs
	e.librariesChanged()
	return nil
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func (e *Engine) functionRestore(w *resp.Writer, args [][]byte) bool {
	if len(args) > 4 {
		w.Error(subcommandSyntaxError("function", args))
		return false
	}
	policy := "append"
	if len(args) == 4 {
		policy = strings.ToLower(string(args[3]))
		if policy != "append" && policy != "replace" && policy != "flush" {
			w.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return false
		}
	}
	lc, msg := e.parsePayload(args[2])
	if msg != "" {
		w.Error("ERR " + msg)
		return false
	}
	if policy == "flush" {
		e.libs, e.funcs = lc.libs, lc.funcs
	} else if msg := e.current().join(lc, policy == "replace"); msg != "" {
		w.Error("ERR " + msg)
		return false
	}
	e.librariesChanged()
	w.OK()
	return true
}

// parsePayload verifies a DUMP payload and loads its libraries into a new
// library context (the caller holds runMu). It returns Redis's error
// message (without "ERR ") on failure.
func (e *Engine) parsePayload(data []byte) (*libCtx, string) {
	if !rdb.FooterOK(data, rdbVersion) {
		return nil, "DUMP payload version or checksum are wrong"
	}
	lc := newLibCtx()
	body := data[:len(data)-10]
	for pos := 0; pos < len(body); {
		typ := body[pos]
		pos++
		if typ != rdbOpcodeFunction2 && typ != rdbOpcodeFunctionPreGA {
			return nil, "given type is not a function"
		}
		var code []byte
		if typ == rdbOpcodeFunctionPreGA {
			// The format of Redis 7.0 release candidates: library name,
			// engine name and an optional description precede the code,
			// which has no "#!" line; Redis writes one for it.
			name, engine, n, msg := readPreGAHeader(body[pos:])
			if msg != "" {
				return nil, msg
			}
			pos += n
			blob, n, err := readRDBString(body[pos:])
			if err != nil {
				return nil, "Failed loading library blob"
			}
			pos += n
			code = append([]byte("#!"+engine+" name="+name+"\n"), blob...)
		} else {
			c, n, err := readRDBString(body[pos:])
			if err != nil {
				return nil, "Failed loading library payload"
			}
			pos += n
			code = c
		}
		if _, msg := e.createLibrary(string(code), false, lc); msg != "" {
			return nil, msg
		}
	}
	return lc, ""
}

// readPreGAHeader reads the name, engine and description that precede the
// code in RDB_OPCODE_FUNCTION records, returning the name, the engine, the
// bytes read, or rdbFunctionLoad's error.
func readPreGAHeader(b []byte) (name, engine string, size int, msg string) {
	nm, n, err := readRDBString(b)
	if err != nil {
		return "", "", 0, "Failed loading library name"
	}
	pos := n
	en, n, err := readRDBString(b[pos:])
	if err != nil {
		return "", "", 0, "Failed loading engine name"
	}
	pos += n
	hasDesc, _, n, err := readRDBLen(b[pos:])
	if err != nil {
		return "", "", 0, "Failed loading library description indicator"
	}
	pos += n
	if hasDesc != 0 {
		_, n, err := readRDBString(b[pos:])
		if err != nil {
			return "", "", 0, "Failed loading library description"
		}
		pos += n
	}
	return cstr.CString(string(nm)), cstr.CString(string(en)), pos, ""
}

// join is libraryJoin: it adds src's libraries to lc, replacing libraries of
// the same name when replace is set, and fails without changing anything on
// a collision.
func (lc *libCtx) join(src *libCtx, replace bool) string {
	var replaced []*library
	restore := func() {
		for _, l := range replaced {
			lc.link(l)
		}
	}
	for _, name := range sortedLibNames(src) {
		if old := lc.libs[name]; old != nil {
			if !replace {
				restore()
				return "Library " + cstr.CString(name) + " already exists"
			}
			lc.unlink(old)
			replaced = append(replaced, old)
		}
	}
	for _, name := range sortedLibNames(src) {
		for _, fname := range sortedFuncNames(src.libs[name]) {
			if lc.funcs[asciiLower(fname)] != nil {
				restore()
				return "Function " + cstr.CString(fname) + " already exists"
			}
		}
	}
	for _, name := range sortedLibNames(src) {
		lc.link(src.libs[name])
	}
	return ""
}

func sortedLibNames(lc *libCtx) []string {
	names := make([]string, 0, len(lc.libs))
	for n := range lc.libs {
		names = append(names, n)
	}
	sortStrings(names)
	return names
}

// The RDB string codec is proxy/rdb's.
var (
	appendRDBString = rdb.AppendString
	readRDBString   = rdb.ReadString
	readRDBLen      = rdb.ReadLen
)

func sortStrings(s []string) { sort.Strings(s) }
