package rdbfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/spillway/spillway/proxy/rdb"
)

// Record is one record of an RDB file, as Records hands it over: a key
// (Key set) or a function library (Function set).
type Record struct {
	// DB is the database the key is in.
	DB int
	// Key is the key's name.
	Key []byte
	// ExpireMS is the key's expiry, unix time in milliseconds (0: none).
	ExpireMS int64
	// Payload is the key's value as a DUMP payload: the value's RDB type
	// byte and bytes exactly as the file holds them, followed by the RDB
	// version and CRC-64 footer RESTORE checks (Redis's DUMP format).
	Payload []byte
	// Function is a function library's source code (FUNCTION LOAD's
	// argument), for a function record.
	Function []byte
}

// Records reads the RDB file r (a master's full-synchronization payload,
// RDB version 10 or older) and calls fn with each key and each function
// library, in the file's order. Values are never decoded: each is copied
// as the file holds it into its DUMP payload, so a value is held in memory
// whole while fn runs (as RESTORE needs it) and nothing else accumulates.
// The record's slices are valid only during fn. The file's checksum, when
// it has one, is verified at its end, after the last record was handed
// over: a caller must treat what it applied as incomplete when Records
// returns an error. An error fn returns stops the reading and is returned
// as is. Records reads ahead (buffered): give it a reader limited to the
// file.
func Records(r io.Reader, fn func(rec *Record) error) error {
	rd := newReader(r)
	var magic [9]byte
	if err := rd.full(magic[:]); err != nil {
		return err
	}
	if string(magic[:5]) != "REDIS" {
		return corrupt("not an RDB file (no REDIS signature)")
	}
	if v, err := strconv.Atoi(string(magic[5:])); err != nil || v < 1 || v > Version {
		return corrupt("RDB version %q is not one Redis 7.0 loads", magic[5:])
	}
	// The writer skipValue flushes between a big value's parts never holds
	// anything: the value's bytes go to rd.rec.
	wr := &writer{w: io.Discard}
	var rec Record
	var payload []byte
	db := 0
	expire := int64(0)
	for {
		op, err := rd.byte()
		if err != nil {
			return err
		}
		switch op {
		case opExpireTimeMS:
			if err = rd.full(rd.tmp[:8]); err == nil {
				expire = int64(binary.LittleEndian.Uint64(rd.tmp[:8]))
			}
		case opExpireTime:
			if err = rd.full(rd.tmp[:4]); err == nil {
				expire = int64(binary.LittleEndian.Uint32(rd.tmp[:4])) * 1000
			}
		case opFreq:
			_, err = rd.byte()
		case opIdle:
			_, err = rd.count()
		case opSelectDB:
			var n uint64
			if n, err = rd.count(); err == nil {
				if n > 1<<30 {
					return corrupt("the file selects database %d", n)
				}
				db = int(n)
			}
		case opResizeDB:
			if _, err = rd.count(); err == nil {
				_, err = rd.count()
			}
		case opAux:
			if _, err = rd.str(); err == nil {
				_, err = rd.str()
			}
		case opFunction2:
			var code []byte
			if code, err = rd.str(); err == nil {
				rec = Record{DB: db, Function: code}
				err = fn(&rec)
			}
		case opModuleAux, opFunctionPre:
			return corrupt("the file holds records Spillway cannot load (opcode %d)", op)
		case opEOF:
			return recordsEnd(rd)
		default:
			var key []byte
			if key, err = rd.str(); err != nil {
				return err
			}
			payload = append(payload[:0], op)
			rd.rec = &payload
			err = rd.skipValue(op, wr)
			rd.rec = nil
			if err != nil {
				return fmt.Errorf("%w (db %d key %q)", err, db, key)
			}
			payload = rdb.AppendFooter(payload, Version)
			rec = Record{DB: db, Key: key, ExpireMS: expire, Payload: payload}
			expire = 0
			err = fn(&rec)
		}
		if err != nil {
			return err
		}
	}
}

// recordsEnd checks the file's checksum (0: the file has none).
func recordsEnd(rd *reader) error {
	sum := rd.crc
	var b [8]byte
	if _, err := io.ReadFull(rd.br, b[:]); err != nil {
		return corrupt("the file ends before its checksum")
	}
	if got := binary.LittleEndian.Uint64(b[:]); got != 0 && got != sum {
		return corrupt("checksum mismatch (file %016x, computed %016x)", got, sum)
	}
	return nil
}
