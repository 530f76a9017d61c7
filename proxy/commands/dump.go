package commands

import (
	"errors"
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// DUMP and RESTORE (Redis 7.0's dumpCommand and restoreCommand in
// cluster.c). Payloads are RDB-serialized values with Redis 7.0's footer
// (RDB version 10, CRC-64): DUMP writes the plain RDB forms, which any
// Redis 5.0 to 7.x RESTOREs; RESTORE reads every form Redis 7.0 writes or
// loads (proxy/rdb.Decode).

func registerDump(t *server.Table) {
	t.Register("dump", cmdDump)
	t.Register("restore", cmdRestore)
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
		if err := dumpValue(tx, x.DB(), args[1], e, &d); err != nil {
			return err
		}
		x.W.Bulk(d.Finish())
		return nil
	})
}

// dumpValue writes the value of e, key's live entry, into d.
func dumpValue(tx *tiering.Tx, db int, key []byte, e *tiering.Entry, d *rdb.Dump) error {
	var got int64
	var err error
	switch e.Type {
	case codec.TypeString:
		d.String(e.Str)
		return nil
	case codec.TypeHash, codec.TypeSet:
		hash := e.Type == codec.TypeHash
		if hash {
			d.BeginHash(int(e.Count))
		} else {
			d.BeginSet(int(e.Count))
		}
		err = tx.PeekColl(db, key, e).Each(func(f, v []byte) bool {
			if got++; got > e.Count {
				return false
			}
			if hash {
				d.Pair(f, v)
			} else {
				d.Elem(f)
			}
			return true
		})
	case codec.TypeList:
		d.BeginList(int(e.Count))
		err = tx.PeekList(db, key, e).Range(0, e.Count-1, false, func(_ int64, v []byte) bool {
			if got++; got > e.Count {
				return false
			}
			d.Elem(v)
			return true
		})
	case codec.TypeZSet:
		d.BeginZSet(int(e.Count))
		err = tx.PeekZSet(db, key, e).Members(func(m []byte, score float64) bool {
			if got++; got > e.Count {
				return false
			}
			d.ZElem(m, score)
			return true
		})
	default:
		return fmt.Errorf("%w: %q has unknown type %d", tiering.ErrCorrupt, key, e.Type)
	}
	// A count that disagrees with the elements stored is a corrupt store;
	// the payload would be refused by every RESTORE.
	return streamed(key, e.Count, got, err)
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
// The value is written in the command's one transaction, so RESTORE stays
// atomic as in Redis: a big structure is decoded whole (the payload is in
// memory already), then written field by field into the batch.
func cmdRestore(x *server.Ctx, args [][]byte) error {
	o, err := parseRestoreOpts(args[4:])
	if err != nil {
		return err
	}
	key := args[1]
	return x.Update(func(tx *tiering.Tx) error {
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
		obj, err := rdb.Decode(args[3])
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
		if ttl != 0 && expireAt <= tx.Now() {
			if deleted {
				x.Notify(server.NotifyGeneric, "del", key)
			}
			x.W.OK()
			return nil
		}
		if err := restoreValue(tx, x.DB(), key, obj, expireAt); err != nil {
			return err
		}
		// objectSetLRUOrLFU: FREQ under an LFU policy, IDLETIME otherwise.
		switch lfu := lfuPolicy(x); {
		case lfu && o.freq >= 0:
			_, err = tx.SetFreq(x.DB(), key, uint8(o.freq))
		case !lfu && o.idle >= 0:
			_, err = tx.SetIdleMillis(x.DB(), key, o.idle*1000)
		}
		if err != nil {
			return err
		}
		x.Notify(server.NotifyNew, "new", key)
		x.Notify(server.NotifyGeneric, "restore", key)
		x.W.OK()
		return nil
	})
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
		longest := 0
		for _, m := range obj.Items {
			longest = max(longest, len(m))
		}
		// Redis 7.0 loads a small sorted set as a listpack, whatever
		// encoding the payload held it in.
		z.SetSkiplist(len(obj.Items) > tiering.CompactZSetMembers || longest > tiering.CompactZSetMember)
		for i, m := range obj.Items {
			if _, err := z.Add(m, obj.Scores[i]); err != nil {
				return err
			}
		}
		h = z
	default:
		return fmt.Errorf("restore: value of unknown kind %d", obj.Kind)
	}
	if err := h.Close(); err != nil {
		return err
	}
	if expireAt != 0 {
		_, err := tx.SetExpire(db, key, expireAt)
		return err
	}
	return nil
}
