package commands

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/streams"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// DUMP, RESTORE and MIGRATE (Redis 7.0's dumpCommand, restoreCommand and
// migrateCommand in cluster.c). Payloads are RDB-serialized values with Redis 7.0's footer
// (RDB version 10, CRC-64): DUMP writes the plain RDB forms, which any
// Redis 5.0 to 7.x RESTOREs; RESTORE reads every form Redis 7.0 writes or
// loads (proxy/rdb.Decode).

func registerDump(t *server.Table) {
	t.Register("dump", cmdDump)
	t.Register("restore", cmdRestore)
	t.Register("migrate", cmdMigrate)
}

// Replies of RESTORE, as Redis 7.0 words them.
var (
	errBusyKey     = resp.Err("BUSYKEY Target key name already exists.")
	errBadPayload  = resp.Err("ERR DUMP payload version or checksum are wrong")
	errBadFormat   = resp.Err("ERR Bad data format")
	errNegativeTTL = resp.Err("ERR Invalid TTL value, must be >= 0")
	errIdleTime    = resp.Err("ERR Invalid IDLETIME value, must be >= 0")
	errFreq        = resp.Err("ERR Invalid FREQ value, must be >= 0 and <= 255")
)

// cmdDump is DUMP key: the key's value serialized (without its TTL), or a
// null if key does not exist. A cold structure is streamed from the store
// into the payload, never promoted.
func cmdDump(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.Peek(x.DB(), args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		var d rdb.Dump
		if err := writeValue(tx, x.DB(), args[1], e, &d); err != nil {
			return err
		}
		x.W.Bulk(d.Finish())
		return nil
	})
}

// writeValue writes key's value e to d: a stream through proxy/streams,
// anything else through the engine's ValueWriter.
func writeValue(tx *tiering.Tx, db int, key []byte, e *tiering.Entry, d *rdb.Dump) error {
	if e.Type == codec.TypeStream {
		return streams.Dump(tx, db, key, d)
	}
	return tx.WriteValue(db, key, e, d)
}

// restoreOpts are RESTORE's options after the payload.
type restoreOpts struct {
	replace, absTTL bool
	idle            int64 // IDLETIME in seconds, -1 if not given
	freq            int64 // FREQ, -1 if not given
}

// parseRestoreOpts parses REPLACE, ABSTTL, IDLETIME seconds and FREQ
// frequency as restoreCommand does: IDLETIME and FREQ exclude each other
// (the second one given is a syntax error), values are checked as read.
func parseRestoreOpts(args [][]byte) (restoreOpts, error) {
	o := restoreOpts{idle: -1, freq: -1}
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case cstr.EqualFold(args[j], "replace"):
			o.replace = true
		case cstr.EqualFold(args[j], "absttl"):
			o.absTTL = true
		case cstr.EqualFold(args[j], "idletime") && more && o.freq == -1:
			n, ok := cstr.ParseInt(args[j+1])
			if !ok {
				return o, resp.Err(strops.ErrNotInteger)
			}
			if n < 0 {
				return o, errIdleTime
			}
			o.idle = n
			j++
		case cstr.EqualFold(args[j], "freq") && more && o.idle == -1:
			n, ok := cstr.ParseInt(args[j+1])
			if !ok {
				return o, resp.Err(strops.ErrNotInteger)
			}
			if n < 0 || n > 255 {
				return o, errFreq
			}
			o.freq = n
			j++
		default:
			return o, resp.Err(strops.ErrSyntax)
		}
	}
	return o, nil
}

// cmdRestore is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f]: it creates key from a DUMP payload, with a TTL in milliseconds
// (0 for none; a unix time in ms with ABSTTL). Checks come in Redis's
// order: options, an existing key (BUSYKEY unless REPLACE), the TTL, the
// payload's footer, its value. A TTL already past deletes a replaced key
// and replies OK without creating it. Under an LFU maxmemory policy FREQ
// sets a hot key's LFU counter (OBJECT FREQ), otherwise IDLETIME backdates
// its access time (OBJECT IDLETIME); the other one is ignored, as in Redis.
//
// RESTORE is atomic as in Redis: the key appears whole or not at all. A
// value is written in the command's one transaction, except outside MULTI
// and scripts, where a payload of at least stagePayloadMin bytes is
// decoded before the lock is taken, and a hash, set, sorted set or list of
// tiering.StageMinItems or StageMinBytes is staged (restoreStaged): its
// records are written in bounded batches without the lock, then installed
// in one short transaction that runs the checks.
func cmdRestore(x *server.Ctx, args [][]byte) error {
	o, err := parseRestoreOpts(args[4:])
	if err != nil {
		return err
	}
	var pre *decoded
	if !x.InGroup() && len(args[3]) >= stagePayloadMin {
		obj, err := rdb.Decode(args[3])
		pre = &decoded{obj: obj, err: err}
		if err == nil && stageable(obj) {
			if done, err := restoreStaged(x, args, o, obj); done || err != nil {
				return err
			}
		}
	}
	return x.Update(func(tx *tiering.Tx) error { return restoreTx(x, tx, args, o, pre, nil) })
}

// stagePayloadMin is the payload size under which RESTORE decodes in its
// transaction and never stages: every element takes at least a byte or two
// of payload and LZF expands at most about a hundredfold, so a smaller
// payload cannot hold a value worth staging, and ordinary RESTOREs pay
// nothing for it.
const stagePayloadMin = 64 << 10

// decoded is a payload decoded before the transaction (rdb.Decode's
// results), its error reported at the payload's turn among the checks.
type decoded struct {
	obj *rdb.Object
	err error
}

// restoreTx is RESTORE's transaction: the checks in Redis's order, then
// the write, from obj (pre, or the payload decoded here) or from st, a
// Stage holding obj's records (nil: none).
func restoreTx(x *server.Ctx, tx *tiering.Tx, args [][]byte, o restoreOpts, pre *decoded, st *tiering.Stage) error {
	key := args[1]
	if !o.replace {
		e, err := tx.Peek(x.DB(), key)
		if err != nil {
			return err
		}
		if e != nil {
			return errBusyKey
		}
	}
	ttl, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err(strops.ErrNotInteger)
	}
	if ttl < 0 {
		return errNegativeTTL
	}
	if pre == nil {
		obj, err := rdb.Decode(args[3])
		pre = &decoded{obj: obj, err: err}
	}
	obj, err := pre.obj, pre.err
	switch {
	case errors.Is(err, rdb.ErrChecksum):
		return errBadPayload
	case err != nil:
		return errBadFormat
	}
	deleted := false
	if o.replace {
		if deleted, err = tx.Delete(x.DB(), key); err != nil {
			return err
		}
	}
	expireAt := ttl
	if ttl != 0 && !o.absTTL {
		expireAt = ttl + tx.Now() // wraps as Redis's long long sum does
	}
	if ttl != 0 && expireAt <= tx.Now() && !tx.ExpiredLive() {
		if deleted {
			x.Notify(server.NotifyGeneric, "del", key)
			if x.Replicating() {
				x.RewriteArgs(argDel, key)
			}
		}
		x.W.OK()
		return nil
	}
	if st != nil {
		err = tx.InstallStage(st, expireAt)
		if errors.Is(err, tiering.ErrStageStale) {
			// A SWAPDB or FLUSH moved or cleared the staged records'
			// database: write the value here instead (the staged records
			// are reclaimed).
			err = restoreValue(tx, x.DB(), key, obj, expireAt)
		}
	} else {
		err = restoreValue(tx, x.DB(), key, obj, expireAt)
	}
	if err != nil {
		return err
	}
	// objectSetLRUOrLFU: FREQ under an LFU policy, IDLETIME otherwise.
	switch lfu := lfuPolicy(x); {
	case lfu && o.freq >= 0:
		_, err = tx.SetFreq(x.DB(), key, uint8(o.freq))
	case !lfu && o.idle >= 0:
		// Redis's LRU clock wraps anyway; only keep the product finite.
		_, err = tx.SetIdleMillis(x.DB(), key, min(o.idle, 1<<40)*1000)
	}
	if err != nil {
		return err
	}
	x.Notify(server.NotifyNew, "new", key)
	x.Notify(server.NotifyGeneric, "restore", key)
	if ttl != 0 && !o.absTTL && x.Replicating() {
		// The time to live propagates as an absolute time.
		rw := append([][]byte{}, args...)
		rw[2] = intArg(expireAt)
		x.RewriteArgs(append(rw, []byte("ABSTTL"))...)
	}
	x.W.OK()
	return nil
}

// stageable reports whether obj is a structure big enough to stage
// (tiering.StageMinItems or StageMinBytes). Streams never are: they are
// written in the one transaction.
func stageable(obj *rdb.Object) bool {
	switch obj.Kind {
	case rdb.KindHash, rdb.KindSet, rdb.KindList, rdb.KindZSet:
	default:
		return false
	}
	n := len(obj.Items)
	if obj.Kind == rdb.KindHash {
		n /= 2
	}
	if n >= tiering.StageMinItems {
		return true
	}
	size := 0
	for _, it := range obj.Items {
		if size += len(it); size >= tiering.StageMinBytes {
			return true
		}
	}
	return false
}

// restoreStaged is RESTORE of a big structure: it checks, without writing,
// that the install will probably succeed (otherwise it returns done false
// and the one-transaction path replies the error), stages obj's records
// (tiering.Stage), then installs them in a transaction that runs every
// check again (restoreTx): RESTORE stays atomic, a failed install leaves
// the staged records to the reclaimer.
func restoreStaged(x *server.Ctx, args [][]byte, o restoreOpts, obj *rdb.Object) (done bool, err error) {
	db, key := x.DB(), args[1]
	ttl, ok := cstr.ParseInt(args[2])
	if !ok || ttl < 0 || o.absTTL && ttl != 0 && ttl <= time.Now().UnixMilli() {
		return false, nil
	}
	if !o.replace {
		exists := false
		if err := x.View(func(tx *tiering.Tx) error {
			e, err := tx.Peek(db, key)
			exists = e != nil
			return err
		}); err != nil || exists {
			return false, nil
		}
	}
	st, err := stageObject(x.Engine(), db, key, obj)
	if err != nil {
		return true, err
	}
	defer st.Close()
	pre := &decoded{obj: obj}
	return true, x.Update(func(tx *tiering.Tx) error { return restoreTx(x, tx, args, o, pre, st) })
}

// stageObject writes obj's records into a new Stage, committed.
func stageObject(eng *tiering.Engine, db int, key []byte, obj *rdb.Object) (*tiering.Stage, error) {
	t, records := codec.TypeList, uint64(len(obj.Items))
	switch obj.Kind {
	case rdb.KindHash:
		t, records = codec.TypeHash, records/2
	case rdb.KindSet:
		t = codec.TypeSet
	case rdb.KindZSet:
		t, records = codec.TypeZSet, 2*records
	}
	st, err := eng.NewStage(db, key, t, records)
	if err != nil {
		return nil, err
	}
	switch obj.Kind {
	case rdb.KindHash:
		for i := 0; i+1 < len(obj.Items) && err == nil; i += 2 {
			err = st.Field(obj.Items[i], obj.Items[i+1])
		}
	case rdb.KindSet:
		for i := 0; i < len(obj.Items) && err == nil; i++ {
			err = st.Field(obj.Items[i], nil)
		}
	case rdb.KindList:
		for i := 0; i < len(obj.Items) && err == nil; i++ {
			err = st.Push(obj.Items[i])
		}
	case rdb.KindZSet:
		st.SetSkiplist(zsetSkiplist(obj.Items))
		for i := 0; i < len(obj.Items) && err == nil; i++ {
			err = st.Member(obj.Items[i], obj.Scores[i])
		}
	}
	if err == nil {
		err = st.Flush()
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// zsetSkiplist reports whether Redis 7.0 loads a sorted set of these
// members as a skiplist: it loads a small one as a listpack, whatever
// encoding the payload held it in.
func zsetSkiplist(members [][]byte) bool {
	longest := 0
	for _, m := range members {
		longest = max(longest, len(m))
	}
	return len(members) > tiering.CompactZSetMembers || longest > tiering.CompactZSetMember
}

// restoreValue stores obj as key (absent) with the given expiry (unix ms, 0
// for none).
func restoreValue(tx *tiering.Tx, db int, key []byte, obj *rdb.Object, expireAt int64) error {
	var h closer
	switch obj.Kind {
	case rdb.KindString:
		return tx.SetString(db, key, obj.Str, expireAt)
	case rdb.KindHash, rdb.KindSet:
		t, step := codec.TypeHash, 2
		if obj.Kind == rdb.KindSet {
			t, step = codec.TypeSet, 1
		}
		c, err := tx.CreateColl(db, key, t)
		if err != nil {
			return err
		}
		for i := 0; i < len(obj.Items); i += step {
			var v []byte
			if step == 2 {
				v = obj.Items[i+1]
			}
			if _, err := c.Set(obj.Items[i], v); err != nil {
				return err
			}
		}
		h = c
	case rdb.KindList:
		l, err := tx.OpenList(db, key, true)
		if err != nil {
			return err
		}
		for _, v := range obj.Items {
			if err := l.Push(false, v); err != nil {
				return err
			}
		}
		h = l
	case rdb.KindZSet:
		z, err := tx.CreateZSet(db, key)
		if err != nil {
			return err
		}
		z.SetSkiplist(zsetSkiplist(obj.Items))
		for i, m := range obj.Items {
			if _, err := z.Add(m, obj.Scores[i]); err != nil {
				return err
			}
		}
		h = z
	case rdb.KindStream:
		if err := streams.Restore(tx, db, key, obj.Stream); err != nil {
			return errBadFormat // inconsistent groups, as Redis's checks find them
		}
		return restoreExpiry(tx, db, key, expireAt)
	default:
		return fmt.Errorf("restore: value of unknown kind %d", obj.Kind)
	}
	if err := h.Close(); err != nil {
		return err
	}
	return restoreExpiry(tx, db, key, expireAt)
}

func restoreExpiry(tx *tiering.Tx, db int, key []byte, expireAt int64) error {
	if expireAt != 0 {
		_, err := tx.SetExpire(db, key, expireAt)
		return err
	}
	return nil
}

// migrateOpts are MIGRATE's parsed arguments.
type migrateOpts struct {
	addr           string
	db, timeout    int64 // timeout in ms
	copy, replace  bool
	auth           bool
	user, password []byte // user is nil for AUTH password
	keys           [][]byte
}

// parseMigrate parses MIGRATE host port key|"" destination-db timeout
// [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key...]
// with migrateCommand's errors in its order: options, then the timeout and
// the database (integers; a timeout <= 0 means 1000 ms).
func parseMigrate(args [][]byte) (migrateOpts, error) {
	o := migrateOpts{addr: net.JoinHostPort(string(args[1]), string(args[2])), keys: args[3:4]}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case cstr.EqualFold(args[j], "copy"):
			o.copy = true
		case cstr.EqualFold(args[j], "replace"):
			o.replace = true
		case cstr.EqualFold(args[j], "auth"):
			if more < 1 {
				return o, resp.Err(strops.ErrSyntax)
			}
			j++
			o.auth, o.user, o.password = true, nil, args[j]
		case cstr.EqualFold(args[j], "auth2"):
			if more < 2 {
				return o, resp.Err(strops.ErrSyntax)
			}
			o.auth, o.user, o.password = true, args[j+1], args[j+2]
			j += 2
		case cstr.EqualFold(args[j], "keys"):
			if len(args[3]) != 0 {
				return o, resp.Err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
			}
			o.keys = args[j+1:]
			j = len(args)
		default:
			return o, resp.Err(strops.ErrSyntax)
		}
	}
	timeout, ok1 := cstr.ParseInt(args[5])
	db, ok2 := cstr.ParseInt(args[4])
	if !ok1 || !ok2 {
		return o, resp.Err(strops.ErrNotInteger)
	}
	if timeout <= 0 {
		timeout = 1000
	}
	o.timeout, o.db = timeout, db
	return o, nil
}

// Replies of MIGRATE on a network failure, as Redis 7.0 words them (a
// refused connection shows in Redis as a failed write).
var (
	errMigrateConnect = resp.Err("IOERR error or timeout connecting to the client")
	errMigrateWrite   = resp.Err("IOERR error or timeout writing to target instance")
	errMigrateRead    = resp.Err("IOERR error or timeout reading to target instance")
)

// cmdMigrate is MIGRATE: it sends the keys that exist (NOKEY if none) to
// another server as RESTORE commands (after AUTH and SELECT), with their
// remaining TTL, and deletes each key the target stored unless COPY. The
// first error the target replies is reported as "Target instance replied
// with error"; keys it accepted are still deleted. Each connect, write and
// read waits up to timeout ms.
//
// As in Redis, the command holds the keyspace (the engine lock) while it
// talks to the target, so that no write lands between a key's DUMP and
// its deletion; a new connection is made for every MIGRATE (Redis caches
// them for 10 s, which only saves the connect).
func cmdMigrate(x *server.Ctx, args [][]byte) error {
	o, err := parseMigrate(args)
	if err != nil {
		return err
	}
	return x.Update(func(tx *tiering.Tx) error {
		var out []byte
		if o.auth {
			auth := [][]byte{[]byte("AUTH"), o.password}
			if o.user != nil {
				auth = [][]byte{[]byte("AUTH"), o.user, o.password}
			}
			out = appendCommand(out, auth)
		}
		out = appendCommand(out, [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, o.db, 10)})
		head := 1 + int(b2i(o.auth)) // replies before the RESTOREs'
		var sent [][]byte
		var d rdb.Dump
		for _, k := range o.keys {
			e, err := tx.Peek(x.DB(), k)
			if err != nil {
				return err
			}
			if e == nil {
				continue
			}
			d.Reset()
			if err := writeValue(tx, x.DB(), k, e, &d); err != nil {
				return err
			}
			var ttl int64
			if e.ExpireAt != 0 {
				ttl = max(e.ExpireAt-tx.Now(), 1)
			}
			restore := [][]byte{[]byte("RESTORE"), k, strconv.AppendInt(nil, ttl, 10), d.Finish()}
			if o.replace {
				restore = append(restore, []byte("REPLACE"))
			}
			out = appendCommand(out, restore)
			sent = append(sent, k)
		}
		if len(sent) == 0 {
			x.W.Simple("NOKEY")
			return nil
		}
		replies, ioErr := migrateExchange(o, out, head+len(sent))
		var targetErr []byte
		headOK := len(replies) >= head
		for i, r := range replies {
			failed := len(r) > 0 && r[0] == '-'
			if failed && targetErr == nil {
				targetErr = r[1:]
			}
			if i < head {
				headOK = headOK && !failed
				continue
			}
			if failed || !headOK || o.copy {
				continue
			}
			k := sent[i-head]
			if _, err := tx.Delete(x.DB(), k); err != nil {
				return err
			}
			x.Notify(server.NotifyGeneric, "del", k)
		}
		switch {
		case targetErr != nil:
			return resp.Err("ERR Target instance replied with error: " + string(targetErr))
		case ioErr != nil:
			return ioErr
		}
		x.W.OK()
		return nil
	})
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args [][]byte) []byte {
	b = append(strconv.AppendInt(append(b, '*'), int64(len(args)), 10), '\r', '\n')
	for _, a := range args {
		b = append(strconv.AppendInt(append(b, '$'), int64(len(a)), 10), '\r', '\n')
		b = append(append(b, a...), '\r', '\n')
	}
	return b
}

// migrateExchange connects to the target, sends out and reads n one-line
// replies (syncReadLine: up to the newline, without the CRLF), each step
// within the timeout. It returns the replies read and, if it stopped
// early, MIGRATE's IOERR reply.
func migrateExchange(o migrateOpts, out []byte, n int) ([][]byte, error) {
	timeout := time.Duration(o.timeout) * time.Millisecond
	conn, err := net.DialTimeout("tcp", o.addr, timeout)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, errMigrateConnect
		}
		return nil, errMigrateWrite
	}
	defer conn.Close()
	for len(out) > 0 {
		chunk := out[:min(len(out), 64<<10)]
		conn.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := conn.Write(chunk); err != nil {
			return nil, errMigrateWrite
		}
		out = out[len(chunk):]
	}
	r := bufio.NewReader(conn)
	replies := make([][]byte, 0, n)
	for range n {
		conn.SetReadDeadline(time.Now().Add(timeout))
		line, err := r.ReadSlice('\n')
		if err != nil {
			return replies, errMigrateRead
		}
		replies = append(replies, bytes.Clone(bytes.TrimRight(line, "\r\n")))
	}
	return replies, nil
}
