package resp

import "strings"

// Error is a Redis error reply carried as a Go error: a command handler
// returns one instead of writing it, and the server writes it (counting it
// in INFO's error statistics) in place of whatever the command had written.
// Msg is the whole line as Redis sends it, prefix first: "ERR syntax
// error", "WRONGTYPE Operation against a key holding the wrong kind of
// value", "NOPERM ...". It has no "-" and no CRLF.
type Error struct {
	Msg string
}

// Err returns msg as an error reply. msg must begin with its prefix.
func Err(msg string) error { return &Error{Msg: msg} }

// Error returns the reply's text.
func (e *Error) Error() string { return e.Msg }

// Prefix returns the error code: the first word of Msg ("ERR", "WRONGTYPE").
func (e *Error) Prefix() string {
	if i := strings.IndexByte(e.Msg, ' '); i >= 0 {
		return e.Msg[:i]
	}
	return e.Msg
}

// ErrWrongType is the reply to a command on a key of another type.
var ErrWrongType = &Error{Msg: "WRONGTYPE Operation against a key holding the wrong kind of value"}
