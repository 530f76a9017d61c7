package streams

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// DUMP and RESTORE of streams (proxy/commands' DUMP, RESTORE and MIGRATE
// call these for stream values).

// Dump writes key's stream (database db) to d as a Redis 7.0 payload
// (RDB_TYPE_STREAM_LISTPACKS_2): its nodes with their live entries, its
// meta fields, groups, consumers and pending entries.
func Dump(tx *tiering.Tx, db int, key []byte, d *rdb.Dump) error {
	s, err := tx.OpenStream(db, key, false)
	if err != nil || s == nil {
		return err
	}
	v := &rdb.Stream{Length: uint64(s.Len()), Last: rdbID(s.Last), First: rdbID(s.First),
		MaxDeleted: rdbID(s.MaxDeleted), EntriesAdded: s.EntriesAdded}
	for _, n := range s.NodeList() {
		rn := rdb.StreamNode{Master: rdbID(n.Master), Fields: n.Fields}
		s.Range(n.Master, n.Last, false, func(e *stream.Entry) bool {
			rn.Entries = append(rn.Entries, rdb.StreamEntry{ID: rdbID(e.ID), Fields: e.Fields})
			return true
		})
		v.Nodes = append(v.Nodes, rn)
	}
	for _, g := range s.Groups() {
		rg := rdb.StreamGroup{Name: g.Name, LastID: rdbID(g.LastID), EntriesRead: g.EntriesRead}
		index := make(map[*stream.Consumer]int, len(g.Consumers()))
		for i, c := range g.Consumers() {
			index[c] = i
			rg.Consumers = append(rg.Consumers, rdb.StreamConsumer{Name: c.Name, SeenTime: c.SeenTime})
		}
		for _, p := range g.PEL() {
			rg.PEL = append(rg.PEL, rdb.StreamNACK{ID: rdbID(p.ID), DeliveryTime: p.DeliveryTime,
				DeliveryCount: uint64(p.DeliveryCount), Consumer: index[p.Consumer]})
		}
		v.Groups = append(v.Groups, rg)
	}
	if err := s.Close(); err != nil {
		return err
	}
	d.Stream(v)
	return nil
}

func rdbID(id stream.ID) rdb.StreamID { return rdb.StreamID{Ms: id.Ms, Seq: id.Seq} }

func modelID(id rdb.StreamID) stream.ID { return stream.ID{Ms: id.Ms, Seq: id.Seq} }

// Restore stores v as key (database db), which must not exist: RESTORE's
// part for a stream (the caller sets the expiry).
func Restore(tx *tiering.Tx, db int, key []byte, v *rdb.Stream) error {
	var bytes int64
	for _, n := range v.Nodes {
		for _, e := range n.Entries {
			if !e.Deleted {
				for _, f := range e.Fields {
					bytes += int64(len(f))
				}
			}
		}
	}
	l := stream.NewLoader(codec.StreamMeta{Last: modelID(v.Last), First: modelID(v.First),
		MaxDeleted: modelID(v.MaxDeleted), EntriesAdded: v.EntriesAdded}, int64(v.Length), bytes, nil)
	for _, n := range v.Nodes {
		var live, deleted int64
		for _, e := range n.Entries {
			if e.Deleted {
				deleted++
			} else {
				live++
			}
		}
		if live == 0 {
			continue // Redis frees a node whose entries are all deleted
		}
		last := n.Entries[len(n.Entries)-1].ID
		l.LoadNodeLP(modelID(n.Master), n.Fields, live, deleted, modelID(last), int64(n.Bytes))
	}
	for _, n := range v.Nodes {
		for _, e := range n.Entries {
			if !e.Deleted {
				l.LoadEntry(modelID(e.ID), e.Fields)
			}
		}
	}
	for _, g := range v.Groups {
		l.LoadGroup(g.Name, modelID(g.LastID), g.EntriesRead)
	}
	for _, g := range v.Groups {
		for _, c := range g.Consumers {
			if err := l.LoadConsumer(g.Name, c.Name, c.SeenTime); err != nil {
				return err
			}
		}
		for _, p := range g.PEL {
			err := l.LoadPending(g.Name, modelID(p.ID), p.DeliveryTime, int64(p.DeliveryCount), g.Consumers[p.Consumer].Name)
			if err != nil {
				return err
			}
		}
	}
	m, err := l.Done(int64(v.Length), nil)
	if err != nil {
		return err
	}
	s, err := tx.OpenStream(db, key, true)
	if err != nil {
		return err
	}
	s.Replace(m)
	return s.Close()
}
