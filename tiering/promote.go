package tiering

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/spillway/spillway/codec"
)

// Big structures are promoted in steps, so that no command holds the
// engine's lock for long and memory grows toward the budget gradually, with
// demotion running between steps. Demotion needs no steps: the store always
// holds every field (write-through), so it only drops the hot copy.
const (
	promoteStepFields = 1000
	promoteStepBytes  = 1 << 20
	promoteQueueLen   = 64
)

// loadState is the progress of a stepwise promotion: fields up to cursor
// (hash | field, in the store's order) are in the entry's partial copy.
type loadState struct {
	cursor []byte
}

// covers reports whether field sorts at or before the cursor, i.e. whether
// the partial copy already holds (and must track writes to) it.
func (l *loadState) covers(field []byte) bool {
	if l.cursor == nil {
		return false
	}
	h, ch := codec.FieldHash(field), binary.BigEndian.Uint32(l.cursor)
	if h != ch {
		return h < ch
	}
	return bytes.Compare(field, l.cursor[4:]) <= 0
}

// promoteJob is a structure being promoted in steps.
type promoteJob struct {
	pdb uint8
	key []byte
	hk  []byte
	e   *Entry
}

// needsSteps reports whether promoting e takes more than one step.
func needsSteps(e *Entry) bool {
	return e.Count > promoteStepFields || e.Bytes > promoteStepBytes
}

// startPromotion puts e in the hot tier as a partial copy and queues its
// loading. It reports false (e stays cold) if the queue is full.
func (tx *Tx) startPromotion(pdb uint8, key []byte, e *Entry) bool {
	j := promoteJob{pdb: pdb, key: bytes.Clone(key), hk: bytes.Clone(tx.hk), e: e}
	e.fields, e.loading = newFieldMap(0), &loadState{}
	select {
	case tx.e.promoteQ <- j:
		e.access = tx.now
		e.hits, tx.e.admitted = tx.e.admitted, 0
		tx.e.hot.put(j.hk, e)
		return true
	default:
		e.fields, e.loading = nil, nil
		return false
	}
}

// promoteLoop runs queued stepwise promotions, one step per lock hold.
func (e *Engine) promoteLoop() {
	defer e.wg.Done()
	for {
		select {
		case <-e.stop:
			return
		case j := <-e.promoteQ:
			for {
				tx := e.begin()
				done, err := tx.promoteStep(&j)
				tx.abort()
				if err != nil {
					e.opts.Logger.Error("stepwise promotion abandoned", "key", string(j.key), "err", err)
				}
				if done || err != nil {
					break
				}
				select {
				case <-e.stop:
					return
				default:
				}
			}
		}
	}
}

// promoteStep loads the next step of j's fields. It reports done when the
// structure is complete, or abandoned because it left the hot tier
// (demoted, deleted or replaced) meanwhile.
func (tx *Tx) promoteStep(j *promoteJob) (done bool, err error) {
	e := j.e
	if cur, ok := tx.e.hot.peek(j.hk); !ok || cur != e || e.loading == nil {
		return true, nil
	}
	defer func() {
		if err != nil {
			tx.e.hot.remove(j.hk)
			e.fields, e.loading = nil, nil
		}
	}()
	lo := codec.AppendFieldPrefix(nil, j.pdb, j.key, e.Version)
	it, err := tx.batch.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		return true, err
	}
	defer it.Close()
	seek := lo
	if e.loading.cursor != nil {
		seek = append(append(bytes.Clone(lo), e.loading.cursor...), 0)
	}
	n, size := 0, 0
	valid := it.SeekGE(seek)
	for ; valid && n < promoteStepFields && size < promoteStepBytes; valid = it.Next() {
		_, field, val, err := fieldOf(it, len(lo))
		if err != nil {
			return true, fmt.Errorf("tiering: %q: %w", j.key, err)
		}
		e.fields.set(field, val)
		e.loading.cursor = append(e.loading.cursor[:0], it.Key()[len(lo):]...)
		n++
		size += len(field) + len(val)
	}
	if err := it.Error(); err != nil {
		return true, err
	}
	if !valid {
		if int64(e.fields.len()) != e.Count || e.fields.bytes != e.Bytes {
			return true, fmt.Errorf("%w: %q counts %d fields, %d stored", ErrCorrupt, j.key, e.Count, e.fields.len())
		}
		e.loading = nil
		tx.e.Stats.Promotions.Add(1)
		tx.e.Stats.SteppedPromotions.Add(1)
	}
	tx.e.hot.resize(j.hk, e)
	tx.e.demoteOverBudget()
	return !valid, nil
}
