package streams

import (
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/proxy/rdbfile"
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

// Restore stores v as key (database db), which must not exist: RESTORE's
// part for a stream (the caller sets the expiry). v is validated
// (rdb.DecodeValue), so its model is built as an RDB file's is.
func Restore(tx *tiering.Tx, db int, key []byte, v *rdb.Stream) error {
	m, err := rdbfile.StreamModel(v, false)
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
