package rdbfile

import (
	"fmt"
	"io"

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
	wk, err := newWalker(rd, 0)
	if err != nil {
		return err
	}
	// The writer skipValue flushes between a big value's parts never holds
	// anything: the value's bytes go to rd.rec.
	wr := &writer{w: io.Discard}
	var rec Record
	var payload []byte
	for {
		op, err := wk.next()
		if err != nil {
			return err
		}
		switch {
		case op == opEOF:
			return nil
		case op == opFunction2:
			var code []byte
			if code, err = rd.str(); err == nil {
				rec = Record{DB: wk.db, Function: code}
				err = fn(&rec)
			}
		case wk.inKey:
			payload = append(payload[:0], op)
			rd.rec = &payload
			err = rd.skipValue(op, wr)
			rd.rec = nil
			if err != nil {
				return fmt.Errorf("%w (db %d key %q)", err, wk.db, wk.key)
			}
			payload = rdb.AppendFooter(payload, Version)
			rec = Record{DB: wk.db, Key: wk.key, ExpireMS: wk.expireMS, Payload: payload}
			err = fn(&rec)
		}
		if err != nil {
			return err
		}
	}
}
