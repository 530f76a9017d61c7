// Package strops holds the pure algorithms behind Redis 7.0's string, bit and
// generic commands: argument parsing with Redis's exact error texts, bit
// operations, BITFIELD, LCS and INCRBYFLOAT arithmetic. The C string and
// number helpers they build on (string2ll, strtod, long double parsing and
// formatting, glob matching) are in package cstr.
//
// Nothing here does I/O or touches server state. Functions that can fail
// return an error text ("" on success) carrying Redis's code and message
// exactly, ready for resp.Writer.Error. Where an error's precedence relative
// to key lookups matters, the doc comment says which checks the caller must
// make first.
package strops

import "github.com/spillway/spillway/proxy/cstr"

// Error texts, byte-identical to Redis 7.0.15.
const (
	ErrNotInteger      = "ERR value is not an integer or out of range"
	ErrNotFloat        = "ERR value is not a valid float"
	ErrSyntax          = "ERR syntax error"
	ErrOverflow        = "ERR increment or decrement would overflow"
	ErrDecrOverflow    = "ERR decrement would overflow"
	ErrNaNOrInf        = "ERR increment would produce NaN or Infinity"
	ErrBitOffset       = "ERR bit offset is not an integer or out of range"
	ErrBitValue        = "ERR bit is not an integer or out of range"
	ErrBitArg          = "ERR The bit argument must be 1 or 0."
	ErrBitOpNot        = "ERR BITOP NOT must be called with a single source key."
	ErrStringTooLong   = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffsetRange     = "ERR offset is out of range"
	ErrBitfieldType    = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	ErrBitfieldOvf     = "ERR Invalid OVERFLOW type specified"
	ErrBitfieldRO      = "ERR BITFIELD_RO only supports the GET subcommand"
	ErrLCSBoth         = "ERR If you want both the length and indexes, please just use IDX."
	ErrLCSType         = "ERR The specified keys must contain string values"
	ErrLCSTooLong      = "ERR String too long for LCS"
	ErrLCSMemory       = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	ErrExpireNXXX      = "ERR NX and XX, GT or LT options at the same time are not compatible"
	ErrExpireGTLT      = "ERR GT and LT options at the same time are not compatible"
	errInvalidExpire   = "ERR invalid expire time in '"
	errUnsupportedOpt  = "ERR Unsupported option "
	errInvalidExpireTl = "' command"
)

// MaxBulkLen is Redis's default proto-max-bulk-len (512MB): the largest
// string value a client may create.
const MaxBulkLen = 512 * 1024 * 1024

// ErrInvalidExpire returns "ERR invalid expire time in '<cmd>' command";
// cmd is the lower-case command name ("set", "getex", "expire", ...).
func ErrInvalidExpire(cmd string) string {
	return errInvalidExpire + cmd + errInvalidExpireTl
}

// ErrUnsupportedOption returns the EXPIRE family's error for an unknown
// option, "ERR Unsupported option <opt>" (opt cut at its first NUL byte, as
// Redis prints it as a C string).
func ErrUnsupportedOption(opt []byte) string {
	return errUnsupportedOpt + string(cstr.CString(opt))
}
