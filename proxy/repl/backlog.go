// Package repl is Spillway's replication master (embedded mode), as Redis
// 7.0's replication.c: the replication ID and offset, the backlog
// (repl-backlog-size, a ring buffer of the command stream), the attached
// replicas and the goroutines feeding them, SYNC/PSYNC's full and partial
// resynchronizations, REPLCONF, WAIT, min-replicas-to-write's count of good
// replicas, and what INFO replication and ROLE show.
//
// The server records each command's propagated form in a Unit while it
// holds the engine's lock and feeds the unit with Master.Feed before it
// releases the lock, so the stream's order is the order of the changes to
// the data. Until the first replica attaches there is no backlog and
// Master.Active is false: the server records nothing (Redis creates its
// backlog when the first replica attaches, too).
package repl

import "strconv"

// backlog is the replication backlog: the last size bytes of the stream,
// in a ring. The byte at stream offset o (1-based: the first byte ever
// fed is offset 1) is at buf[(o-1) % size].
type backlog struct {
	buf     []byte
	histlen int64 // bytes held (at most len(buf))
}

// write appends p, whose first byte has offset first, to the ring.
func (b *backlog) write(first int64, p []byte) {
	size := int64(len(b.buf))
	b.histlen = min(b.histlen+int64(len(p)), size)
	if int64(len(p)) > size {
		first += int64(len(p)) - size
		p = p[int64(len(p))-size:]
	}
	for len(p) > 0 {
		at := (first - 1) % size
		n := copy(b.buf[at:], p)
		p = p[n:]
		first += int64(n)
	}
}

// read copies the bytes from offset from (included) into p, at most up to
// offset last (included); it returns how many it copied.
func (b *backlog) read(from, last int64, p []byte) int {
	size := int64(len(b.buf))
	n := 0
	for n < len(p) && from <= last {
		at := (from - 1) % size
		end := min(size, at+(last-from+1))
		c := copy(p[n:], b.buf[at:end])
		n += c
		from += int64(c)
	}
	return n
}

// An Op is one command of a Unit, encoded.
type opSpan struct {
	db         int
	start, end int
}

// A Unit is what one execution unit propagates: a command, or the commands
// of a MULTI/EXEC, a script or a function, each with its database, encoded
// as RESP arrays. The server keeps one, reused; it is guarded by the
// engine's lock.
type Unit struct {
	buf []byte
	ops []opSpan
}

// Add appends a command (args, in database db).
func (u *Unit) Add(db int, args ...[]byte) {
	start := len(u.buf)
	u.buf = appendCommand(u.buf, args)
	u.ops = append(u.ops, opSpan{db: db, start: start, end: len(u.buf)})
}

// AddStrings is Add for arguments given as strings.
func (u *Unit) AddStrings(db int, args ...string) {
	start := len(u.buf)
	u.buf = append(u.buf, '*')
	u.buf = strconv.AppendInt(u.buf, int64(len(args)), 10)
	u.buf = append(u.buf, '\r', '\n')
	for _, a := range args {
		u.buf = appendBulk(u.buf, a)
	}
	u.ops = append(u.ops, opSpan{db: db, start: start, end: len(u.buf)})
}

// Len returns the number of commands in the unit.
func (u *Unit) Len() int { return len(u.ops) }

// Reset empties the unit, keeping its memory (up to a limit).
func (u *Unit) Reset() {
	if cap(u.buf) > 1<<20 {
		u.buf = nil
	}
	u.buf, u.ops = u.buf[:0], u.ops[:0]
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func appendBulk[T string | []byte](b []byte, a T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(a)), 10)
	b = append(b, '\r', '\n')
	b = append(b, a...)
	return append(b, '\r', '\n')
}
