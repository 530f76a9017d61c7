package tiering

import (
	"errors"
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// Staged writes: a structure too big for one transaction (RESTORE of a hash
// with millions of fields) is written ahead of its meta record, in batches
// of bounded size committed without the engine's lock, then installed in
// one short transaction.
//
// Contract:
//   - Engine.NewStage takes a new version and commits, first, a garbage
//     record naming (database, key, version): whatever happens next (a
//     crash, a failed check, a stage never installed), the reclaimer
//     removes the records written under that version. While any Stage is
//     open the background reclaimer does not run, so a marked version is
//     never reclaimed under a Stage that is still writing it.
//   - Field, Member and Push add records under that version, each encoded
//     by the function the type's normal writer uses (putField,
//     putZSetMember, putListElem), and commit a batch whenever it reaches
//     StageBatchBytes. No meta record names the version, so no reader sees
//     them. They run without the engine's lock; a Stage is not safe for
//     concurrent use.
//   - Tx.InstallStage, in one transaction, writes the meta record naming the
//     version and deletes the garbage record, in the transaction's batch:
//     the key appears whole or not at all. The key is cold afterwards. If a
//     SWAPDB, FLUSHDB or FLUSHALL ran since NewStage (the records' physical
//     database may be gone or mean another logical one) it writes nothing
//     and returns ErrStageStale.
//   - Close must be called once the transaction that installed the Stage
//     (or decided not to) has ended, committed or not: it lets the
//     reclaimer run again. A Stage not installed, or whose transaction did
//     not commit, is left to the reclaimer.
//
// Only hashes, sets, sorted sets and lists are staged; streams, whose
// records need the stream's own bookkeeping, are written in one transaction.

// Thresholds over which a value is worth staging rather than writing in
// the command's one transaction: a batch of that size takes tens of
// milliseconds to build and commit under the engine's lock, which every
// other client waits for. Below them a one-transaction write is cheaper
// (no marker, no second transaction) and short enough.
const (
	StageMinItems = 50_000  // elements, fields or members
	StageMinBytes = 4 << 20 // decoded bytes
)

// StageBatchBytes bounds what one staged batch holds (keys and values):
// small enough that committing it delays nobody much, big enough that a
// million records take a few hundred commits.
const StageBatchBytes = 1 << 20

// ErrStageStale is returned by InstallStage when the database mapping
// changed since the Stage was opened (SWAPDB, FLUSHDB, FLUSHALL): its
// records cannot be trusted to be complete or in the right database.
var ErrStageStale = errors.New("tiering: staged value went stale (SWAPDB or FLUSH meanwhile)")

// Stage is a structure being written ahead of its meta record (see the
// contract above).
type Stage struct {
	eng     *Engine
	db      int
	pdb     uint8
	gen     uint64
	key     []byte
	ent     Entry // Type, Version, Count, Bytes, Head, Tail, ZSkip
	marker  []byte
	b       *coldstore.Batch
	pending int
	kb, vb  []byte
	closed  bool
}

// NewStage opens a Stage for key (logical database db) of type t (hash,
// set, sorted set or list), expected to hold about records data records
// (a sorted set has two per member). It commits the garbage record that
// makes the version reclaimable. Call Close when done, whatever happens.
func (e *Engine) NewStage(db int, key []byte, t codec.Type, records uint64) (*Stage, error) {
	switch t {
	case codec.TypeHash, codec.TypeSet, codec.TypeZSet, codec.TypeList:
	default:
		return nil, fmt.Errorf("tiering: cannot stage a %s", t)
	}
	v, err := e.cold.NextVersion()
	if err != nil {
		return nil, fmt.Errorf("tiering: stage: %w", err)
	}
	s := &Stage{eng: e, db: db, key: append([]byte(nil), key...), b: e.cold.NewBatch()}
	s.ent = Entry{Type: t, Version: v}
	if t == codec.TypeList {
		s.ent.Head, s.ent.Tail = codec.ListStartIndex, codec.ListStartIndex
	}
	e.reclaimGate.RLock() // before the marker exists: see reclaimLoop
	_ = e.View(func(tx *Tx) error {
		s.pdb, s.gen = tx.pdb(db), e.layoutGen
		return nil
	})
	if s.marker, err = s.b.MarkGarbage(s.pdb, s.key, v, records); err == nil {
		_, err = s.b.Commit()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("tiering: stage marker: %w", err)
	}
	return s, nil
}

// Type returns the staged structure's type.
func (s *Stage) Type() codec.Type { return s.ent.Type }

// Len returns the number of elements staged so far.
func (s *Stage) Len() int64 { return s.ent.Count }

// Field stages a hash's field = val or a set's member (val nil). Fields
// must be distinct (a DUMP payload's are: the decoder checks).
func (s *Stage) Field(field, val []byte) error {
	var err error
	if s.kb, err = putField(s.b, s.kb, s.pdb, s.key, s.ent.Version, field, val, false); err != nil {
		return err
	}
	s.ent.Count++
	s.ent.Bytes += fieldBytes(field, val)
	return s.wrote(len(s.kb) + len(val))
}

// SetSkiplist records whether Redis would hold the staged sorted set in its
// skiplist encoding (ZSet.SetSkiplist). Set it before the members: a set
// in the compact encoding keeps no -0.
func (s *Stage) SetSkiplist(skiplist bool) { s.ent.ZSkip = skiplist }

// Member stages a sorted set's member with its score (not NaN). Members
// must be distinct.
func (s *Stage) Member(member []byte, score float64) error {
	if score == 0 && !s.ent.ZSkip {
		score = 0 // as ZSet.Put: the compact encoding has no -0
	}
	var err error
	s.kb, s.vb, err = putZSetMember(s.b, s.kb, s.vb, s.pdb, s.key, s.ent.Version, member, score, false, false)
	if err != nil {
		return err
	}
	s.ent.Count++
	s.ent.Bytes += zsetRecordBytes(member)
	return s.wrote(2*len(s.kb) + len(s.vb))
}

// Push stages a list's next element, at the tail.
func (s *Stage) Push(val []byte) error {
	var err error
	if s.kb, err = putListElem(s.b, s.kb, s.pdb, s.key, s.ent.Version, s.ent.Tail, val); err != nil {
		return err
	}
	s.ent.Tail++
	s.ent.Count++
	s.ent.Bytes += int64(len(val))
	return s.wrote(len(s.kb) + len(val))
}

// wrote counts n bytes into the open batch and commits it at
// StageBatchBytes.
func (s *Stage) wrote(n int) error {
	s.pending += n
	if s.pending < StageBatchBytes {
		return nil
	}
	return s.Flush()
}

// Flush commits what was staged since the last commit, without the engine's
// lock. InstallStage flushes too, but calling Flush first keeps that last
// commit out of the install's transaction.
func (s *Stage) Flush() error {
	s.pending = 0
	if _, err := s.b.Commit(); err != nil {
		return fmt.Errorf("tiering: stage %q: %w", s.key, err)
	}
	return nil
}

// InstallStage makes the staged structure key's value, with expiry expireAt
// (unix ms, 0 for none), in this transaction: its meta record, the key and
// expiry counts, the deletion of the Stage's garbage record, and a list or
// sorted set noted ready for the clients blocked on it (Tx.TakeReady). key must
// not exist (the caller checks or deletes it first, in this transaction);
// an empty Stage installs nothing. It returns ErrStageStale, writing
// nothing, if the database mapping changed since NewStage.
func (tx *Tx) InstallStage(s *Stage, expireAt int64) error {
	if s.eng != tx.e || s.closed {
		return errors.New("tiering: install of a closed or foreign stage")
	}
	if tx.pdb(s.db) != s.pdb || tx.e.layoutGen != s.gen {
		return ErrStageStale
	}
	if err := s.Flush(); err != nil {
		return err
	}
	if s.ent.Count == 0 {
		return nil
	}
	old, _, err := tx.live(s.pdb, s.key)
	if err != nil {
		return err
	}
	if old != nil {
		return fmt.Errorf("tiering: install of staged %q over an existing key", s.key)
	}
	tx.hk = hotKey(tx.hk, s.pdb, s.key)
	e := new(Entry)
	*e = s.ent
	e.ExpireAt = expireAt
	if err := tx.write(s.pdb, s.key, nil, e); err != nil {
		return err
	}
	tx.noteWritten(s.db, s.key, e) // clients blocked on a list or sorted set
	return tx.batch.Delete(s.marker)
}

// Close ends the Stage: what is not committed is dropped and the
// reclaimer may run again. Call it after the transaction that installed the
// Stage has ended (never inside it), or to give the Stage up: its records
// are then reclaimed. Closing twice does nothing.
func (s *Stage) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.b.Abort()
	s.eng.reclaimGate.RUnlock()
}
