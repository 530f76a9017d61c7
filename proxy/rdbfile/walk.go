package rdbfile

import (
	"encoding/binary"
	"io"
	"strconv"
)

// walker walks an RDB file record by record: the loop of Redis's
// rdbLoadRioWithLoadingCtx, shared by Load (decodes values into the
// engine), Records (copies each value into a DUMP payload) and Splice
// (re-emits the records). It checks the signature and version, reads
// each opcode and, whole, the records every reader treats alike
// (expiries, LFU/LRU hints, SELECTDB, RESIZEDB, auxiliary fields), refuses
// what Spillway cannot handle (module data, pre-release functions) and
// verifies the checksum at EOF. The two parts each reader treats its own
// way are left to it: a key's value and a function library's code.
type walker struct {
	r *reader
	// version is the file's RDB version (1 to Version).
	version int
	// databases bounds SELECTDB: the file may name databases 0 to
	// databases-1 (0: no bound but an int's).
	databases int

	// What next read. db is the database selected; expireMS (unix ms, 0:
	// none), freq and idle (-1: none) are the hints of the next key, reset
	// after it; auxKey and auxVal are the auxiliary field opAux read; key
	// is the key's name when next returned a value type (inKey).
	db             int
	expireMS       int64
	freq           int
	idle           int64
	auxKey, auxVal []byte
	key            []byte
	inKey          bool
}

// signature reads the file's "REDIS" signature and returns the four
// bytes of its version that follow.
func (r *reader) signature() ([]byte, error) {
	var magic [9]byte
	if err := r.full(magic[:]); err != nil {
		return nil, err
	}
	if string(magic[:5]) != "REDIS" {
		return nil, corrupt("not an RDB file (no REDIS signature)")
	}
	return magic[5:], nil
}

// maxSelectDB bounds SELECTDB when the reader has no database count.
const maxSelectDB = 1 << 30

// newWalker reads r's signature: "REDIS" and a version from 1 to Version.
func newWalker(r *reader, databases int) (*walker, error) {
	w := &walker{r: r, databases: databases, freq: -1, idle: -1}
	ver, err := r.signature()
	if err != nil {
		return nil, err
	}
	v, err := strconv.Atoi(string(ver))
	if err != nil || v < 1 {
		return nil, corrupt("bad RDB version %q", ver)
	}
	if v > Version {
		return nil, corrupt("RDB version %d is newer than Redis 7.0's (%d)", v, Version)
	}
	w.version = v
	return w, nil
}

// next reads the next record and returns its opcode, or the value type of
// a key's record. What it read is in w's fields; the caller reads the rest
// of two records: a key's value (inKey set, the reader at the value) and
// a function library's code (opFunction2, the reader at the code). At
// opEOF the checksum has been verified (a file of version 5 or later has
// one; zero means none): the file is read.
func (w *walker) next() (byte, error) {
	if w.inKey {
		w.inKey, w.key = false, nil
		w.expireMS, w.freq, w.idle = 0, -1, -1
	}
	r := w.r
	op, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch op {
	case opExpireTimeMS:
		err = r.full(r.tmp[:8])
		w.expireMS = int64(binary.LittleEndian.Uint64(r.tmp[:8]))
	case opExpireTime:
		err = r.full(r.tmp[:4])
		w.expireMS = int64(int32(binary.LittleEndian.Uint32(r.tmp[:4]))) * 1000
	case opFreq:
		var b byte
		b, err = r.byte()
		w.freq = int(b)
	case opIdle:
		var n uint64
		n, err = r.count()
		w.idle = int64(min(n, 1<<40))
	case opSelectDB:
		var n uint64
		if n, err = r.count(); err == nil {
			err = w.selectDB(n)
		}
	case opResizeDB:
		if _, err = r.count(); err == nil {
			_, err = r.count()
		}
	case opAux:
		if w.auxKey, err = r.str(); err == nil {
			w.auxVal, err = r.str()
		}
	case opModuleAux:
		err = corrupt("the file holds module data (MODULE_AUX), which Spillway cannot handle")
	case opFunctionPre:
		err = corrupt("pre-release function format (RDB_OPCODE_FUNCTION) not supported")
	case opFunction2:
		// The caller reads the library's code.
	case opEOF:
		err = w.checksum()
	default:
		w.key, err = r.str()
		w.inKey = err == nil
	}
	return op, err
}

func (w *walker) selectDB(n uint64) error {
	if w.databases > 0 && n >= uint64(w.databases) {
		return corrupt("the file selects database %d; this server has %d (databases)", n, w.databases)
	}
	if n > maxSelectDB {
		return corrupt("the file selects database %d", n)
	}
	w.db = int(n)
	return nil
}

// checksum reads and verifies the checksum after EOF (version 5 on).
func (w *walker) checksum() error {
	if w.version < 5 {
		return nil
	}
	r := w.r
	sum := r.crc
	var b [8]byte
	if _, err := io.ReadFull(r.br, b[:]); err != nil {
		return corrupt("no checksum after EOF")
	}
	r.n += 8
	if got := binary.LittleEndian.Uint64(b[:]); got != 0 && got != sum {
		return corrupt("wrong RDB checksum: the file says %016x, its content gives %016x", got, sum)
	}
	return nil
}
