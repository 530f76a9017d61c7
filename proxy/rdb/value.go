package rdb

import "errors"

// DecodeValue decodes one value of RDB object type typ from the start of b
// (no footer: the value alone, as an RDB file holds it after its key) as
// Decode does, validating compact encodings the same way. Readers of whole
// RDB files use it for the values they hold in memory: compact blobs and
// single quicklist nodes.
func DecodeValue(typ byte, b []byte) (*Object, error) {
	c := &cursor{b: b}
	o, err := c.object(typ)
	if err != nil {
		if !errors.Is(err, ErrBadFormat) {
			err = wrapBad(err.Error())
		}
		return nil, err
	}
	return o, nil
}
