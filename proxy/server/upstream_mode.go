package server

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/upstream"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/uptier"
)

// upMode is the server's upstream-mode state: the upstream Redis is the hot
// tier, the engine (with no hot tier of its own) holds the cold copies,
// and the index says which keys have one.
type upMode struct {
	pool      *upstream.Pool
	demoter   *uptier.Demoter
	locks     uptier.KeyLocks
	gate      uptier.Gate
	defaultDB int
	// indexes holds one cold index per database; SWAPDB swaps them.
	indexes []atomic.Pointer[uptier.ColdIndex]

	// admission is the promotion policy for reads of cold keys.
	admission *tiering.Admission

	// ctl holds one control connection per database, for the requests
	// Spillway makes on its own behalf (reloads, INFO...).
	ctlMu sync.Mutex
	ctl   map[int]*upstream.Conn

	// census is held shared by whatever briefly has a key in both tiers
	// (a demotion between its store write and its UNLINK, a reload between
	// RESTORE and the drop) and exclusively by the commands that count or
	// list both tiers, which then see every key once.
	census sync.RWMutex

	reloads, reloadConflicts, coldReads atomic.Int64

	// local holds the commands Spillway answers itself (upLocalTable).
	local map[*cmdtable.Command]Handler
}

// UpstreamOptions configure upstream mode.
type UpstreamOptions struct {
	Target     upstream.Target
	SharedConn int
}

// EnableUpstream switches the server to upstream mode: connects the pool,
// builds the cold index from the store (logging progress), reconciles
// keys found in both tiers when the last shutdown was not clean, and starts
// the demoter. The engine must have been opened with no hot budget.
func (s *Server) EnableUpstream(opts UpstreamOptions, cleanShutdown bool) error {
	u := &upMode{defaultDB: opts.Target.DB, ctl: map[int]*upstream.Conn{}, local: upLocalTable(s.table)}
	n := s.engine.Databases()
	if opts.Target.DB >= n {
		return fmt.Errorf("upstream db %d is out of range (databases %d)", opts.Target.DB, n)
	}
	u.indexes = make([]atomic.Pointer[uptier.ColdIndex], n)
	for i := range u.indexes {
		u.indexes[i].Store(uptier.NewColdIndex())
	}
	u.admission = tiering.NewAdmission(s.reloadSettings)
	u.pool = upstream.NewPool(upstream.Options{Target: opts.Target, Shared: opts.SharedConn, Logger: s.log})
	s.up = u
	if err := s.buildIndex(); err != nil {
		u.pool.Close()
		return err
	}
	if !cleanShutdown {
		if err := s.reconcile(); err != nil {
			s.log.Warn("could not reconcile the tiers after an unclean shutdown; keys in both are resolved when touched", "err", err)
		}
	}
	u.demoter = uptier.NewDemoter(uptier.DemoterOptions{
		Budget:    func() int64 { return s.cfg.MaxMemory() },
		Databases: n,
		Census:    &u.census,
		Logger:    s.log,
	}, u.pool.ForPolicy(), s.engine, u.index, &u.locks, &u.gate)
	u.demoter.Start()
	return nil
}

// index returns db's cold index.
func (u *upMode) index(db int) *uptier.ColdIndex { return u.indexes[db].Load() }

// CloseUpstream stops the demoter and closes the upstream connections.
func (s *Server) CloseUpstream() {
	u := s.up
	if u == nil {
		return
	}
	u.demoter.Stop()
	u.pool.Close()
	u.ctlMu.Lock()
	for _, c := range u.ctl {
		c.Close()
	}
	u.ctl = map[int]*upstream.Conn{}
	u.ctlMu.Unlock()
}

// buildIndex adds every key of the cold store to the index.
func (s *Server) buildIndex() error {
	start := time.Now()
	var total int64
	for db := range s.up.indexes {
		idx := s.up.index(db)
		tx := s.engine.Begin()
		_, err := tx.Keys(db, func(k []byte) bool {
			idx.Add(codec.KeyHash(k))
			total++
			if total%1_000_000 == 0 {
				s.log.Info("building the cold index", "keys", total, "elapsed", time.Since(start).Round(time.Millisecond))
			}
			return false
		})
		tx.Abort()
		if err != nil {
			return fmt.Errorf("cold index: %w", err)
		}
	}
	s.log.Info("cold index built", "cold_keys", total, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// reconcile drops the cold copies of keys the upstream also holds: after a
// crash between a demotion's store write and its UNLINK (or a reload's
// RESTORE and its drop), the upstream's copy is the current one.
func (s *Server) reconcile() error {
	start := time.Now()
	var checked, dropped int64
	for db := range s.up.indexes {
		var cursor uint64
		for {
			tx := s.engine.Begin()
			keys, next, err := tx.Scan(db, cursor, tiering.ScanOptions{Count: 1000}, nil)
			tx.Abort()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				c, err := s.up.ctlConn(db)
				if err != nil {
					return err
				}
				for _, k := range keys {
					c.SendArgs([][]byte{[]byte("EXISTS"), k})
				}
				if err := c.Flush(); err != nil {
					s.up.dropCtl(db)
					return err
				}
				for _, k := range keys {
					r, err := c.Read()
					if err != nil {
						s.up.dropCtl(db)
						return err
					}
					if n, _ := upstream.IntReply(r); n == 1 {
						if err := uptier.DropKey(s.engine, db, k); err != nil {
							return err
						}
						s.up.index(db).Remove(codec.KeyHash(k))
						dropped++
					}
				}
				checked += int64(len(keys))
				if checked%100_000 < int64(len(keys)) {
					s.log.Info("reconciling tiers after an unclean shutdown", "checked", checked, "dropped", dropped)
				}
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	s.log.Info("tiers reconciled after an unclean shutdown", "cold_keys_checked", checked,
		"cold_copies_dropped", dropped, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// ctlConn returns the control connection on db (RESP2), dialing it if
// needed. Callers serialize on ctlMu through ctlDo, or own the connection
// during startup.
func (u *upMode) ctlConn(db int) (*upstream.Conn, error) {
	if c := u.ctl[db]; c != nil {
		return c, nil
	}
	c, err := u.pool.Dial(2, db)
	if err != nil {
		return nil, err
	}
	u.ctl[db] = c
	return c, nil
}

func (u *upMode) dropCtl(db int) {
	if c := u.ctl[db]; c != nil {
		c.Close()
		delete(u.ctl, db)
	}
}

// ctlDo sends one command on db's control connection and returns a copy of
// the reply.
func (u *upMode) ctlDo(db int, args [][]byte) ([]byte, error) {
	u.ctlMu.Lock()
	defer u.ctlMu.Unlock()
	c, err := u.ctlConn(db)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	c.SendArgs(args)
	if err := c.Flush(); err != nil {
		u.dropCtl(db)
		return nil, fmt.Errorf("%w: %v", upstream.ErrUnavailable, err)
	}
	r, err := c.Read()
	if err != nil {
		u.dropCtl(db)
		return nil, fmt.Errorf("%w: %v", upstream.ErrUnavailable, err)
	}
	return append([]byte(nil), r...), nil
}

// admitReload is the promotion policy for reads of cold keys, as in
// embedded mode (tiering.Admission): values over cold-read-max-bytes or an
// eighth of the budget are always served from disk; others are reloaded on
// their promote-min-hits-th read within the admission window.
func (s *Server) admitReload(h uint64, size int64) bool {
	return s.up.admission.Admit(h, size)
}

// reloadSettings are the reload policy's settings, read from the
// configuration on every decision. A maxmemory of 0 (no budget) sets no
// size limit but cold-read-max-bytes.
func (s *Server) reloadSettings() tiering.AdmissionSettings {
	b := s.cfg.MaxMemory()
	if b <= 0 {
		b = math.MaxInt64
	}
	return tiering.AdmissionSettings{MinHits: s.cfg.PromoteMinHits(), ColdReadMax: s.cfg.ColdReadMaxBytes(), HotBudget: b}
}
