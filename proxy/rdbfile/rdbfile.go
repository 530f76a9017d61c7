// Package rdbfile reads and writes whole RDB files, Redis 7.0's snapshot
// format (RDB version 10): Write streams a tiering.Snapshot into one, in the
// encodings redis-server itself would use, and Load reads one into the
// engine in bounded steps. The value encodings themselves (strings, LZF,
// CRC-64, listpack, intset, the decoder of every object type) are
// proxy/rdb's; this package adds the file's framing: magic, auxiliary
// fields, databases, expiries, functions, EOF and checksum.
package rdbfile

import (
	"errors"
)

// Version is the RDB version written (Redis 7.0's RDB_VERSION).
const Version = 10

// Opcodes of rdb.h.
const (
	opFunction2    = 245
	opFunctionPre  = 246
	opModuleAux    = 247
	opIdle         = 248
	opFreq         = 249
	opAux          = 250
	opResizeDB     = 251
	opExpireTimeMS = 252
	opExpireTime   = 253
	opSelectDB     = 254
	opEOF          = 255
)

// Object types of rdb.h that Write produces.
const (
	typeString         = 0
	typeList           = 1
	typeSet            = 2
	typeHash           = 4
	typeZSet2          = 5
	typeSetIntset      = 11
	typeHashListpack   = 16
	typeZSetListpack   = 17
	typeListQuicklist2 = 18
)

// Quicklist node container of a listpack.
const containerPacked = 2

// RedisVersion is the redis-ver auxiliary field written.
const RedisVersion = "7.0.15"

// ErrUnsupportedType is returned by Write for a key whose type it cannot
// encode.
var ErrUnsupportedType = errors.New("rdbfile: value type cannot be written to an RDB file")
