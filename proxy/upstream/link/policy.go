package link

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering/uptier"
)

// The commands the demotion policy (tiering/uptier) issues, sent and
// parsed here: the policy decides what to demote, this file moves the
// bytes.

// ForPolicy returns the pool as the demoter's upstream: connections on
// which each uptier.Conn method is one pipelined round trip.
func (p *Pool) ForPolicy() uptier.Upstream { return policyPool{p} }

type policyPool struct{ p *Pool }

func (pp policyPool) DB() int { return pp.p.Target().DB }

func (pp policyPool) Dial(db int) (uptier.Conn, error) {
	c, err := pp.p.DialInternal(2, db)
	if err != nil {
		return nil, err
	}
	return policyConn{c, pp.p}, nil
}

// policyConn implements uptier.Conn over a RESP2 connection.
type policyConn struct {
	c *Conn
	p *Pool
}

func (pc policyConn) SetDeadline(t time.Time) error { return pc.c.SetDeadline(t) }

func (pc policyConn) Close() error { return pc.c.Close() }

// flush writes what was sent, as a lost connection's error.
func (pc policyConn) flush() error {
	if err := pc.c.Flush(); err != nil {
		return lost(err)
	}
	return nil
}

// read returns the next reply (valid until the next read).
func (pc policyConn) read() ([]byte, error) {
	r, err := pc.c.Read()
	if err != nil {
		return nil, lost(err)
	}
	return r, nil
}

func (pc policyConn) Select(db int) error {
	pc.c.Send("SELECT", strconv.Itoa(db))
	if err := pc.flush(); err != nil {
		return err
	}
	r, err := pc.read()
	if err != nil {
		return err
	}
	if IsError(r) {
		return fmt.Errorf("upstream: SELECT %d: %s", db, ReplyText(r))
	}
	pc.c.DB = db
	return nil
}

// usedMemory parses used_memory out of an INFO memory reply (0 if absent).
func usedMemory(r []byte) int64 {
	v, _ := InfoField(BulkPayload(r), "used_memory")
	used, _ := strconv.ParseInt(v, 10, 64)
	return used
}

func (pc policyConn) UsedMemory() (int64, error) {
	pc.c.Send("INFO", "memory")
	if err := pc.flush(); err != nil {
		return 0, err
	}
	r, err := pc.read()
	if err != nil {
		return 0, err
	}
	return usedMemory(r), nil
}

func (pc policyConn) Poll(databases int) (used int64, dbs []int, err error) {
	pc.c.Send("INFO", "memory")
	pc.c.Send("INFO", "keyspace")
	if err := pc.flush(); err != nil {
		return 0, nil, err
	}
	r, err := pc.read()
	if err != nil {
		return 0, nil, err
	}
	used = usedMemory(r)
	if r, err = pc.read(); err != nil {
		return 0, nil, err
	}
	info := BulkPayload(r)
	for db := 0; db < databases; db++ {
		if _, ok := InfoField(info, "db"+strconv.Itoa(db)); ok {
			dbs = append(dbs, db)
		}
	}
	return used, dbs, nil
}

func (pc policyConn) RandomKeys(n int) ([][]byte, error) {
	for i := 0; i < n; i++ {
		pc.c.Send("RANDOMKEY")
	}
	if err := pc.flush(); err != nil {
		return nil, err
	}
	keys := make([][]byte, n)
	for i := range keys {
		r, err := pc.read()
		if err != nil {
			return nil, err
		}
		if k := BulkPayload(r); k != nil {
			keys[i] = append([]byte{}, k...)
		}
	}
	return keys, nil
}

func (pc policyConn) Object(sub string, keys [][]byte) ([]uptier.ObjectReply, error) {
	for _, k := range keys {
		pc.c.SendArgs([][]byte{[]byte("OBJECT"), []byte(sub), k})
	}
	if err := pc.flush(); err != nil {
		return nil, err
	}
	out := make([]uptier.ObjectReply, len(keys))
	for i := range out {
		r, err := pc.read()
		if err != nil {
			return nil, err
		}
		pc.countOwn(foundNonNull(r)) // OBJECT looks the key up
		n, ok := IntReply(r)
		out[i] = uptier.ObjectReply{N: n, IsInt: ok, IsErr: IsError(r)}
	}
	return out, nil
}

func (pc policyConn) WatchDescribe(keys [][]byte) ([]uptier.KeyInfo, error) {
	watch := append([][]byte{[]byte("WATCH")}, keys...)
	pc.c.SendArgs(watch)
	for _, k := range keys {
		pc.c.SendArgs([][]byte{[]byte("TYPE"), k})
		pc.c.SendArgs([][]byte{[]byte("PEXPIRETIME"), k})
		pc.c.SendArgs([][]byte{[]byte("OBJECT"), []byte("ENCODING"), k})
	}
	if err := pc.flush(); err != nil {
		return nil, err
	}
	if _, err := pc.read(); err != nil {
		return nil, err
	}
	out := make([]uptier.KeyInfo, len(keys))
	for i := range out {
		r, err := pc.read()
		if err != nil {
			return nil, err
		}
		out[i].Type = ReplyText(r)
		if r, err = pc.read(); err != nil {
			return nil, err
		}
		out[i].PExpireTime, _ = IntReply(r)
		if r, err = pc.read(); err != nil {
			return nil, err
		}
		out[i].Encoding = ReplyText(r)
		found := out[i].Type != "none" // TYPE, PEXPIRETIME, OBJECT: three lookups
		for j := 0; j < 3; j++ {
			pc.countOwn(found)
		}
	}
	return out, nil
}

func (pc policyConn) ReadChunks(reqs []uptier.Chunk) ([]uptier.ChunkReply, error) {
	tooBig, err := pc.bigStreams(reqs)
	if err != nil {
		return nil, err
	}
	for i, q := range reqs {
		if tooBig != nil && tooBig[i] {
			continue
		}
		k := q.Key
		from := strconv.FormatUint(q.From, 10)
		to := strconv.FormatUint(q.From+uint64(q.Count)-1, 10)
		count := strconv.Itoa(q.Count)
		switch q.Type {
		case codec.TypeString:
			pc.c.SendArgs([][]byte{[]byte("GET"), k})
		case codec.TypeList:
			pc.c.SendArgs([][]byte{[]byte("LRANGE"), k, []byte(from), []byte(to)})
		case codec.TypeZSet:
			pc.c.SendArgs([][]byte{[]byte("ZRANGE"), k, []byte(from), []byte(to), []byte("WITHSCORES")})
		case codec.TypeHash:
			pc.c.SendArgs([][]byte{[]byte("HSCAN"), k, []byte(from), []byte("COUNT"), []byte(count)})
		case codec.TypeSet:
			pc.c.SendArgs([][]byte{[]byte("SSCAN"), k, []byte(from), []byte("COUNT"), []byte(count)})
		case codec.TypeStream:
			pc.c.SendArgs([][]byte{[]byte("DUMP"), k})
		default:
			return nil, fmt.Errorf("upstream: cannot read a chunk of type %d", q.Type)
		}
	}
	if err := pc.flush(); err != nil {
		return nil, err
	}
	out := make([]uptier.ChunkReply, len(reqs))
	for i, q := range reqs {
		if tooBig != nil && tooBig[i] {
			continue // no model: the stream stays upstream
		}
		r, err := pc.read()
		if err != nil {
			return nil, err
		}
		if IsError(r) {
			return nil, fmt.Errorf("upstream: demotion read of %q: %s", q.Key, ReplyText(r))
		}
		pc.countOwn(chunkFound(q.Type, r))
		switch q.Type {
		case codec.TypeString:
			p := replyParser{b: r}
			out[i].Str = p.bulk()
			err = p.err
		case codec.TypeList, codec.TypeZSet:
			out[i].Items, err = ParseBulks(r)
		case codec.TypeStream:
			p := replyParser{b: r}
			payload := p.bulk()
			if err = p.err; err == nil && payload != nil {
				out[i].Stream, err = decodeStreamPayload(q.Key, payload)
			}
		default: // hash, set
			out[i].Cursor, out[i].Items, err = ParseScan(r)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// chunkFound reports whether r, a ReadChunks reply of type t, found the
// key (OwnLookups).
func chunkFound(t codec.Type, r []byte) bool {
	switch t {
	case codec.TypeList, codec.TypeZSet:
		return foundRange(r)
	case codec.TypeHash, codec.TypeSet:
		return foundScan(r)
	}
	return foundNonNull(r) // GET, DUMP
}

// MaxStreamDemotion bounds the streams the demoter moves, by the
// upstream's MEMORY USAGE: a stream moves whole, one DUMP and later one
// RESTORE, and a payload past Redis's 512 MB bulk limit could not come
// back. A bigger stream stays upstream. A variable for tests.
var MaxStreamDemotion int64 = 256 << 20

// bigStreams reports which stream requests of reqs name a stream over
// MaxStreamDemotion (MEMORY USAGE, one round trip, only when reqs hold a
// stream); nil when none does.
func (pc policyConn) bigStreams(reqs []uptier.Chunk) ([]bool, error) {
	n := 0
	for _, q := range reqs {
		if q.Type == codec.TypeStream {
			pc.c.SendArgs([][]byte{[]byte("MEMORY"), []byte("USAGE"), q.Key})
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	if err := pc.flush(); err != nil {
		return nil, err
	}
	big := make([]bool, len(reqs))
	for i, q := range reqs {
		if q.Type != codec.TypeStream {
			continue
		}
		r, err := pc.read()
		if err != nil {
			return nil, err
		}
		if used, ok := IntReply(r); ok && used > MaxStreamDemotion {
			big[i] = true
		}
	}
	return big, nil
}

func (pc policyConn) Unwatch() { pc.c.Do("UNWATCH") }

func (pc policyConn) UnlinkWatched(keys [][]byte) (bool, error) {
	pc.c.Send("MULTI")
	unlink := make([][]byte, 0, len(keys)+1)
	unlink = append(unlink, []byte("UNLINK"))
	unlink = append(unlink, keys...)
	pc.c.SendArgs(unlink)
	pc.c.Send("EXEC")
	if err := pc.flush(); err != nil {
		return false, err
	}
	for i := 0; i < 2; i++ {
		if _, err := pc.read(); err != nil {
			return false, err
		}
	}
	r, err := pc.read()
	if err != nil {
		return false, err
	}
	if len(r) >= 3 && r[0] == '*' && r[1] == '-' {
		return false, nil // a watched key changed
	}
	if IsError(r) {
		return false, fmt.Errorf("upstream: demotion EXEC: %s", ReplyText(r))
	}
	pc.p.noteUnlinked(pc.c.DB, keys)
	return true, nil
}

func (pc policyConn) Scan(cursor uint64, count int) (uint64, [][]byte, error) {
	r, err := pc.c.Do("SCAN", strconv.FormatUint(cursor, 10), "COUNT", strconv.Itoa(count))
	if err != nil {
		return 0, nil, lost(err)
	}
	return ParseScan(r)
}
