package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/uptier"
)

// The follower's side of the cold feed (cluster_follow.go): a cluster
// replica's sidecar applying its primary's sidecar's frames to its own
// store.

// followLoop follows addr's cold store until stop is closed, dialing
// again after a failure.
func (cf *clusterFollow) followLoop(addr string, stop chan struct{}) {
	defer cf.wg.Done()
	for {
		err := cf.followOnce(addr, stop)
		select {
		case <-stop:
			return
		case <-cf.stop:
			return
		case <-time.After(rolePoll):
		}
		if err != nil {
			cf.f.log.Info("cold follow interrupted; retrying", "leader", addr, "err", err)
		}
	}
}

// followOnce runs one feed from addr.
func (cf *clusterFollow) followOnce(addr string, stop chan struct{}) error {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
		case <-cf.stop:
		case <-done:
		}
		nc.Close()
	}()
	bw := bufio.NewWriter(nc)
	rd := resp.NewReplyReader(bufio.NewReaderSize(nc, 64<<10))
	// ask sends one handshake command and fails on an error reply.
	ask := func(args []string, refused string) error {
		bw.Write(link.AppendCommandStrings(nil, args))
		if err := bw.Flush(); err != nil {
			return err
		}
		r, err := rd.Read()
		if err != nil {
			return err
		}
		if link.IsError(r) {
			return fmt.Errorf("%s: %s", refused, link.ReplyText(r))
		}
		return nil
	}
	if auth := cf.f.followAuth(); auth != nil {
		// The leader is a sidecar like this one: with requirepass (or
		// users) it wants the AUTH a replica sends its master.
		if err := ask(auth, "unable to AUTH to the primary's sidecar"); err != nil {
			return err
		}
	}
	if err := ask([]string{"REPLCONF", coldFollowOption}, "leader refused the cold feed"); err != nil {
		return err
	}
	cf.f.log.Info("following the primary's sidecar's cold store", "leader", addr)
	for {
		r, err := rd.Read()
		if err != nil {
			return err
		}
		args, err := link.ParseBulks(r)
		if err != nil || len(args) == 0 {
			return fmt.Errorf("bad cold feed frame")
		}
		ack, err := cf.f.applyFeed(cf, args)
		if err != nil {
			return err
		}
		if ack != "" {
			bw.WriteString(":" + ack + "\r\n")
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}

// followAuth is the AUTH the follower sends its leader first, from
// masterauth and masteruser as a Redis replica's to its master, or nil
// when masterauth is empty.
func (f *Front) followAuth() []string {
	pass, _ := f.cfg.Value("masterauth")
	if pass == "" {
		return nil
	}
	if user, _ := f.cfg.Value("masteruser"); user != "" {
		return []string{"AUTH", user, pass}
	}
	return []string{"AUTH", pass}
}

// applyFeed applies one frame of the feed to the follower's store; for a
// MARK it returns the sequence to acknowledge.
func (f *Front) applyFeed(cf *clusterFollow, a [][]byte) (string, error) {
	db := 0
	if len(a) > 1 && string(a[0]) != "MARK" { // every other frame's first argument is a database
		n, err := strconv.Atoi(string(a[1]))
		if err != nil || n < -1 || n >= len(f.indexes) {
			return "", fmt.Errorf("bad database in cold feed frame")
		}
		db = n
	}
	switch string(a[0]) {
	case "RESET":
		cf.mu.Lock()
		clear(cf.pending)
		cf.copied = map[dbKey]struct{}{}
		cf.mu.Unlock()
		return "", nil
	case "END":
		return "", f.endFullCopy(cf)
	case "FLUSH":
		cf.mu.Lock()
		for k := range cf.pending {
			if db < 0 || k.db == db {
				delete(cf.pending, k)
			}
		}
		cf.mu.Unlock()
		return "", f.flushFollowed(db)
	case "MARK":
		if len(a) != 2 {
			break
		}
		if err := f.engine.Cold().SyncWAL(); err != nil {
			return "", err
		}
		return string(a[1]), nil
	case "DEL":
		if len(a) != 3 {
			break
		}
		cf.cancelPending(db, a[2])
		return "", f.dropFollowed(db, a[2])
	case "DELAFTER":
		if len(a) != 4 {
			break
		}
		off, err := strconv.ParseInt(string(a[3]), 10, 64)
		if err != nil {
			break
		}
		cf.mu.Lock()
		cf.pending[dbKey{db, string(a[2])}] = off
		cf.mu.Unlock()
		return "", nil
	case "SET":
		if len(a) != 5 {
			break
		}
		exp, err := strconv.ParseInt(string(a[3]), 10, 64)
		if err != nil {
			break
		}
		cf.cancelPending(db, a[2])
		cf.mu.Lock()
		if cf.copied != nil {
			cf.copied[dbKey{db, string(a[2])}] = struct{}{}
		}
		cf.mu.Unlock()
		return "", f.storeFollowed(db, a[2], exp, a[4])
	}
	return "", fmt.Errorf("bad cold feed frame %q", a[0])
}

// endFullCopy drops the cold keys the full copy did not name: the
// leader has no copy of them.
func (f *Front) endFullCopy(cf *clusterFollow) error {
	cf.mu.Lock()
	copied := cf.copied
	cf.copied = nil
	cf.mu.Unlock()
	if copied == nil {
		return errors.New("cold feed: END without RESET")
	}
	var dropped int
	for db := range f.indexes {
		var stale [][]byte
		err := uptier.ColdKeysInSlot(f.engine, db, -1, func(k []byte) bool {
			if _, ok := copied[dbKey{db, string(k)}]; !ok {
				stale = append(stale, k)
			}
			return true
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := f.dropFollowed(db, k); err != nil {
				return err
			}
		}
		dropped += len(stale)
	}
	f.log.Info("cold store copied from the primary's sidecar", "keys", len(copied), "stale_dropped", dropped)
	return nil
}

// storeFollowed writes a key's cold copy received from the leader.
func (f *Front) storeFollowed(db int, key []byte, exp int64, payload []byte) error {
	v, err := valueFromPayload(key, exp, payload)
	if err != nil {
		return err
	}
	h := codec.KeyHash(key)
	idx := f.index(db)
	f.locks.Lock(h)
	defer f.locks.Unlock(h)
	f.census.RLock()
	defer f.census.RUnlock()
	if err := uptier.Import(f.engine, db, []*uptier.Value{v}); err != nil {
		return err
	}
	idx.Add(h)
	f.slots.Demoted(db, [][]byte{key})
	return nil
}

// dropFollowed drops a key's cold copy on the leader's word.
func (f *Front) dropFollowed(db int, key []byte) error {
	h := codec.KeyHash(key)
	f.locks.Lock(h)
	defer f.locks.Unlock(h)
	return f.dropFollowedLocked(db, key, h)
}

// dropFollowedLocked is dropFollowed with key's lock (hash h) held.
func (f *Front) dropFollowedLocked(db int, key []byte, h uint64) error {
	if err := uptier.DropKey(f.engine, db, key); err != nil {
		return err
	}
	f.index(db).Remove(h)
	return nil
}

// dropDue drops k's cold copy if its DELAFTER is still pending and due at
// offset (applyPending). The check and the drop hold the key's lock, which
// storeFollowed takes too: a SET read from the feed either cancelled the
// drop before the check, or stores its copy after the drop.
func (f *Front) dropDue(cf *clusterFollow, k dbKey, offset int64) error {
	key := []byte(k.key)
	h := codec.KeyHash(key)
	f.locks.Lock(h)
	defer f.locks.Unlock(h)
	cf.mu.Lock()
	off, ok := cf.pending[k]
	due := ok && off <= offset
	if due {
		delete(cf.pending, k)
	}
	cf.mu.Unlock()
	if !due {
		return nil
	}
	return f.dropFollowedLocked(k.db, key, h)
}

// flushFollowed drops every cold key of db (-1: of every database).
func (f *Front) flushFollowed(db int) error {
	f.census.Lock()
	defer f.census.Unlock()
	_, err := f.engine.Update(func(tx *tiering.Tx) error {
		if db < 0 {
			return tx.FlushAll()
		}
		return tx.FlushDB(db)
	})
	if err != nil {
		return err
	}
	for i := range f.indexes {
		if db < 0 || i == db {
			f.index(i).Clear()
		}
	}
	return nil
}

// valueFromPayload decodes a RESTORE payload of the feed into the value
// the store imports.
func valueFromPayload(key []byte, exp int64, payload []byte) (*uptier.Value, error) {
	o, err := rdb.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("cold feed: key %q: %w", key, err)
	}
	v := &uptier.Value{Key: key, ExpireAt: exp}
	switch o.Kind {
	case rdb.KindString:
		v.Type, v.Str = codec.TypeString, o.Str
	case rdb.KindList:
		v.Type, v.Elems = codec.TypeList, o.Items
	case rdb.KindSet:
		v.Type, v.Elems = codec.TypeSet, o.Items
	case rdb.KindHash:
		v.Type, v.Elems = codec.TypeHash, o.Items
	case rdb.KindZSet:
		v.Type, v.Members, v.Scores = codec.TypeZSet, o.Items, o.Scores
	case rdb.KindStream:
		s, err := rdbfile.StreamModel(o.Stream, false)
		if err != nil {
			return nil, fmt.Errorf("cold feed: key %q: %w", key, err)
		}
		v.Type, v.Stream = codec.TypeStream, s
	default:
		return nil, fmt.Errorf("cold feed: key %q: unknown kind %d", key, o.Kind)
	}
	return v, nil
}

// cancelPending forgets a DELAFTER drop of key: the leader sent a newer
// state of it.
func (cf *clusterFollow) cancelPending(db int, key []byte) {
	cf.mu.Lock()
	delete(cf.pending, dbKey{db, string(key)})
	cf.mu.Unlock()
}
