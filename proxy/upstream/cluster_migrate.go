package upstream

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering/uptier"
)

// migrateArgs is a parsed MIGRATE host port key|"" db timeout [COPY]
// [REPLACE] [AUTH pw] [AUTH2 user pw] [KEYS key...].
type migrateArgs struct {
	addr           string
	db             int
	timeout        time.Duration
	copy, replace  bool
	user, password string
	keysAt         int // index of KEYS, -1 for the one-key form
	keys           [][]byte
}

// parseMigrate parses MIGRATE's arguments; ok is false for any form it
// does not know, which is then forwarded for the upstream to judge.
func parseMigrate(args [][]byte) (m migrateArgs, ok bool) {
	if len(args) < 6 {
		return m, false
	}
	port, err := strconv.Atoi(string(args[2]))
	if err != nil || port <= 0 || port > 65535 {
		return m, false
	}
	m.addr = net.JoinHostPort(string(args[1]), strconv.Itoa(port))
	if m.db, err = strconv.Atoi(string(args[4])); err != nil || m.db < 0 {
		return m, false
	}
	ms, err := strconv.ParseInt(string(args[5]), 10, 64)
	if err != nil || ms < 0 {
		return m, false
	}
	if ms == 0 {
		ms = 1000 // Redis's default
	}
	m.timeout = time.Duration(ms) * time.Millisecond
	m.keysAt = -1
	for i := 6; i < len(args) && m.keysAt < 0; i++ {
		switch strings.ToLower(string(args[i])) {
		case "copy":
			m.copy = true
		case "replace":
			m.replace = true
		case "auth":
			if i+1 >= len(args) {
				return m, false
			}
			m.password = string(args[i+1])
			i++
		case "auth2":
			if i+2 >= len(args) {
				return m, false
			}
			m.user, m.password = string(args[i+1]), string(args[i+2])
			i += 2
		case "keys":
			if len(args[3]) != 0 || i+1 >= len(args) {
				return m, false
			}
			m.keysAt = i
		default:
			return m, false
		}
	}
	if m.keysAt >= 0 {
		m.keys = args[m.keysAt+1:]
	} else {
		m.keys = args[3:4]
	}
	return m, true
}

// upMigrate runs MIGRATE in front of a cluster node: the cold keys among
// its keys are moved by Spillway (migrateCold), the others by the node
// (MIGRATE forwarded with those keys only). Every key is protected from
// demotion meanwhile, so none turns cold between the split and the
// forward. The reply is the node's, +OK when Spillway moved keys and the
// node found none of its own (+NOKEY), or Spillway's error when moving a
// cold key failed (the node's part is then not run, as MIGRATE stops at
// the first error).
func upMigrate(c *client, cmd *cmdtable.Command, args [][]byte) {
	m, ok := parseMigrate(args)
	if !c.f.cluster.Load() || c.pinned != nil || !ok {
		c.upRouteNow(cmd, args)
		return
	}
	idx := c.f.index(c.DB())
	hashes := make([]uint64, len(m.keys))
	for i, k := range m.keys {
		hashes[i] = codec.KeyHash(k)
		idx.Protect(hashes[i])
	}
	defer func() {
		for _, h := range hashes {
			idx.Unprotect(h)
		}
	}()
	var hot [][]byte
	moved := 0
	var conn *link.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for i, key := range m.keys {
		h := hashes[i]
		// A demotion started before the protection is waited out.
		c.lockKey(idx, h)
		if !idx.Has(h) {
			c.f.locks.Unlock(h)
			hot = append(hot, key)
			continue
		}
		done, err := c.migrateCold(idx, &m, &conn, key, h)
		c.f.locks.Unlock(h)
		if err != nil {
			c.Err(err.Error())
			return
		}
		if done {
			moved++
		} else {
			hot = append(hot, key)
		}
	}
	if len(hot) == 0 {
		if moved > 0 {
			c.w.OK()
		} else {
			c.w.Simple("NOKEY")
		}
		return
	}
	fwd := args
	if m.keysAt >= 0 && len(hot) < len(m.keys) {
		fwd = append(append([][]byte{}, args[:m.keysAt+1]...), hot...)
	}
	mark := c.w.Len()
	c.upForward(cmd, fwd)
	c.flushForwards()
	if moved > 0 && bytes.Equal(c.w.Buf[mark:], []byte("+NOKEY\r\n")) {
		c.w.Truncate(mark)
		c.w.OK()
	}
}

// migrateCold moves key's cold copy to the MIGRATE target: its RESTORE
// payload, built from the store, goes in RESTORE-ASKING (the target's slot
// is IMPORTING during a reshard), with the copy's absolute expiry and
// REPLACE when asked; then, unless COPY, the copy is dropped here. It
// reports false when the store has no live copy (the key is the node's).
// Errors are MIGRATE's: the target's refusal or a lost connection. The
// caller holds the key's lock.
func (c *client) migrateCold(idx *uptier.ColdIndex, m *migrateArgs, conn **link.Conn, key []byte, h uint64) (bool, error) {
	exp, ok, err := link.DumpKey(c.f.engine, c.DB(), key, &c.dump)
	if err != nil {
		return false, fmt.Errorf("ERR spillway could not read cold key '%s': %s", cstr.ErrArg(key), link.FirstLine(err.Error()))
	}
	if !ok {
		idx.Remove(h)
		return false, nil
	}
	if *conn == nil {
		t := link.Target{Addr: m.addr, Username: m.user, Password: m.password}
		cn, err := link.Dial(t, 2, m.db, m.timeout)
		if err != nil {
			return false, fmt.Errorf("IOERR error or timeout connecting to the client")
		}
		*conn = cn
	}
	cn := *conn
	a := [][]byte{[]byte("RESTORE-ASKING"), key, []byte("0"), c.dump.Finish()}
	if exp > 0 {
		a[2] = strconv.AppendInt(nil, exp, 10)
		a = append(a, []byte("ABSTTL"))
	}
	if m.replace {
		a = append(a, []byte("REPLACE"))
	}
	cn.SetDeadline(time.Now().Add(m.timeout))
	cn.SendArgs(a)
	var r []byte
	if err = cn.Flush(); err == nil {
		r, err = cn.Read()
	}
	cn.SetDeadline(time.Time{})
	if err != nil {
		cn.Close()
		*conn = nil
		return false, fmt.Errorf("IOERR error or timeout reading to target instance")
	}
	if link.IsError(r) {
		return false, fmt.Errorf("ERR Target instance replied with error: %s", link.ReplyText(r))
	}
	if m.copy {
		return true, nil
	}
	if err := uptier.DropKey(c.f.engine, c.DB(), key); err != nil {
		return false, fmt.Errorf("ERR spillway moved cold key '%s' but could not drop it: %s", cstr.ErrArg(key), link.FirstLine(err.Error()))
	}
	idx.Remove(h)
	c.f.follow.changed(c.DB(), key, false)
	return true, nil
}
