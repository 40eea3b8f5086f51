package sink

import (
	"errors"
)

type sqlxTx = txn

func asFatal(err error, f *interface{ Fatal() bool }) bool { return errors.As(err, f) }
