package script

import (
	"encoding/binary"
	"errors"
	"fmt"
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

	rdbEncVal                                       = 3 // RDB_ENCVAL
	rdbEncInt8, rdbEncInt16, rdbEncInt32, rdbEncLZF = 0, 1, 2, 3
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

// appendRDBString is rdbSaveRawString with rdbcompression on.
func appendRDBString(buf, s []byte) []byte {
	if len(s) <= 11 {
		if enc, ok := rdbIntEncoding(s); ok {
			return append(buf, enc...)
		}
	}
	if len(s) > 20 {
		if c := lzfCompress(s, len(s)-4); c != nil {
			buf = append(buf, rdbEncVal<<6|rdbEncLZF)
			buf = rdb.AppendLen(buf, uint64(len(c)))
			buf = rdb.AppendLen(buf, uint64(len(s)))
			return append(buf, c...)
		}
	}
	buf = rdb.AppendLen(buf, uint64(len(s)))
	return append(buf, s...)
}

// rdbIntEncoding is rdbTryIntegerEncoding: s encoded as an integer when it
// is the canonical decimal form of a value that fits 32 bits.
func rdbIntEncoding(s []byte) ([]byte, bool) {
	n, ok := parseCanonicalInt(s)
	if !ok {
		return nil, false
	}
	switch {
	case n >= -(1<<7) && n <= 1<<7-1:
		return []byte{rdbEncVal<<6 | rdbEncInt8, byte(n)}, true
	case n >= -(1<<15) && n <= 1<<15-1:
		return []byte{rdbEncVal<<6 | rdbEncInt16, byte(n), byte(n >> 8)}, true
	case n >= -(1<<31) && n <= 1<<31-1:
		return []byte{rdbEncVal<<6 | rdbEncInt32, byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}, true
	}
	return nil, false
}

// parseCanonicalInt parses s when formatting the result gives s back
// (string2ll followed by ll2string comparison).
func parseCanonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	var n int64
	neg := s[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	if i >= len(s) || s[i] == '0' && len(s) > i+1 || neg && s[i] == '0' {
		return 0, false
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<62)/5 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

var errShortRDB = errors.New("script: truncated RDB string")

// readRDBLen is rdbLoadLenByRef: the length, whether it is an encoding
// type, and the bytes read.
func readRDBLen(b []byte) (n uint64, encoded bool, size int, err error) {
	if len(b) < 1 {
		return 0, false, 0, errShortRDB
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false, 1, nil
	case 1:
		if len(b) < 2 {
			return 0, false, 0, errShortRDB
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), false, 2, nil
	case 3:
		return uint64(b[0] & 0x3f), true, 1, nil
	}
	switch b[0] {
	case 0x80:
		if len(b) < 5 {
			return 0, false, 0, errShortRDB
		}
		return uint64(binary.BigEndian.Uint32(b[1:])), false, 5, nil
	case 0x81:
		if len(b) < 9 {
			return 0, false, 0, errShortRDB
		}
		return binary.BigEndian.Uint64(b[1:]), false, 9, nil
	}
	return 0, false, 0, errors.New("script: unknown RDB length encoding")
}

// readRDBString is rdbGenericLoadStringObject.
func readRDBString(b []byte) ([]byte, int, error) {
	n, enc, size, err := readRDBLen(b)
	if err != nil {
		return nil, 0, err
	}
	if enc {
		p := b[size:]
		switch n {
		case rdbEncInt8:
			if len(p) < 1 {
				return nil, 0, errShortRDB
			}
			return []byte(fmt.Sprint(int8(p[0]))), size + 1, nil
		case rdbEncInt16:
			if len(p) < 2 {
				return nil, 0, errShortRDB
			}
			return []byte(fmt.Sprint(int16(binary.LittleEndian.Uint16(p)))), size + 2, nil
		case rdbEncInt32:
			if len(p) < 4 {
				return nil, 0, errShortRDB
			}
			return []byte(fmt.Sprint(int32(binary.LittleEndian.Uint32(p)))), size + 4, nil
		case rdbEncLZF:
			clen, _, s1, err := readRDBLen(p)
			if err != nil {
				return nil, 0, err
			}
			ulen, _, s2, err := readRDBLen(p[s1:])
			if err != nil {
				return nil, 0, err
			}
			start := s1 + s2
			if clen > uint64(len(p)-start) || ulen > 512<<20 {
				return nil, 0, errShortRDB
			}
			out, err := lzfDecompress(p[start:start+int(clen)], int(ulen))
			if err != nil {
				return nil, 0, err
			}
			return out, size + start + int(clen), nil
		}
		return nil, 0, errors.New("script: unknown RDB string encoding")
	}
	if n > uint64(len(b)-size) {
		return nil, 0, errShortRDB
	}
	return b[size : size+int(n)], size + int(n), nil
}
